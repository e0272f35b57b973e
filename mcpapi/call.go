package mcpapi

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/opentool-host/opentool-host/host"
)

// handler returns the tools/call handler of tool name: a unary function
// goes through host.Call, a streaming one through host.StreamCall with
// its items collected.
func (s *Server) handler(name string) mcp.ToolHandler {
	return func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		args := []byte(req.Params.Arguments)
		if f := s.h.Function(name); f != nil && f.IsStream() {
			return s.collect(ctx, req, name, args)
		}
		res, err := s.h.Call(ctx, name, args)
		if err != nil {
			return toolError(err)
		}
		return result(res), nil
	}
}

// collect runs streaming function name and returns its items as
// {"items":[...]}, sending one progress notification per item when the
// client asked for progress.
func (s *Server) collect(ctx context.Context, req *mcp.CallToolRequest, name string, args []byte) (*mcp.CallToolResult, error) {
	token := req.Params.GetProgressToken()
	var buf bytes.Buffer
	buf.WriteString(`{"items":[`)
	n := 0
	err := s.h.StreamCall(ctx, name, args, func(item []byte) error {
		if int64(buf.Len()+len(item)) > s.cfg.MaxResultBytes {
			return &host.Error{Kind: host.KindResultRejected, Function: name, Message: fmt.Sprintf("the stream's items add up to more than the limit of %d bytes", s.cfg.MaxResultBytes)}
		}
		if n > 0 {
			buf.WriteByte(',')
		}
		buf.Write(item)
		n++
		if token != nil && req.Session != nil {
			// Progress is advisory: a client that went away ends the
			// call through ctx, not through this error.
			_ = req.Session.NotifyProgress(ctx, &mcp.ProgressNotificationParams{ProgressToken: token, Progress: float64(n), Message: string(item)})
		}
		return nil
	})
	if err != nil {
		return toolError(err)
	}
	buf.WriteString(`]}`)
	return result(buf.Bytes()), nil
}

// result is the tools/call result of a function's JSON result object:
// structuredContent plus a text block with the same JSON (MCP 2025-06-18,
// "Structured Content").
func result(obj []byte) *mcp.CallToolResult {
	return &mcp.CallToolResult{
		Content:           []mcp.Content{&mcp.TextContent{Text: string(obj)}},
		StructuredContent: json.RawMessage(obj),
	}
}

// toolError translates a call's error, the one place that does: an
// unknown function is the JSON-RPC error -32602 the SDK gives for unknown
// tools; every other failure, the tool's own error included, is a result
// with isError so that the model sees the reason (MCP "Error Handling":
// tool execution errors are reported in the result).
func toolError(err error) (*mcp.CallToolResult, error) {
	var he *host.Error
	if !errors.As(err, &he) {
		return errorResult("the call failed: " + err.Error()), nil
	}
	switch he.Kind {
	case host.KindNotFound:
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: fmt.Sprintf("unknown tool %q", he.Function)}
	case host.KindTool:
		return errorResult(fmt.Sprintf("error %d: %s", he.Code, he.Message)), nil
	}
	return errorResult(he.Message), nil
}

// errorResult is a result with isError and one text block.
func errorResult(text string) *mcp.CallToolResult {
	return &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: text}}}
}
