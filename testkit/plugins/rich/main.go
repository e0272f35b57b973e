// Command rich is a Go SDK plugin that says what MCP says beyond a result
// object (plugin protocol 3): "picture" returns content blocks (text and
// an image, pluginsdk.ResultFunc); "count" reports progress and log
// messages while it counts (pluginsdk.Progress, pluginsdk.Log); "confirm"
// asks the MCP client that called it (pluginsdk.Elicit); "ticks" streams
// items with progress between them.
package main

import (
	"context"
	"fmt"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/opentool-host/opentool-host/pluginsdk"
	"github.com/opentool-host/opentool-host/protocol/opentool"
)

type pictureIn struct {
	Caption string `json:"caption" jsonschema:"description=The caption"`
}

type countIn struct {
	N int `json:"n" jsonschema:"description=How far to count"`
}

type countOut struct {
	N int `json:"n"`
}

type confirmIn struct {
	Question string `json:"question" jsonschema:"description=What to ask"`
}

type confirmOut struct {
	Action string `json:"action"`
	Answer string `json:"answer"`
}

// png is a 1x1 PNG.
var png = []byte{0x89, 'P', 'N', 'G', '\r', '\n', 0x1a, '\n', 0, 0, 0, 0x0d, 'I', 'H', 'D', 'R', 0, 0, 0, 1, 0, 0, 0, 1, 8, 6, 0, 0, 0, 0x1f, 0x15, 0xc4, 0x89}

func picture(_ context.Context, in pictureIn) (*mcp.CallToolResult, error) {
	return &mcp.CallToolResult{Content: []mcp.Content{
		&mcp.TextContent{Text: in.Caption},
		&mcp.ImageContent{Data: png, MIMEType: "image/png", Annotations: &mcp.Annotations{Audience: []mcp.Role{"user"}}},
	}}, nil
}

func count(ctx context.Context, in countIn) (countOut, error) {
	for i := 1; i <= in.N; i++ {
		if err := pluginsdk.Log(ctx, "info", "count", fmt.Sprintf("at %d", i)); err != nil {
			return countOut{}, err
		}
		if err := pluginsdk.Progress(ctx, float64(i), float64(in.N), fmt.Sprintf("%d of %d", i, in.N)); err != nil {
			return countOut{}, err
		}
		time.Sleep(time.Millisecond)
	}
	return countOut{N: in.N}, nil
}

func ticks(ctx context.Context, in countIn, send func(countOut) error) error {
	for i := 1; i <= in.N; i++ {
		if err := pluginsdk.Progress(ctx, float64(i), float64(in.N), fmt.Sprintf("tick %d", i)); err != nil {
			return err
		}
		if err := send(countOut{N: i}); err != nil {
			return err
		}
	}
	return nil
}

func confirm(ctx context.Context, in confirmIn) (confirmOut, error) {
	res, err := pluginsdk.Elicit(ctx, &mcp.ElicitParams{Message: in.Question, RequestedSchema: map[string]any{
		"type": "object", "properties": map[string]any{"answer": map[string]any{"type": "string"}}}})
	if err != nil {
		return confirmOut{}, pluginsdk.ToolFailure("elicitation/create: %v", err)
	}
	answer, _ := res.Content["answer"].(string)
	return confirmOut{Action: res.Action, Answer: answer}, nil
}

func main() {
	pluginsdk.Serve(pluginsdk.NewToolkit(opentool.Info{Title: "Rich", Version: "1.0.0"}).Add(
		pluginsdk.ResultFunc("picture", "Returns its caption and an image.", picture),
		pluginsdk.Func("count", "Counts to n, reporting progress and logging each step.", count),
		pluginsdk.Func("confirm", "Asks the MCP client's user a question.", confirm),
		pluginsdk.StreamFunc("ticks", "Streams n ticks, reporting progress before each.", ticks),
	))
}
