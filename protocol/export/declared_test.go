package export_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/opentool-host/opentool-host/protocol/export"
	"github.com/opentool-host/opentool-host/protocol/opentool"
)

// declaredDoc is a document with one function whose input schema is
// declared in full (an MCP server's), its parameters the projection.
func declaredDoc(t *testing.T, schema string) *opentool.OpenTool {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal([]byte(schema), &m); err != nil {
		t.Fatal(err)
	}
	params, additional, _, err := opentool.ProjectParameters(m)
	if err != nil {
		t.Fatal(err)
	}
	return &opentool.OpenTool{OpenTool: "1.1.0", Info: opentool.Info{Title: "t", Version: "1"}, Functions: []opentool.Function{
		{Name: "f", Description: "F.", Parameters: params, AdditionalParameters: additional, InputSchema: json.RawMessage(schema)},
	}}
}

// TestExportAsDeclared: the LLM formats carry the input schema as
// declared (issue 22).
func TestExportAsDeclared(t *testing.T) {
	schema := `{"type":"object","$defs":{"A":{"type":"object","properties":{"city":{"type":"string"}}}},
		"properties":{"flag":{"type":["boolean","string"]},"n":{"type":"integer","minimum":1,"maximum":100,"default":5},"home":{"$ref":"#/$defs/A"}},
		"allOf":[{"anyOf":[{"required":["flag"]},{"required":["n"]}]}]}`
	doc := declaredDoc(t, schema)
	for _, f := range []export.Format{export.OpenAI, export.Anthropic} {
		got, issues := exportOne(t, doc, f, false, "f")
		key := `"parameters":`
		if f == export.Anthropic {
			key = `"input_schema":`
		}
		if len(issues) != 0 || !strings.Contains(got, key+compactSorted(t, schema)) {
			t.Errorf("%s: %s", f, got)
		}
	}
	// Strict mode cannot take allOf: exported as declared, not strict.
	got, issues := exportOne(t, doc, export.OpenAI, true, "f")
	if len(issues) != 1 || issues[0].Reason != `the parameters object uses "allOf", which strict mode does not support` || !strings.Contains(got, `"strict":false`) ||
		!strings.Contains(got, compactSorted(t, schema)) {
		t.Errorf("strict with allOf: %s %v", got, issues)
	}
}

// TestStrictAdaptsDeclared: strict mode rewrites a declared schema as
// OpenAI requires: unions and references made nullable when optional,
// oneOf as anyOf, $defs closed too, keywords it does not take dropped.
func TestStrictAdaptsDeclared(t *testing.T) {
	doc := declaredDoc(t, `{"$schema":"https://json-schema.org/draft/2020-12/schema","type":"object","title":"Args",
		"$defs":{"A":{"type":"object","properties":{"city":{"type":"string","minLength":2}}}},
		"properties":{"flag":{"type":["boolean","string"],"default":true},"n":{"type":"integer","minimum":1,"maximum":100},
			"home":{"$ref":"#/$defs/A"},"id":{"type":"string","format":"uuid","pattern":"^[0-9a-f-]+$"},"uri":{"type":"string","format":"uri"},
			"pick":{"oneOf":[{"type":"string"},{"type":"integer"}]},"k":{"const":"x"}},
		"required":["n"]}`)
	got, issues := exportOne(t, doc, export.OpenAI, true, "f")
	want := compact(t, `{"type":"function","name":"f","description":"F.","parameters":{
		"$defs":{"A":{"additionalProperties":false,"properties":{"city":{"type":["string","null"]}},"required":["city"],"type":"object"}},
		"additionalProperties":false,
		"properties":{
			"flag":{"type":["boolean","string","null"]},
			"home":{"anyOf":[{"$ref":"#/$defs/A"},{"type":"null"}]},
			"id":{"format":"uuid","pattern":"^[0-9a-f-]+$","type":["string","null"]},
			"k":{"enum":["x",null]},
			"n":{"maximum":100,"minimum":1,"type":"integer"},
			"pick":{"anyOf":[{"type":"string"},{"type":"integer"},{"type":"null"}]},
			"uri":{"type":["string","null"]}},
		"required":["flag","home","id","k","n","pick","uri"],
		"type":"object"},"strict":true}`)
	if len(issues) != 0 || got != want {
		t.Errorf("strict export:\n got %s\nwant %s\nissues %v", got, want, issues)
	}
}

// compactSorted is the JSON text s as encoding/json writes a decoded
// map: compact, keys sorted.
func compactSorted(t *testing.T, s string) string {
	t.Helper()
	var v any
	if err := json.Unmarshal([]byte(s), &v); err != nil {
		t.Fatal(err)
	}
	b, _ := json.Marshal(v)
	return string(b)
}
