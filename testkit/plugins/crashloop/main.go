// Command crashloop serves a valid plugin that exits 300 ms after start,
// every time: a crash loop.
package main

import (
	"context"
	"fmt"
	"os"
	"time"

	"github.com/opentool-host/opentool-host/pluginsdk"
	"github.com/opentool-host/opentool-host/protocol/opentool"
)

type crashloop struct{}

// Load implements pluginsdk.Tool: it returns the plugin's document.
func (crashloop) Load(context.Context) (*opentool.OpenTool, error) {
	return &opentool.OpenTool{
		OpenTool:  "1.1.0",
		Info:      opentool.Info{Title: "Crash loop", Version: "1.0.0"},
		Functions: []opentool.Function{{Name: "flaky", Description: "Never stays up.", Parameters: []opentool.Parameter{}}},
	}, nil
}

// Call implements pluginsdk.Tool.
func (crashloop) Call(context.Context, string, map[string]any) (map[string]any, error) {
	return map[string]any{}, nil
}

func main() {
	go func() {
		time.Sleep(300 * time.Millisecond)
		fmt.Fprintln(os.Stderr, "crashloop: giving up")
		os.Exit(1)
	}()
	pluginsdk.Serve(crashloop{})
}
