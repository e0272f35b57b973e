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
// the function's input schema as its plugin declares it
// (opentool.InputJSONSchema: Function.InputSchema, else the parameters
// with their extra keywords, as export and argcheck build it),
// outputSchema is outputSchema's; title, annotations, icons and _meta are
// the function's. Errors: the parameters do not convert; the function is
// then not listed.
func toolOf(fi host.FunctionInfo) (*mcp.Tool, error) {
	f := fi.Function
	in := json.RawMessage(f.InputSchema)
	if len(in) == 0 {
		js, err := opentool.ParametersJSONSchema(nil, f)
		if err != nil {
			return nil, fmt.Errorf("function %q: %w", f.Name, err)
		}
		in = raw(js)
	}
	t := &mcp.Tool{Name: f.Name, Description: f.Description, InputSchema: in, Title: f.Title}
	if out := outputSchema(f); out != nil {
		t.OutputSchema = out
	}
	if a := f.Annotations; a != nil {
		t.Annotations = &mcp.ToolAnnotations{Title: a.Title, DestructiveHint: a.DestructiveHint, OpenWorldHint: a.OpenWorldHint,
			ReadOnlyHint: a.ReadOnlyHint != nil && *a.ReadOnlyHint, IdempotentHint: a.IdempotentHint != nil && *a.IdempotentHint}
	}
	for _, ic := range f.Icons {
		t.Icons = append(t.Icons, mcp.Icon{Source: ic.Src, MIMEType: ic.MIMEType, Sizes: ic.Sizes, Theme: mcp.IconTheme(ic.Theme)})
	}
	if len(f.Meta) > 0 {
		if err := json.Unmarshal(f.Meta, &t.Meta); err != nil {
			return nil, fmt.Errorf("function %q: _meta: %w", f.Name, err)
		}
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
// object: f's OutputSchema as declared when it has one; else f's return
// schema when it is an object schema (OpenTool documents such as the
// reference mock's often describe only the value, e.g. an integer, not
// the result object; those get none); for a streaming function
// {"type":"object","properties":{"items":{"type":"array","items":ITEM}},
// "required":["items"]}, ITEM being the item schema when that is an
// object schema and left out otherwise; nil in every other case.
func outputSchema(f *opentool.Function) json.RawMessage {
	if len(f.OutputSchema) > 0 {
		return json.RawMessage(f.OutputSchema)
	}
	if f.IsStream() {
		items := map[string]any{"type": opentool.TypeArray}
		if f.Stream.Data != nil && isObject(f.Stream.Data.Schema) {
			items["items"] = f.Stream.Data.Schema.JSONSchema()
		}
		return raw(map[string]any{"type": opentool.TypeObject, "properties": map[string]any{"items": items}, "required": []any{"items"}})
	}
	if f.Return == nil || !isObject(f.Return.Schema) {
		return nil
	}
	return raw(f.Return.Schema.JSONSchema())
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
