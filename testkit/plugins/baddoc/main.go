// Command baddoc is a plugin whose Load returns an invalid document: a
// function name with a space and an array schema without items.
package main

import (
	"context"

	"github.com/opentool-host/opentool-host/pluginsdk"
	"github.com/opentool-host/opentool-host/protocol/opentool"
)

type baddoc struct{}

// Load implements pluginsdk.Tool: it returns the plugin's document.
func (baddoc) Load(context.Context) (*opentool.OpenTool, error) {
	return &opentool.OpenTool{
		OpenTool: "1.1.0",
		Info:     opentool.Info{Title: "Bad", Version: "1.0.0"},
		Functions: []opentool.Function{{
			Name:        "bad name",
			Description: "invalid",
			Parameters:  []opentool.Parameter{{Name: "xs", Schema: &opentool.Schema{Type: opentool.TypeArray}, Required: true}},
		}},
	}, nil
}

// Call implements pluginsdk.Tool.
func (baddoc) Call(context.Context, string, map[string]any) (map[string]any, error) {
	return nil, pluginsdk.ToolFailure("never served")
}

func main() { pluginsdk.Serve(baddoc{}) }
