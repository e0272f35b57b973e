package mcpadapter_test

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/opentool-host/opentool-host/declared/mcpadapter"
	"github.com/opentool-host/opentool-host/frontend/mcpapi"
)

// metaServer is an MCP server with one tool, "meta", whose text is the
// _meta of the tools/call it got, as JSON.
func metaServer() *mcp.Server {
	s := mcp.NewServer(&mcp.Implementation{Name: "meta", Version: "1.0.0"}, nil)
	s.AddTool(&mcp.Tool{Name: "meta", InputSchema: map[string]any{"type": "object"}}, func(_ context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		b, err := json.Marshal(req.Params.Meta)
		if err != nil {
			return nil, err
		}
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: string(b)}}}, nil
	})
	return s
}

// TestCallerMetaReachesServer: the _meta a client of the host's /mcp
// gives its tools/call reaches the server behind the host (by URL) as
// the client gave it, in 2025-11-25 and in 2026-07-28: its own members
// (a namespaced key, a nested value) byte for byte, and a progressToken
// (the host's own in place of the caller's, which it maps back).
func TestCallerMetaReachesServer(t *testing.T) {
	srv := startRemote(t, metaServer)
	_, url := declaredHost(t, "meta", map[string]any{"url": srv.url()}, nil, nil, mcpapi.HTTPOptions{Sessions: true})
	for _, version := range []string{mcpadapter.ProtocolVersion, mcpadapter.SessionlessRevision} {
		t.Run(version, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), hostBound)
			defer cancel()
			client := mcp.NewClient(&mcp.Implementation{Name: "user", Version: "1"}, nil)
			cs, err := client.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: url + mcpapi.Path}, &mcp.ClientSessionOptions{ProtocolVersion: version})
			if err != nil {
				t.Fatal(err)
			}
			defer cs.Close()
			meta := mcp.Meta{"progressToken": "p1", "example.com/trace": "abc", "example.com/nested": map[string]any{"k": []any{1.0, "two"}}}
			res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "meta", Arguments: map[string]any{}, Meta: meta})
			if err != nil || res.IsError || len(res.Content) != 1 {
				t.Fatalf("meta: %+v, %v", res, err)
			}
			t.Logf("the server got _meta %s", res.Content[0].(*mcp.TextContent).Text)
			var got map[string]json.RawMessage
			if err := json.Unmarshal([]byte(res.Content[0].(*mcp.TextContent).Text), &got); err != nil {
				t.Fatal(err)
			}
			if string(got["example.com/trace"]) != `"abc"` || string(got["example.com/nested"]) != `{"k":[1,"two"]}` || got["progressToken"] == nil {
				t.Fatalf("the server got _meta %s, want the caller's members and a progressToken", res.Content[0].(*mcp.TextContent).Text)
			}
		})
	}
}
