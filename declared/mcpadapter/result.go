package mcpadapter

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"reflect"

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

// callResult is the MCP result the adapter passes on for res, the
// server's tools/call result (plugin protocol 3: MCP clients of the host
// receive it as it is): res itself, with its structuredContent as the
// server wrote it when a text block carries the same JSON (textTwin: the
// SDK decoded it into a map, losing member order and numbers beyond
// 2^53). An input-required result (a multi round-trip request asking
// the client for elicitation, sampling or roots, SEP-2322) is passed on
// when relayed is set (the call was made in SessionlessRevision for a
// caller of it, sessionless.go). Errors: a *pluginsdk.Error 500 for an
// input-required result otherwise: in 2025-11-25 servers send those
// requests during the call, and OpenTool callers cannot answer them.
func callResult(res *mcp.CallToolResult, relayed bool) (*mcp.CallToolResult, error) {
	if err := refuseInput(res, relayed); err != nil {
		return nil, err
	}
	if twin := textTwin(res); twin != nil {
		r := *res
		r.StructuredContent = json.RawMessage(twin)
		res = &r
	}
	return res, nil
}

// refuseInput is callResult's error for an input-required result res
// (relayed: as callResult's), else nil.
func refuseInput(res *mcp.CallToolResult, relayed bool) error {
	if res.NeedsInput() && !relayed {
		return pluginsdk.ToolFailure("the MCP tool asked the client for input (elicitation or sampling), which opentool-host cannot give")
	}
	return nil
}

// resultJSON is the OpenTool result (a JSON object) of a tools/call
// result, as OpenTool callers get it (pluginsdk.ProjectResult of
// callResult):
//
//   - isError: a *pluginsdk.Error 500 whose message is the text of the
//     text blocks, joined by newlines;
//   - input required: a *pluginsdk.Error 500 (callResult);
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
	r, err := callResult(res, false)
	if err != nil {
		return nil, err
	}
	return pluginsdk.ProjectResult(r)
}

// textTwin returns the text of res's one text block when it is the JSON
// of res.StructuredContent (equal once decoded), compacted; else nil
// (and at once when res has no structuredContent: nothing to stand in
// for, and a text such as "null" must not add one).
// The text keeps the server's member order and exact numbers, which the
// decoded structuredContent has lost.
func textTwin(res *mcp.CallToolResult) []byte {
	if res.StructuredContent == nil || len(res.Content) != 1 {
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
