package mcpadapter

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/opentool-host/opentool-host/opentool"
)

func TestConvertNamesSchemasAndFaults(t *testing.T) {
	destructive := true
	tools := []*mcp.Tool{
		{Name: "search", Title: "Search", Description: "Finds things.", Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true},
			InputSchema: map[string]any{
				"type": "object", "additionalProperties": false, "required": []any{"q"},
				"properties": map[string]any{
					"q":     map[string]any{"type": "string", "description": "the query"},
					"limit": map[string]any{"type": "integer"},
					"opts":  map[string]any{"$ref": "#/$defs/Opts"},
				},
				"$defs": map[string]any{"Opts": map[string]any{"type": "object", "properties": map[string]any{"exact": map[string]any{"type": "boolean"}}}},
			},
			OutputSchema: map[string]any{"type": "object", "properties": map[string]any{"hits": map[string]any{"type": "array", "items": map[string]any{"type": "string"}}}},
		},
		{Name: "ns.tool/with spaces", InputSchema: map[string]any{"type": "object"}},
		{Name: "ns_tool_with_spaces", InputSchema: map[string]any{"type": "object"}},
		{Name: "rm", Description: "Removes.", Annotations: &mcp.ToolAnnotations{DestructiveHint: &destructive}, InputSchema: map[string]any{"type": "object"}},
		{Name: "bad", InputSchema: map[string]any{"type": "object", "properties": map[string]any{"x": map[string]any{"allOf": []any{map[string]any{"type": "string"}}}}}},
		{Name: strings.Repeat("a", 80), InputSchema: map[string]any{"type": "object"}},
	}
	c := convert("srv", tools)
	raw, _ := json.Marshal(c.doc)
	if err := opentool.ValidateJSON(raw); err != nil {
		t.Fatalf("converted document invalid: %v\n%s", err, raw)
	}
	byName := map[string]opentool.Function{}
	for _, f := range c.doc.Functions {
		byName[f.Name] = f
	}
	s := byName["search"]
	if s.Description != "Search. Finds things. (read-only)" || len(s.Parameters) != 3 || s.AdditionalParameters == nil || *s.AdditionalParameters {
		t.Fatalf("search = %+v", s)
	}
	for _, p := range s.Parameters {
		if (p.Name == "q") != p.Required {
			t.Errorf("parameter %s required = %v", p.Name, p.Required)
		}
		if p.Name == "opts" && (p.Schema.Type != opentool.TypeObject || p.Schema.Properties["exact"] == nil) {
			t.Errorf("$ref not inlined: %+v", p.Schema)
		}
	}
	if s.Return == nil || s.Return.Schema.Properties["hits"] == nil {
		t.Errorf("return = %+v", s.Return)
	}
	// Sorted by MCP name: "ns.tool/with spaces" < "ns_tool_with_spaces",
	// so the renamed one keeps the plain name and the other gets "_2".
	if c.names["ns_tool_with_spaces"] != "ns.tool/with spaces" || c.names["ns_tool_with_spaces_2"] != "ns_tool_with_spaces" {
		t.Errorf("names = %v", c.names)
	}
	if !strings.Contains(byName["rm"].Description, "(destructive)") {
		t.Errorf("rm description = %q", byName["rm"].Description)
	}
	if why := c.dropped["bad"]; !strings.Contains(why, "inputSchema") || !strings.Contains(why, "allOf") || !strings.Contains(why, "properties.x") {
		t.Errorf("bad dropped because %q", why)
	}
	if _, ok := byName["bad"]; ok {
		t.Error("unconvertible tool served")
	}
	if _, ok := byName[strings.Repeat("a", 64)]; !ok {
		t.Errorf("long name not cut to 64: %v", c.names)
	}
}

func TestResultJSON(t *testing.T) {
	b, err := resultJSON(&mcp.CallToolResult{StructuredContent: map[string]any{"id": 1}, Content: []mcp.Content{&mcp.TextContent{Text: `{"id":1}`}}})
	if err != nil || string(b) != `{"id":1}` {
		t.Fatalf("structured = %s, %v", b, err)
	}
	b, err = resultJSON(&mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "a"}, &mcp.TextContent{Text: "b"}}})
	if err != nil || string(b) != `{"content":[{"type":"text","text":"a"},{"type":"text","text":"b"}],"text":"a\nb"}` {
		t.Fatalf("text = %s, %v", b, err)
	}
	if _, err := resultJSON(&mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: "nope"}}}); err == nil || !strings.Contains(err.Error(), "500") || !strings.Contains(err.Error(), "nope") {
		t.Fatalf("isError = %v", err)
	}
}
