package mcpapi

import (
	"encoding/json"
	"fmt"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/opentool-host/opentool-host/host"
	"github.com/opentool-host/opentool-host/opentool"
)

// toolOf returns the MCP tool definition of served function f (its $refs
// already inlined by the host). Errors: the parameters do not convert
// (opentool.ParametersJSONSchema); the function is then not listed.
func toolOf(fi host.FunctionInfo) (*mcp.Tool, error) {
	f := fi.Function
	in, err := opentool.ParametersJSONSchema(nil, f)
	if err != nil {
		return nil, fmt.Errorf("function %q: %w", f.Name, err)
	}
	t := &mcp.Tool{Name: f.Name, Description: f.Description, InputSchema: in}
	if out := outputSchema(f); out != nil {
		t.OutputSchema = out
	}
	return t, nil
}

// outputSchema is the MCP outputSchema of f: its return schema when that
// is an object (MCP requires type object), {"type":"object","properties":
// {"items":{"type":"array","items":ITEM}}} for a streaming function, nil
// otherwise.
func outputSchema(f *opentool.Function) map[string]any {
	if f.IsStream() {
		items := map[string]any{"type": "array"}
		if f.Stream.Data != nil && f.Stream.Data.Schema != nil {
			items["items"] = f.Stream.Data.Schema.JSONSchema()
		}
		return map[string]any{"type": "object", "properties": map[string]any{"items": items}, "required": []any{"items"}}
	}
	if f.Return == nil || f.Return.Schema == nil || f.Return.Schema.Type != opentool.TypeObject {
		return nil
	}
	return f.Return.Schema.JSONSchema()
}

// fingerprint is the JSON of t, to tell a changed definition from an
// unchanged one.
func fingerprint(t *mcp.Tool) string {
	b, _ := json.Marshal(t) // maps, strings and slices of them: cannot fail
	return string(b)
}
