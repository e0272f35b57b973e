package mcpadapter

import (
	"encoding/json"
	"math/rand/v2"
	"os"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/opentool-host/opentool-host/protocol/opentool"
)

// obj is a JSON object literal.
type obj = map[string]any

// tool is an MCP tool with inputSchema in.
func tool(name string, in obj) *mcp.Tool { return &mcp.Tool{Name: name, InputSchema: in} }

// props is an object schema with the given properties.
func props(p obj, required ...any) obj {
	s := obj{"type": "object", "properties": p}
	if len(required) > 0 {
		s["required"] = required
	}
	return s
}

// mustParse converts tools and checks that the document passes
// opentool.Parse, which the host applies to every Load.
func mustParse(t *testing.T, tools []*mcp.Tool) converted {
	t.Helper()
	c := convert(serverInfo{name: "srv"}, tools)
	raw, err := json.Marshal(c.doc)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := opentool.Parse(raw); err != nil {
		t.Fatalf("converted document does not parse: %v\n%s", err, raw)
	}
	return c
}

// byName indexes the document's functions.
func byName(c converted) map[string]opentool.Function {
	m := map[string]opentool.Function{}
	for _, f := range c.doc.Functions {
		m[f.Name] = f
	}
	return m
}

func TestConvertNames(t *testing.T) {
	long := strings.Repeat("a", 80)
	tools := []*mcp.Tool{
		tool("ns.tool/with spaces", nil),
		tool("ns_tool_with_spaces", nil), // valid: keeps its name
		tool("ns_tool_with_spaces_2", nil),
		tool("greet (structured)", nil),
		tool("café", nil),
		tool("", nil),
		tool(long, nil),
		tool(long+"b", nil),
	}
	c := mustParse(t, tools)
	want := map[string]string{
		"ns_tool_with_spaces":   "ns_tool_with_spaces",
		"ns_tool_with_spaces_2": "ns_tool_with_spaces_2",
		"ns_tool_with_spaces_3": "ns.tool/with spaces",
		"greet__structured_":    "greet (structured)",
		"caf__":                 "café", // é is two bytes
		"tool":                  "",
		long[:64]:               long,
		long[:62] + "_2":        long + "b",
	}
	if !mapsEqual(c.names, want) {
		t.Fatalf("names =\n%v\nwant\n%v", c.names, want)
	}
	// Deterministic: the order the server lists them in does not matter.
	for range 20 {
		shuffled := slices.Clone(tools)
		rand.Shuffle(len(shuffled), func(i, j int) { shuffled[i], shuffled[j] = shuffled[j], shuffled[i] })
		if got := convert(serverInfo{name: "srv"}, shuffled); !mapsEqual(got.names, want) {
			t.Fatalf("names depend on the order: %v", got.names)
		}
	}
}

func mapsEqual(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if w, ok := b[k]; !ok || w != v {
			return false
		}
	}
	return true
}

func TestConvertSchemas(t *testing.T) {
	destructive, closed := true, false
	search := &mcp.Tool{
		Name: "search", Title: "Search", Description: "Finds things.",
		Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true, IdempotentHint: true, OpenWorldHint: &closed},
		Icons:       []mcp.Icon{{Source: "https://example.com/s.png", MIMEType: "image/png", Sizes: []string{"48x48"}}},
		Meta:        mcp.Meta{"vendor/x": obj{"a": 1.0}},
		InputSchema: obj{
			"$schema": "https://json-schema.org/draft/2020-12/schema",
			"type":    "object", "additionalProperties": false, "required": []any{"q"},
			"properties": obj{
				"q":     obj{"type": "string", "description": "the query", "minLength": 1.0},
				"limit": obj{"type": []any{"integer", "null"}, "default": 10.0},
				"mode":  obj{"enum": []any{"fast", "exact"}},
				"kind":  obj{"const": "doc"},
				"opts":  obj{"$ref": "#/$defs/Opts", "description": "options"},
				"tags":  obj{"type": "array", "items": obj{"type": "string"}},
				"near":  obj{"anyOf": []any{obj{"$ref": "#/definitions/Point"}, obj{"type": "null"}}},
			},
			"$defs":       obj{"Opts": props(obj{"exact": obj{"type": "boolean"}, "lang": obj{"type": "string", "enum": []any{"en", "de"}}}, "exact")},
			"definitions": obj{"Point": props(obj{"x": obj{"type": "number"}, "y": obj{"type": "number"}}, "x", "y")},
		},
		OutputSchema: props(obj{"hits": obj{"type": "array", "items": obj{"type": "string"}}}, "hits"),
	}
	rm := &mcp.Tool{Name: "rm", Description: "Removes.", Annotations: &mcp.ToolAnnotations{Title: "Remove", DestructiveHint: &destructive}, InputSchema: obj{"type": "object"}}
	c := mustParse(t, []*mcp.Tool{search, rm, {Name: "bare", InputSchema: obj{}}})
	fns := byName(c)
	s := fns["search"]
	if s.Description != "Search. Finds things. (read-only, idempotent)" || s.AdditionalParameters == nil || *s.AdditionalParameters {
		t.Fatalf("search = %+v", s)
	}
	params := map[string]opentool.Parameter{}
	var order []string
	for _, p := range s.Parameters {
		params[p.Name] = p
		order = append(order, p.Name)
	}
	if want := []string{"kind", "limit", "mode", "near", "opts", "q", "tags"}; !slices.Equal(order, want) {
		t.Fatalf("parameters %v, want %v (name order)", order, want)
	}
	checks := []struct {
		name string
		ok   bool
	}{
		{"q required, described, minLength kept", params["q"].Required && params["q"].Description == "the query" && params["q"].Schema.Type == "string" && string(params["q"].Schema.Extra["minLength"]) == "1"},
		{"limit nullable integer", params["limit"].Schema.Type == "integer" && !params["limit"].Required && string(params["limit"].Schema.Extra["default"]) == "10"},
		{"mode enum typed", params["mode"].Schema.Type == "string" && len(params["mode"].Schema.Enum) == 2},
		{"kind const", params["kind"].Schema.Type == "string" && len(params["kind"].Schema.Enum) == 1},
		{"opts $defs inlined", params["opts"].Schema.Type == "object" && params["opts"].Schema.Properties["exact"] != nil && params["opts"].Description == "options" && slices.Equal(params["opts"].Schema.Required, []string{"exact"})},
		{"near definitions via anyOf", params["near"].Schema.Type == "object" && params["near"].Schema.Properties["x"].Type == "number"},
		{"tags items", params["tags"].Schema.Items != nil && params["tags"].Schema.Items.Type == "string"},
		{"return from outputSchema", s.Return != nil && s.Return.Schema.Properties["hits"] != nil},
		{"title, annotations, icons, _meta kept", s.Title == "Search" && *s.Annotations.ReadOnlyHint && *s.Annotations.IdempotentHint && !*s.Annotations.OpenWorldHint &&
			s.Annotations.DestructiveHint == nil && len(s.Icons) == 1 && s.Icons[0].Sizes[0] == "48x48" && string(s.Meta) == `{"vendor/x":{"a":1}}`},
		{"rm annotations.title and destructive", fns["rm"].Description == "Remove. Removes. (destructive)" && *fns["rm"].Annotations.DestructiveHint && fns["rm"].Annotations.Title == "Remove"},
		{"rm allows more parameters", fns["rm"].AdditionalParameters == nil && len(fns["rm"].Parameters) == 0},
		{"bare {} is an object without parameters", fns["bare"].Description == "MCP tool bare" && fns["bare"].Parameters != nil && string(fns["bare"].InputSchema) == `{"type":"object"}`},
	}
	for _, ch := range checks {
		if !ch.ok {
			t.Errorf("%s: %+v", ch.name, s)
		}
	}
	// The schemas are kept as declared.
	sameJSON(t, s.InputSchema, search.InputSchema)
	sameJSON(t, s.OutputSchema, search.OutputSchema)
	if len(c.dropped) != 0 || len(c.partial) != 2 || !strings.Contains(c.partial[0].Reason, "inputSchema.properties.limit.type: null") ||
		!strings.Contains(c.partial[1].Reason, "inputSchema.properties.near.anyOf: null") {
		t.Errorf("dropped %v, partial %v", c.dropped, c.partial)
	}
}

// sameJSON fails unless raw is the JSON of want (key order aside).
func sameJSON(t *testing.T, raw json.RawMessage, want any) {
	t.Helper()
	var a, b any
	wb, _ := json.Marshal(want)
	if err := json.Unmarshal(raw, &a); err != nil {
		t.Fatalf("%s: %v", raw, err)
	}
	_ = json.Unmarshal(wb, &b)
	if !reflect.DeepEqual(a, b) {
		t.Errorf("got  %s\nwant %s", raw, wb)
	}
}

// TestConvertServesEverySchema: a tool whose schemas OpenTool cannot
// express is served with them as declared and a projection; the log names
// what the projection leaves out (issue 22). Only an input schema that is
// not an object schema refuses a tool.
func TestConvertServesEverySchema(t *testing.T) {
	cases := []struct {
		name string
		tool *mcp.Tool
		lost string // in the logged reason
	}{
		{"allOf required", tool("t", props(obj{"x": obj{"allOf": []any{obj{"type": "string"}}}}, "x")), "inputSchema.properties.x.allOf"},
		{"oneOf optional", tool("t", props(obj{"ok": obj{"type": "string"}, "y": obj{"oneOf": []any{obj{"type": "string"}, obj{"type": "number"}}}})), "inputSchema.properties.y.oneOf"},
		{"several types", tool("t", props(obj{"u": obj{"type": []any{"boolean", "string"}}}, "u")), `inputSchema.properties.u.type: type ["boolean","string"] projected as "boolean"`},
		{"any", tool("t", props(obj{"a": obj{}})), "inputSchema.properties.a: no type"},
		{"tuple items", tool("t", props(obj{"p": obj{"type": "array", "items": []any{obj{"type": "number"}}}}, "p")), "inputSchema.properties.p.items"},
		{"array without items", tool("t", props(obj{"p": obj{"type": "array"}}, "p")), "inputSchema.properties.p.items: absent"},
		{"not, nested", tool("t", props(obj{"o": props(obj{"n": obj{"type": "string", "not": obj{"const": "x"}}})}, "o")), "inputSchema.properties.o.properties.n.not"},
		{"recursive $ref", tool("t", obj{"type": "object", "required": []any{"n"}, "properties": obj{"n": obj{"$ref": "#/$defs/Node"}}, "$defs": obj{"Node": props(obj{"next": obj{"$ref": "#/$defs/Node"}})}}), "recursive reference"},
		{"remote $ref", tool("t", props(obj{"r": obj{"$ref": "https://example.com/s.json"}}, "r")), "inputSchema.properties.r.$ref"},
		{"allOf at the top", tool("t", obj{"type": "object", "allOf": []any{props(obj{"a": obj{"type": "string"}})}, "properties": obj{"b": obj{"type": "string"}}}), "inputSchema.allOf"},
		{"enum of the wrong type", tool("t", props(obj{"e": obj{"type": "integer", "enum": []any{"a"}}}, "e")), "inputSchema.properties.e.enum"},
		{"empty property name", tool("t", props(obj{"": obj{"type": "string"}})), `inputSchema.properties[""]`},
		{"outputSchema", &mcp.Tool{Name: "t", InputSchema: obj{"type": "object"}, OutputSchema: props(obj{"x": obj{"not": obj{}}})}, "outputSchema.properties.x.not"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			ok := tool("fine", obj{"type": "object"})
			c := mustParse(t, []*mcp.Tool{tc.tool, ok})
			fns := byName(c)
			f, served := fns["t"]
			if !served || len(c.dropped) != 0 || len(c.doc.Refused) != 0 {
				t.Fatalf("served = %v, dropped %v", served, c.dropped)
			}
			sameJSON(t, f.InputSchema, tc.tool.InputSchema)
			if tc.tool.OutputSchema != nil {
				sameJSON(t, f.OutputSchema, tc.tool.OutputSchema)
			}
			var reasons []string
			for _, p := range c.partial {
				if p.Tool == "t" {
					reasons = append(reasons, p.Reason)
				}
			}
			if !strings.Contains(strings.Join(reasons, "\n"), tc.lost) {
				t.Errorf("losses %q, want one with %q", reasons, tc.lost)
			}
		})
	}
	// An input schema that is not an object schema: refused, named in
	// the document's refused list, the other tools served.
	c := mustParse(t, []*mcp.Tool{tool("t", obj{"type": "string"}), tool("fine", obj{"type": "object"})})
	want := `MCP tool "t": inputSchema.type: "string": the arguments of a call are an object`
	if len(c.doc.Functions) != 1 || len(c.dropped) != 1 || c.dropped[0].Reason != want ||
		len(c.doc.Refused) != 1 || c.doc.Refused[0] != (opentool.Refusal{Kind: "tool", Name: "t", Reason: want}) {
		t.Errorf("functions %d, dropped %v, refused %v", len(c.doc.Functions), c.dropped, c.doc.Refused)
	}
}

func TestConvertReturn(t *testing.T) {
	c := mustParse(t, []*mcp.Tool{
		{Name: "arr", InputSchema: obj{"type": "object"}, OutputSchema: obj{"type": "array", "items": obj{"type": "integer"}}},
		{Name: "none", InputSchema: obj{"type": "object"}},
	})
	fns := byName(c)
	r := fns["arr"].Return
	if r == nil || r.Schema.Type != "object" || r.Schema.Properties["result"].Type != "array" || !slices.Equal(r.Schema.Required, []string{"result"}) {
		t.Fatalf("non-object outputSchema: return = %+v", r)
	}
	if fns["none"].Return != nil {
		t.Fatalf("no outputSchema: return = %+v", fns["none"].Return)
	}
}

// TestConvertEverythingServer converts the tool list of the reference
// "everything" servers (testdata/everything-tools.json: the TypeScript
// server's zod-generated schemas and the Go SDK's) and checks the
// document passes opentool.Parse.
func TestConvertEverythingServer(t *testing.T) {
	b, err := os.ReadFile("testdata/everything-tools.json")
	if err != nil {
		t.Fatal(err)
	}
	var list mcp.ListToolsResult
	if err := json.Unmarshal(b, &list); err != nil {
		t.Fatal(err)
	}
	c := mustParse(t, list.Tools)
	fns := byName(c)
	if len(fns)+len(c.dropped) != len(list.Tools) {
		t.Fatalf("%d functions + %d dropped != %d tools", len(fns), len(c.dropped), len(list.Tools))
	}
	for name, check := range map[string]func(opentool.Function) bool{
		"echo":             func(f opentool.Function) bool { return f.Parameters[0].Name == "message" && f.Parameters[0].Required },
		"annotatedMessage": func(f opentool.Function) bool { return len(f.Parameters[1].Schema.Enum) == 3 },
		"structuredContent": func(f opentool.Function) bool {
			return f.Return != nil && f.Return.Schema.Properties["temperature"].Type == "number"
		},
		"zip":                  func(f opentool.Function) bool { return f.Parameters[0].Schema.Type == "object" },
		"greet__structured_":   func(f opentool.Function) bool { return f.Return != nil },
		"getResourceReference": func(f opentool.Function) bool { return f.Parameters[0].Schema.Type == "number" },
	} {
		f, ok := fns[name]
		if !ok {
			t.Errorf("%s not served (dropped %v)", name, c.dropped)
			continue
		}
		if !check(f) {
			b, _ := json.Marshal(f)
			t.Errorf("%s = %s", name, b)
		}
	}
	// Every tool is served, the unions with their schemas as declared.
	if len(c.dropped) != 0 || len(fns) != len(list.Tools) {
		t.Errorf("dropped = %v", c.dropped)
	}
	for _, f := range c.doc.Functions {
		for _, tl := range list.Tools {
			if c.names[f.Name] == tl.Name {
				sameJSON(t, f.InputSchema, tl.InputSchema)
			}
		}
	}
	if v := fns["setValue"]; len(v.InputSchema) == 0 || !strings.Contains(string(v.InputSchema), `"type":["string","number","boolean"]`) {
		t.Errorf("setValue inputSchema = %s", v.InputSchema)
	}
}
