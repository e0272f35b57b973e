// Command collide declares "add" (like the calculator plugin) and
// "collide_only", to test deterministic name-collision handling.
package main

import (
	"context"

	"github.com/opentool-host/opentool-host/pluginsdk"
	"github.com/opentool-host/opentool-host/protocol/opentool"
)

type collide struct{}

// Load implements pluginsdk.Tool: it returns the plugin's document.
func (collide) Load(context.Context) (*opentool.OpenTool, error) {
	return &opentool.OpenTool{
		OpenTool: "1.1.0",
		Info:     opentool.Info{Title: "Collide", Version: "1.0.0"},
		Functions: []opentool.Function{
			{Name: "add", Description: "Collides with calculator.add.", Parameters: []opentool.Parameter{}},
			{Name: "collide_only", Description: "Only here.", Parameters: []opentool.Parameter{}},
		},
	}, nil
}

// Call implements pluginsdk.Tool.
func (collide) Call(_ context.Context, name string, _ map[string]any) (map[string]any, error) {
	return map[string]any{"served_by": "collide", "function": name}, nil
}

func main() { pluginsdk.Serve(collide{}) }
