// Command taskfns is a Go SDK plugin whose functions say what they allow
// of tasks (pluginsdk.WithTaskSupport): "must" requires a task, "never"
// forbids one (both return "done"), "ask" requires one and elicits a name
// (two questions at once with "twice"), "broken" requires one and fails
// with a JSON-RPC error (pluginsdk.ProtocolError -32603).
package main

import (
	"context"
	"strings"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/opentool-host/opentool-host/pluginsdk"
	"github.com/opentool-host/opentool-host/protocol/opentool"
)

type none struct{}

type askIn struct {
	Twice bool `json:"twice,omitempty"`
}

func text(s string) *mcp.CallToolResult {
	return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: s}}}
}

func done(context.Context, none) (*mcp.CallToolResult, error) { return text("done"), nil }

// ask elicits a name (twice: two at once) and returns the names joined.
func ask(ctx context.Context, in askIn) (*mcp.CallToolResult, error) {
	n := 1
	if in.Twice {
		n = 2
	}
	names := make([]string, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			res, err := pluginsdk.Elicit(ctx, &mcp.ElicitParams{Message: "Your name?", RequestedSchema: map[string]any{
				"type": "object", "properties": map[string]any{"name": map[string]any{"type": "string"}}}})
			if err != nil {
				errs[i] = err
				return
			}
			names[i], _ = res.Content["name"].(string)
		})
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return nil, pluginsdk.ToolFailure("elicitation failed: %v", err)
		}
	}
	return text("hello " + strings.Join(names, " and ")), nil
}

func broken(context.Context, none) (*mcp.CallToolResult, error) {
	return nil, pluginsdk.ProtocolError(-32603, "broken on purpose")
}

func main() {
	pluginsdk.Serve(pluginsdk.NewToolkit(opentool.Info{Title: "taskfns", Version: "1.0.0"}).Add(
		pluginsdk.ResultFunc("must", "Requires a task.", done).WithTaskSupport(pluginsdk.TaskSupportRequired),
		pluginsdk.ResultFunc("never", "Forbids a task.", done).WithTaskSupport(pluginsdk.TaskSupportForbidden),
		pluginsdk.ResultFunc("ask", "Requires a task and asks a name (two with twice).", ask).WithTaskSupport(pluginsdk.TaskSupportRequired),
		pluginsdk.ResultFunc("broken", "Requires a task and fails with a JSON-RPC error.", broken).WithTaskSupport(pluginsdk.TaskSupportRequired),
	))
}
