package opentool

import (
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"
)

// TestExtraKeywordsRoundTrip: keywords a Schema Object does not define are
// kept by Parse, written back by Marshal, copied by Clone and Inline, and
// part of JSONSchema (issue 22).
func TestExtraKeywordsRoundTrip(t *testing.T) {
	in := doc(`{"name":"f","description":"d","parameters":[{"name":"n","required":true,"schema":{"type":"integer","minimum":1,"maximum":100,"default":5,"x-note":{"a":[1,2]}}},
		{"name":"r","required":false,"schema":{"$ref":"#/schemas/S","pattern":"^a"}}]}`,
		`,"schemas":{"S":{"type":"string","format":"uri","maxLength":9007199254740993}}`)
	d, err := Parse([]byte(in))
	if err != nil {
		t.Fatal(err)
	}
	n := d.Functions[0].Parameters[0].Schema
	want := map[string]json.RawMessage{"minimum": json.RawMessage("1"), "maximum": json.RawMessage("100"), "default": json.RawMessage("5"), "x-note": json.RawMessage(`{"a":[1,2]}`)}
	if !reflect.DeepEqual(n.Extra, want) {
		t.Errorf("Extra = %s", mustJSON(t, n.Extra))
	}
	b := mustJSON(t, d)
	if !strings.Contains(b, `"type":"integer","default":5,"maximum":100,"minimum":1,"x-note":{"a":[1,2]}`) ||
		!strings.Contains(b, `"maxLength":9007199254740993`) {
		t.Errorf("marshalled: %s", b)
	}
	again, err := Parse([]byte(b))
	if err != nil || !reflect.DeepEqual(again, d) {
		t.Errorf("Parse(Marshal(d)) differs: %v\n%s", err, mustJSON(t, again))
	}
	c := d.Clone()
	c.Functions[0].Parameters[0].Schema.Extra["minimum"][0] = '7'
	if string(n.Extra["minimum"]) != "1" {
		t.Error("Clone shares Extra")
	}
	inl, err := d.Inline()
	if err != nil {
		t.Fatal(err)
	}
	r := inl.Functions[0].Parameters[1].Schema
	if r.Type != TypeString || string(r.Extra["format"]) != `"uri"` || string(r.Extra["pattern"]) != `"^a"` {
		t.Errorf("inlined ref: %s", mustJSON(t, r))
	}
	js, err := ParametersJSONSchema(nil, &inl.Functions[0])
	if err != nil {
		t.Fatal(err)
	}
	jsonEqual(t, js, `{"type":"object","required":["n"],"properties":{
		"n":{"type":"integer","minimum":1,"maximum":100,"default":5,"x-note":{"a":[1,2]}},
		"r":{"type":"string","format":"uri","maxLength":9007199254740993,"pattern":"^a"}}}`)
	// Numbers of extra keywords stay exact.
	if got := js["properties"].(map[string]any)["r"].(map[string]any)["maxLength"]; got != json.Number("9007199254740993") {
		t.Errorf("maxLength = %#v", got)
	}
	// A key naming a field is not written twice.
	s := &Schema{Type: TypeString, Extra: map[string]json.RawMessage{"type": json.RawMessage(`"integer"`), "empty": nil}}
	if got := mustJSON(t, s); got != `{"type":"string"}` {
		t.Errorf("field-named extra: %s", got)
	}
}

// TestFunctionExtensions: inputSchema, outputSchema, title, annotations,
// icons, _meta and refused round-trip, and are validated.
func TestFunctionExtensions(t *testing.T) {
	in := doc(`{"name":"f","description":"d","parameters":[],
		"inputSchema":{"type":"object","properties":{"v":{"type":["boolean","string"]}},"$defs":{"n":1.50}},
		"outputSchema":{"type":"object","additionalProperties":{"type":"string"}},
		"title":"Eff","annotations":{"readOnlyHint":true,"openWorldHint":false,"future":1},
		"icons":[{"src":"data:image/png;base64,AA==","mimeType":"image/png","sizes":["48x48"]}],
		"_meta":{"k":{"z":1,"a":2}}}`, `,"refused":[{"kind":"tool","name":"t","reason":"why"}]`)
	d, err := Parse([]byte(in))
	if err != nil {
		t.Fatal(err)
	}
	f := d.Functions[0]
	if string(f.InputSchema) != `{"type":"object","properties":{"v":{"type":["boolean","string"]}},"$defs":{"n":1.50}}` {
		t.Errorf("InputSchema = %s", f.InputSchema)
	}
	if string(f.OutputSchema) != `{"type":"object","additionalProperties":{"type":"string"}}` || string(f.Meta) != `{"k":{"z":1,"a":2}}` {
		t.Errorf("OutputSchema = %s, Meta = %s", f.OutputSchema, f.Meta)
	}
	if f.Title != "Eff" || f.Annotations == nil || *f.Annotations.ReadOnlyHint != true || *f.Annotations.OpenWorldHint != false || f.Annotations.DestructiveHint != nil {
		t.Errorf("Title %q, Annotations %s", f.Title, mustJSON(t, f.Annotations))
	}
	if len(f.Icons) != 1 || f.Icons[0].Sizes[0] != "48x48" || len(d.Refused) != 1 || d.Refused[0].Reason != "why" {
		t.Errorf("Icons %+v, Refused %+v", f.Icons, d.Refused)
	}
	again, err := Parse([]byte(mustJSON(t, d)))
	if err != nil || !reflect.DeepEqual(again, d) {
		t.Errorf("Parse(Marshal(d)) differs: %v\n%s", err, mustJSON(t, again))
	}
	if c := d.Clone(); !reflect.DeepEqual(c, d) {
		t.Errorf("Clone differs: %s", mustJSON(t, c))
	}
	got, err := InputJSONSchema(d, &d.Functions[0])
	if err != nil || got["$defs"].(map[string]any)["n"] != json.Number("1.50") {
		t.Errorf("InputJSONSchema = %v, %v", got, err)
	}
	out, err := OutputJSONSchema(&d.Functions[0])
	if err != nil || out["additionalProperties"] == nil {
		t.Errorf("OutputJSONSchema = %v, %v", out, err)
	}

	bad := doc(`{"name":"f","description":"d","parameters":[],"inputSchema":{"type":"string"},"outputSchema":[],
		"title":1,"annotations":{"readOnlyHint":"yes"},"icons":[{"mimeType":"x"}],"_meta":[]}`, `,"refused":[{"kind":"tool"}]`)
	want := faults(
		`functions[0].inputSchema.type: must be "object": the arguments of a call are an object`,
		"functions[0].outputSchema: must be an object",
		"functions[0].title: must be a string",
		"functions[0].annotations.readOnlyHint: must be a boolean",
		"functions[0].icons[0].src: required",
		"functions[0]._meta: must be an object",
		"refused[0].name: required",
		"refused[0].reason: required",
	)
	if fs := faultsOf(t, ValidateJSON([]byte(bad))); !equalFaults(fs, want) {
		t.Errorf("faults:%s\nwant:%s", faultLines(fs), faultLines(want))
	}
}

// TestProjectJSONSchema: the projection gives a valid OpenTool schema and
// names what it loses.
func TestProjectJSONSchema(t *testing.T) {
	tests := []struct {
		name   string
		js     string
		want   string   // the projection as JSON
		losses []string // substrings of the losses, in order; nil: none
	}{
		{"exact with constraints", `{"type":"integer","minimum":1,"maximum":100,"default":5,"description":"n"}`,
			`{"type":"integer","description":"n","default":5,"maximum":100,"minimum":1}`, nil},
		{"object", `{"type":"object","properties":{"s":{"type":"string","pattern":"^a+$","format":"email"}},"required":["s"],"additionalProperties":false}`,
			`{"type":"object","properties":{"s":{"type":"string","format":"email","pattern":"^a+$"}},"required":["s"],"additionalProperties":false}`, nil},
		{"type union", `{"type":["boolean","string"],"description":"flag"}`, `{"type":"boolean","description":"flag"}`,
			[]string{`type: type ["boolean","string"] projected as "boolean"`}},
		{"nullable", `{"type":["string","null"],"enum":["a",null]}`, `{"type":"string","enum":["a"]}`,
			[]string{"type: null is not allowed", "enum[1]: value null is not of type string"}},
		{"anyOf", `{"anyOf":[{"type":"integer","minimum":0},{"type":"string"}]}`, `{"type":"integer","minimum":0}`,
			[]string{"anyOf: 2 branches projected as the first, anyOf[0]"}},
		{"anyOf on a typed schema", `{"type":"string","anyOf":[{"format":"email"},{"format":"uri"}]}`, `{"type":"string"}`,
			[]string{"anyOf: left out (the schema has a type)"}},
		{"defs and allOf", `{"type":"object","$defs":{"A":{"type":"object","properties":{"city":{"type":"string"}}}},
			"properties":{"home":{"$ref":"#/$defs/A","description":"home"}},"allOf":[{"properties":{"zip":{"type":"string"}},"required":["zip"]}]}`,
			`{"type":"object","properties":{"home":{"type":"object","description":"home","properties":{"city":{"type":"string"}}},"zip":{"type":"string"}},"required":["zip"]}`,
			[]string{"allOf: allOf merged into one schema"}},
		{"anchor", `{"type":"object","$defs":{"a":{"$anchor":"addr","type":"string"}},"properties":{"x":{"$ref":"#addr"}}}`,
			`{"type":"object","properties":{"x":{"type":"string"}}}`, nil},
		{"recursive", `{"$ref":"#/$defs/N","$defs":{"N":{"type":"object","properties":{"kids":{"type":"array","items":{"$ref":"#/$defs/N"}}}}}}`,
			`{"type":"object","properties":{"kids":{"type":"array","items":{"type":"object","properties":{}}}}}`,
			[]string{`properties.kids.items.$ref: recursive reference "#/$defs/N" cut`}},
		{"no type", `{}`, `{"type":"string"}`, []string{"no type (any value)"}},
		{"true", `true`, `{"type":"string"}`, []string{"any value (true)"}},
		{"type from keywords", `{"minimum":2}`, `{"type":"number","minimum":2}`, []string{`no type: projected as number (from "minimum")`}},
		{"inexpressible keywords", `{"type":"object","properties":{"a":{"type":"string"}},"if":{"required":["a"]},"then":{},"patternProperties":{"^x":{}},"additionalProperties":{"type":"string"}}`,
			`{"type":"object","properties":{"a":{"type":"string"}}}`,
			[]string{"additionalProperties: a schema: left out", "if: not expressible", "patternProperties: not expressible", "then: not expressible"}},
		{"array without items", `{"type":"array","minItems":1}`, `{"type":"array","items":{"type":"string"},"minItems":1}`, []string{"items: absent"}},
		{"required undeclared", `{"type":"object","required":["a"]}`, `{"type":"object","properties":{}}`, []string{`required: "a" is not a declared property`}},
		{"remote ref", `{"$ref":"https://example.com/s.json"}`, `{"type":"string"}`, []string{"not a local reference", "no type"}},
		{"false property", `{"type":"object","properties":{"no":false,"yes":true}}`, `{"type":"object","properties":{"yes":{"type":"string"}}}`,
			[]string{"properties.no: no value (false)", "properties.yes: any value (true)"}},
		{"properties on a string change nothing", `{"type":"string","properties":{"a":{"allOf":[]}},"items":{}}`, `{"type":"string"}`, nil},
		{"const", `{"const":3}`, `{"type":"integer","enum":[3]}`, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var js any
			if err := json.Unmarshal([]byte(tt.js), &js); err != nil {
				t.Fatal(err)
			}
			s, losses, err := ProjectJSONSchema(js)
			if err != nil {
				t.Fatal(err)
			}
			jsonEqual(t, s, tt.want)
			if err := ValidateJSON([]byte(withSchema(mustJSON(t, s), ``))); err != nil {
				t.Errorf("projection invalid: %v", err)
			}
			if len(losses) != len(tt.losses) {
				t.Fatalf("losses %q, want %q", losses, tt.losses)
			}
			for i, l := range losses {
				if !strings.Contains(l.String(), tt.losses[i]) {
					t.Errorf("loss %d = %q, want it to contain %q", i, l, tt.losses[i])
				}
			}
		})
	}
}

// TestProjectParameters: an MCP input schema becomes parameters in name
// order; a non-object one is refused.
func TestProjectParameters(t *testing.T) {
	var in map[string]any
	if err := json.Unmarshal([]byte(`{"$schema":"https://json-schema.org/draft/2020-12/schema","type":"object",
		"properties":{"z":{"type":["boolean","string"],"description":"zed"},"a":{"type":"integer","maximum":3}},"required":["z"],"additionalProperties":false}`), &in); err != nil {
		t.Fatal(err)
	}
	params, additional, losses, err := ProjectParameters(in)
	if err != nil {
		t.Fatal(err)
	}
	jsonEqual(t, params, `[{"name":"a","schema":{"type":"integer","maximum":3},"required":false},
		{"name":"z","description":"zed","schema":{"type":"boolean"},"required":true}]`)
	if additional == nil || *additional || len(losses) != 1 {
		t.Errorf("additional %v, losses %v", additional, losses)
	}
	if _, _, _, err := ProjectParameters(map[string]any{"type": "string"}); !errors.Is(err, ErrUnsupportedSchema) {
		t.Errorf("string input schema: %v", err)
	}
	params, _, losses, err = ProjectParameters(map[string]any{})
	if err != nil || len(params) != 0 || len(losses) != 0 {
		t.Errorf("empty input schema: %v %v %v", params, losses, err)
	}
}
