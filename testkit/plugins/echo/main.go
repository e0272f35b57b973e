// Command echo is the benchmark plugin: "echo" returns {"echo": ARGS} with
// ARGS the raw arguments, through pluginsdk.JSONCaller (no map decoding),
// so it measures the host and the wire, not the tool.
package main

import (
	"context"

	"github.com/opentool-host/opentool-host/pluginsdk"
	"github.com/opentool-host/opentool-host/protocol/opentool"
)

type echo struct{}

var (
	_ pluginsdk.Tool       = echo{}
	_ pluginsdk.JSONCaller = echo{}
)

// Load implements pluginsdk.Tool: it returns the plugin's document.
func (echo) Load(context.Context) (*opentool.OpenTool, error) {
	return &opentool.OpenTool{
		OpenTool: "1.1.0",
		Info:     opentool.Info{Title: "Echo", Version: "1.0.0"},
		Functions: []opentool.Function{{
			Name:        "echo",
			Description: "Returns its arguments as {\"echo\": ARGS}.",
			Parameters:  []opentool.Parameter{{Name: "data", Schema: &opentool.Schema{Type: opentool.TypeString}}},
		}},
	}, nil
}

// Call implements pluginsdk.Tool.
func (echo) Call(_ context.Context, _ string, args map[string]any) (map[string]any, error) {
	return map[string]any{"echo": args}, nil
}

// CallJSON implements pluginsdk.JSONCaller.
func (echo) CallJSON(_ context.Context, name string, args []byte) ([]byte, error) {
	if name != "echo" {
		return nil, pluginsdk.FunctionNotFound(name)
	}
	if len(args) == 0 {
		args = []byte("{}")
	}
	out := make([]byte, 0, len(args)+10)
	out = append(out, `{"echo":`...)
	out = append(out, args...)
	return append(out, '}'), nil
}

func main() { pluginsdk.Serve(echo{}) }
