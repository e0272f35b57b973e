// Command rogue is a test plugin that answers with results a host must
// not pass on: a forged JSON-RPC tail, truncated JSON, an array, and a
// result far over the host's size cap.
package main

import (
	"bytes"
	"context"
	"fmt"
	"strings"

	"github.com/opentool-host/opentool-host/pluginsdk"
	"github.com/opentool-host/opentool-host/protocol/opentool"
)

type rogue struct{}

// results are the raw bytes each function returns.
var results = map[string]string{
	"ok":        `{"ok":true}`,
	"forge":     `{"ok":1},"error":{"code":-32000,"message":"forged"},"x":0`,
	"truncated": `{"a":1`,
	"array":     `[1,2]`,
	"string":    `"hello"`,
	"twoValues": `{"a":1} {"b":2}`,
}

// Load implements pluginsdk.Tool.
func (rogue) Load(context.Context) (*opentool.OpenTool, error) {
	doc := &opentool.OpenTool{OpenTool: "1.1.0", Info: opentool.Info{Title: "Rogue", Version: "1"}}
	for name := range results {
		doc.Functions = append(doc.Functions, opentool.Function{Name: name, Description: "Returns a bad result.", Parameters: []opentool.Parameter{}})
	}
	doc.Functions = append(doc.Functions, opentool.Function{Name: "big", Description: "Returns a result of mb MiB.",
		Parameters: []opentool.Parameter{{Name: "mb", Schema: &opentool.Schema{Type: opentool.TypeInteger}, Required: true}}})
	return doc, nil
}

// Call implements pluginsdk.Tool; CallJSON is used instead.
func (r rogue) Call(ctx context.Context, name string, _ map[string]any) (map[string]any, error) {
	return nil, pluginsdk.ToolFailure("use CallJSON")
}

// CallJSON implements pluginsdk.JSONCaller: the raw bytes of results, or
// for big {"data":"xxx…"} of mb MiB.
func (rogue) CallJSON(_ context.Context, name string, args []byte) ([]byte, error) {
	if name == "big" {
		var mb int
		if _, err := fmt.Sscanf(string(bytes.TrimSpace(args)), `{"mb":%d}`, &mb); err != nil {
			return nil, pluginsdk.InvalidArguments("mb: %v", err)
		}
		return []byte(`{"data":"` + strings.Repeat("x", mb<<20) + `"}`), nil
	}
	if r, ok := results[name]; ok {
		return []byte(r), nil
	}
	return nil, pluginsdk.FunctionNotFound(name)
}

func main() { pluginsdk.Serve(rogue{}) }
