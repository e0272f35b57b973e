package mcpadapter

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"reflect"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/opentool-host/opentool-host/pluginsdk"
)

// This file maps a tools/call outcome (MCP "Tools", "Tool Result" and
// "Error Handling") to an OpenTool result or tool error.

// rawArgs is a call's arguments for tools/call: the JSON object as is;
// empty or null is {}.
func rawArgs(args []byte) json.RawMessage {
	t := bytes.TrimSpace(args)
	if len(t) == 0 || string(t) == "null" {
		return json.RawMessage("{}")
	}
	return json.RawMessage(args)
}

// resultJSON is the OpenTool result (a JSON object) of a tools/call
// result:
//
//   - isError: a *pluginsdk.Error 500 whose message is the text of the
//     text blocks, joined by newlines;
//   - input required (a multi round-trip result asking the client for
//     elicitation or sampling): a *pluginsdk.Error 500;
//   - structuredContent that is an object: that object, exactly as the
//     server sent it when a text block carries the same JSON (the SDK's
//     servers do, for clients of old revisions), else as decoded (numbers
//     beyond 2^53 then lose precision);
//   - structuredContent of another kind (SEP-2106 allows arrays and
//     primitives): {"result": VALUE};
//   - otherwise {"content": [BLOCKS], "text": TEXT}: the content blocks as
//     MCP defines them, and TEXT the text blocks joined by newlines (""
//     when there are none).
func resultJSON(res *mcp.CallToolResult) ([]byte, error) {
	text := joinedText(res.Content)
	switch {
	case res.IsError:
		if text == "" {
			text = "the MCP tool reported an error without text"
		}
		return nil, pluginsdk.ToolFailure("%s", text)
	case res.NeedsInput():
		return nil, pluginsdk.ToolFailure("the MCP tool asked the client for input (elicitation or sampling), which opentool-host cannot give")
	case res.StructuredContent != nil:
		return structuredJSON(res)
	}
	content := res.Content
	if content == nil {
		content = []mcp.Content{}
	}
	return json.Marshal(contentResult{Content: content, Text: text})
}

// contentResult is the OpenTool result of a tool result without
// structuredContent.
type contentResult struct {
	Content []mcp.Content `json:"content"`
	Text    string        `json:"text"`
}

// structuredJSON is the result of res's structuredContent: an object as
// is (textTwin's bytes when there is one), anything else wrapped as
// {"result": VALUE}.
func structuredJSON(res *mcp.CallToolResult) ([]byte, error) {
	b := textTwin(res)
	if b == nil {
		var err error
		if b, err = json.Marshal(res.StructuredContent); err != nil {
			return nil, pluginsdk.ToolFailure("structuredContent: %v", err)
		}
	}
	if _, ok := res.StructuredContent.(map[string]any); ok {
		return b, nil
	}
	return json.Marshal(map[string]json.RawMessage{"result": b})
}

// textTwin returns the text of res's one text block when it is the JSON
// of res.StructuredContent (equal once decoded), compacted; else nil.
// The text keeps the server's member order and exact numbers, which the
// decoded structuredContent has lost.
func textTwin(res *mcp.CallToolResult) []byte {
	if len(res.Content) != 1 {
		return nil
	}
	tc, ok := res.Content[0].(*mcp.TextContent)
	if !ok || !json.Valid([]byte(tc.Text)) {
		return nil
	}
	var v any
	if err := json.Unmarshal([]byte(tc.Text), &v); err != nil || !reflect.DeepEqual(v, res.StructuredContent) {
		return nil
	}
	var buf bytes.Buffer
	if err := json.Compact(&buf, []byte(tc.Text)); err != nil {
		return nil
	}
	return buf.Bytes()
}

// joinedText is the text of the text blocks, joined by newlines.
func joinedText(content []mcp.Content) string {
	var texts []string
	for _, c := range content {
		if tc, ok := c.(*mcp.TextContent); ok {
			texts = append(texts, tc.Text)
		}
	}
	return strings.Join(texts, "\n")
}

// callError maps the error of tools/call of MCP tool tool on server to
// a *pluginsdk.Error: JSON-RPC -32602 (invalid params) is 400 with the
// server's message; every other failure (another JSON-RPC error, the
// connection closed, ctx ended) is 500 naming the server.
func callError(ctx context.Context, server, tool string, err error) error {
	var je *jsonrpc.Error
	switch {
	case errors.As(err, &je) && je.Code == jsonrpc.CodeInvalidParams:
		return pluginsdk.InvalidArguments("%s", je.Message)
	case errors.As(err, &je):
		return pluginsdk.ToolFailure("MCP server %q: tool %q: %s (JSON-RPC error %d)", server, tool, je.Message, je.Code)
	case ctx.Err() != nil:
		return pluginsdk.ToolFailure("MCP server %q: tool %q: %v (notifications/cancelled sent)", server, tool, ctx.Err())
	case errors.Is(err, mcp.ErrConnectionClosed):
		return pluginsdk.ToolFailure("MCP server %q: tool %q: the connection closed (the server exited?): %v", server, tool, err)
	}
	return pluginsdk.ToolFailure("MCP server %q: tool %q: %v", server, tool, err)
}
