package mcpadapter

import (
	"context"
	"encoding/json"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// The multi-round-trip test server (FixtureEnv "mrtr"): an MCP server
// built on the SDK that speaks 2026-07-28, over stdio.
//
//	tool            behaviour
//	greet           input_required with inputRequests {"user_name":
//	                elicitation/create} and requestState "greet-1"; the
//	                retry with that state and an answer {"name": N}: text
//	                "hello N"; with another state: JSON-RPC -32602
//	                "tampered requestState"
//	needs_sampling  JSON-RPC -32021, data {"requiredCapabilities":
//	                {"sampling": {}}}, unless the request's own
//	                capabilities declare sampling: text "sampled"

// mrtrState is greet's requestState.
const mrtrState = "greet-1"

// newMRTRServer returns the multi-round-trip test server.
func newMRTRServer() *mcp.Server {
	srv := mcp.NewServer(&mcp.Implementation{Name: "mrtr", Version: "1.0.0"}, nil)
	empty := map[string]any{"type": "object"}
	srv.AddTool(&mcp.Tool{Name: "greet", InputSchema: empty}, func(_ context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		p := req.Params
		if p.RequestState == "" {
			return &mcp.CallToolResult{RequestState: mrtrState, InputRequests: mcp.InputRequestMap{
				"user_name": &mcp.ElicitParams{Message: "What is your name?", RequestedSchema: map[string]any{"type": "object", "properties": map[string]any{"name": map[string]any{"type": "string"}}}},
			}}, nil
		}
		if p.RequestState != mrtrState {
			return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: "tampered requestState"}
		}
		answer, _ := p.InputResponses["user_name"].(*mcp.ElicitResult)
		if answer == nil {
			return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: "no answer to user_name"}
		}
		name, _ := answer.Content["name"].(string)
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "hello " + name}}}, nil
	})
	srv.AddTool(&mcp.Tool{Name: "needs_sampling", InputSchema: empty}, func(_ context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		if caps := req.ClientCapabilities(); caps == nil || caps.Sampling == nil {
			data, _ := json.Marshal(map[string]any{"requiredCapabilities": map[string]any{"sampling": map[string]any{}}})
			return nil, &jsonrpc.Error{Code: -32021, Message: "the client did not declare sampling", Data: data}
		}
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "sampled"}}}, nil
	})
	return srv
}
