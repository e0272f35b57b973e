package mcpadapter

import (
	"encoding/json"
	"math/rand/v2"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/opentool-host/opentool-host/opentool"
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
	destructive := true
	search := &mcp.Tool{
		Name: "search", Title: "Search", Description: "Finds things.",
		Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true, IdempotentHint: true},
		InputSchema: obj{
			"$schema": "https://json-schema.org/draft/2020-12/schema",
			"type":    "object", "additionalProperties": false, "required": []any{"q"},
			"properties": obj{
				"q":     obj{"type": "string", "description": "the query", "minLength": 1},
				"limit": obj{"type": []any{"integer", "null"}, "default": 10},
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
		{"q required, described", params["q"].Required && params["q"].Description == "the query" && params["q"].Schema.Type == "string"},
		{"limit nullable integer", params["limit"].Schema.Type == "integer" && !params["limit"].Required},
		{"mode enum typed", params["mode"].Schema.Type == "string" && len(params["mode"].Schema.Enum) == 2},
		{"kind const", params["kind"].Schema.Type == "string" && len(params["kind"].Schema.Enum) == 1},
		{"opts $defs inlined", params["opts"].Schema.Type == "object" && params["opts"].Schema.Properties["exact"] != nil && params["opts"].Description == "options" && slices.Equal(params["opts"].Schema.Required, []string{"exact"})},
		{"near definitions via anyOf", params["near"].Schema.Type == "object" && params["near"].Schema.Properties["x"].Type == "number"},
		{"tags items", params["tags"].Schema.Items != nil && params["tags"].Schema.Items.Type == "string"},
		{"return from outputSchema", s.Return != nil && s.Return.Schema.Properties["hits"] != nil},
		{"rm annotations.title and destructive", fns["rm"].Description == "Remove. Removes. (destructive)"},
		{"rm allows more parameters", fns["rm"].AdditionalParameters == nil && len(fns["rm"].Parameters) == 0},
		{"bare {} is an object without parameters", fns["bare"].Description == "MCP tool bare" && fns["bare"].Parameters != nil},
	}
	for _, ch := range checks {
		if !ch.ok {
			t.Errorf("%s: %+v", ch.name, s)
		}
	}
	if len(c.dropped) != 0 || len(c.partial) != 0 {
		t.Errorf("dropped %v, partial %v", c.dropped, c.partial)
	}
}

func TestConvertFaultsWithPaths(t *testing.T) {
	cases := []struct {
		name    string
		tool    *mcp.Tool
		served  bool   // the function is served (without the part)
		reason  string // in the logged reason
		missing string // a parameter left out of a served function
	}{
		{"allOf required", tool("t", props(obj{"x": obj{"allOf": []any{obj{"type": "string"}}}}, "x")), false, "inputSchema.properties.x.allOf: not expressible in OpenTool: keyword not supported", ""},
		{"oneOf optional", tool("t", props(obj{"ok": obj{"type": "string"}, "y": obj{"oneOf": []any{obj{"type": "string"}, obj{"type": "number"}}}})), true, "inputSchema.properties.y.oneOf", "y"},
		{"several types optional", tool("t", props(obj{"ok": obj{"type": "string"}, "u": obj{"type": []any{"string", "number"}}})), true, "inputSchema.properties.u.type", "u"},
		{"any optional", tool("t", props(obj{"ok": obj{"type": "string"}, "a": obj{}})), true, "inputSchema.properties.a.type: not expressible in OpenTool: missing", "a"},
		{"tuple items", tool("t", props(obj{"p": obj{"type": "array", "items": []any{obj{"type": "number"}}}}, "p")), false, "inputSchema.properties.p.items", ""},
		{"array without items", tool("t", props(obj{"p": obj{"type": "array"}}, "p")), false, "inputSchema.properties.p.items", ""},
		{"not, nested", tool("t", props(obj{"o": props(obj{"n": obj{"type": "string", "not": obj{"const": "x"}}})}, "o")), false, "inputSchema.properties.o.properties.n.not", ""},
		{"recursive $ref", tool("t", obj{"type": "object", "required": []any{"n"}, "properties": obj{"n": obj{"$ref": "#/$defs/Node"}}, "$defs": obj{"Node": props(obj{"next": obj{"$ref": "#/$defs/Node"}})}}), false, "cycle", ""},
		{"remote $ref", tool("t", props(obj{"r": obj{"$ref": "https://example.com/s.json"}}, "r")), false, "inputSchema.properties.r.$ref", ""},
		{"input not an object", tool("t", obj{"type": "string"}), false, `inputSchema.type: "string"`, ""},
		{"allOf at the top", tool("t", obj{"type": "object", "allOf": []any{props(obj{"a": obj{"type": "string"}})}, "properties": obj{"b": obj{"type": "string"}}}), false, "inputSchema.allOf", ""},
		{"enum of the wrong type", tool("t", props(obj{"e": obj{"type": "integer", "enum": []any{"a"}}}, "e")), false, "inputSchema.properties.e.enum", ""},
		{"empty property name", tool("t", props(obj{"": obj{"type": "string"}})), false, `inputSchema.properties[""]`, ""},
		{"outputSchema", &mcp.Tool{Name: "t", InputSchema: obj{"type": "object"}, OutputSchema: props(obj{"x": obj{"not": obj{}}})}, true, "outputSchema.properties.x.not", ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			ok := tool("fine", obj{"type": "object"})
			c := mustParse(t, []*mcp.Tool{tc.tool, ok})
			fns := byName(c)
			if _, served := fns["t"]; served != tc.served {
				t.Fatalf("served = %v, want %v (dropped %v)", served, tc.served, c.dropped)
			}
			if _, ok := fns["fine"]; !ok {
				t.Fatal("the other tool is not served")
			}
			faults := c.dropped
			if tc.served {
				faults = c.partial
			}
			if len(faults) != 1 || faults[0].Tool != "t" || !strings.Contains(faults[0].Reason, tc.reason) || !strings.Contains(faults[0].Reason, `MCP tool "t"`) {
				t.Fatalf("faults = %+v, want one for t with %q", faults, tc.reason)
			}
			if tc.missing != "" {
				f := fns["t"]
				for _, p := range f.Parameters {
					if p.Name == tc.missing {
						t.Fatalf("unconvertible parameter %s served", p.Name)
					}
				}
				if len(f.Parameters) != 1 || f.AdditionalParameters != nil {
					t.Fatalf("function = %+v, want parameter ok and no additionalParameters (the left-out one may be given)", f)
				}
			}
		})
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
	if len(c.dropped) != 1 || c.dropped[0].Tool != "toggleLayout" {
		t.Errorf("dropped = %v, want toggleLayout (a union of objects)", c.dropped)
	}
	if len(c.partial) != 1 || !strings.Contains(c.partial[0].Reason, "inputSchema.properties.value") {
		t.Errorf("partial = %v, want setValue's value (a union of scalars)", c.partial)
	}
}
