package mcpapi

import (
	"encoding/json"
	"fmt"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/opentool-host/opentool-host/host"
	"github.com/opentool-host/opentool-host/opentool"
)

// toolOf returns the MCP tool definition (MCP "Tools", Tool) of served
// function fi, whose $refs the host has already inlined: inputSchema is
// opentool.ParametersJSONSchema (the conversion export and argcheck use),
// outputSchema is outputSchema's. Errors: the parameters do not convert;
// the function is then not listed.
func toolOf(fi host.FunctionInfo) (*mcp.Tool, error) {
	f := fi.Function
	in, err := opentool.ParametersJSONSchema(nil, f)
	if err != nil {
		return nil, fmt.Errorf("function %q: %w", f.Name, err)
	}
	t := &mcp.Tool{Name: f.Name, Description: f.Description, InputSchema: raw(in)}
	if out := outputSchema(f); out != nil {
		t.OutputSchema = raw(out)
	}
	return t, nil
}

// raw is schema encoded once, so that tools/list does not encode the
// maps again on every request.
func raw(schema map[string]any) json.RawMessage {
	// Schemas hold only what json.Unmarshal makes (JSONSchema), so
	// encoding cannot fail.
	b, _ := json.Marshal(schema)
	return b
}

// outputSchema is the MCP outputSchema of f, which must be of type
// object: f's return schema when it is an object schema (OpenTool
// documents such as the reference mock's often describe only the value,
// e.g. an integer, not the result object; those get none); for a
// streaming function {"type":"object","properties":{"items":{"type":
// "array","items":ITEM}},"required":["items"]}, ITEM being the item
// schema when that is an object schema and left out otherwise; nil in
// every other case.
func outputSchema(f *opentool.Function) map[string]any {
	if f.IsStream() {
		items := map[string]any{"type": opentool.TypeArray}
		if f.Stream.Data != nil && isObject(f.Stream.Data.Schema) {
			items["items"] = f.Stream.Data.Schema.JSONSchema()
		}
		return map[string]any{"type": opentool.TypeObject, "properties": map[string]any{"items": items}, "required": []any{"items"}}
	}
	if f.Return == nil || !isObject(f.Return.Schema) {
		return nil
	}
	return f.Return.Schema.JSONSchema()
}

// isObject reports whether s is an object schema.
func isObject(s *opentool.Schema) bool { return s != nil && s.Type == opentool.TypeObject }

// fingerprint is the JSON of t, to tell a changed definition from an
// unchanged one (maps marshal with sorted keys, so equal definitions
// give equal strings).
func fingerprint(t *mcp.Tool) string {
	b, _ := json.Marshal(t) // as raw: cannot fail
	return string(b)
}
