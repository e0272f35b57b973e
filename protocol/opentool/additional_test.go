package opentool

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"
)

// Tests of the extensions "additionalParameters" (Function) and
// "additionalProperties" (Schema): unknown parameters and members refused.

func TestAdditionalValidation(t *testing.T) {
	obj := func(extra string) string {
		return `{"type":"object","properties":{"a":{"type":"string"}}` + extra + `}`
	}
	withFn := func(extra string) string {
		return doc(`{"name":"f","description":"d","parameters":[]`+extra+`}`, ``)
	}
	tests := []struct {
		name, doc string
		want      []string
	}{
		{"function false", withFn(`,"additionalParameters":false`), nil},
		{"function true", withFn(`,"additionalParameters":true`), nil},
		{"function null", withFn(`,"additionalParameters":null`), nil},
		{"function not boolean", withFn(`,"additionalParameters":"no"`), []string{"functions[0].additionalParameters: must be a boolean"}},
		{"function object", withFn(`,"additionalParameters":{}`), []string{"functions[0].additionalParameters: must be a boolean"}},
		{"schema false", withSchema(obj(`,"additionalProperties":false`), ``), nil},
		{"schema null", withSchema(obj(`,"additionalProperties":null`), ``), nil},
		{"schema not boolean", withSchema(obj(`,"additionalProperties":0`), ``), []string{P + ".additionalProperties: must be a boolean"}},
		{"schema a schema", withSchema(`{"type":"array","items":`+obj(`,"additionalProperties":{"type":"string"}`)+`}`, ``),
			[]string{P + ".items.additionalProperties: must be a boolean"}},
		{"schema not an object", withSchema(`{"type":"string","additionalProperties":false}`, ``), []string{P + ".additionalProperties: only allowed when type is object"}},
		{"schema with $ref", withSchema(`{"$ref":"#/schemas/A","additionalProperties":false}`, `,"schemas":{"A":`+obj(``)+`}`),
			[]string{P + ".additionalProperties: not allowed with $ref"}},
		{"named schema", withSchema(`{"$ref":"#/schemas/A"}`, `,"schemas":{"A":`+obj(`,"additionalProperties":"x"`)+`}`),
			[]string{"schemas.A.additionalProperties: must be a boolean"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := faultsOf(t, ValidateJSON([]byte(tc.doc)))
			if want := faults(tc.want...); !equalFaults(got, want) {
				t.Errorf("faults:%s\nwant:%s", faultLines(got), faultLines(want))
			}
		})
	}
}

func TestParseAdditional(t *testing.T) {
	d, err := Parse([]byte(doc(
		`{"name":"f","description":"d","additionalParameters":false,"parameters":[`+param("p", `{"type":"object","properties":{},"additionalProperties":false}`)+`]},`+
			`{"name":"g","description":"d","additionalParameters":true,"parameters":[`+param("p", `{"type":"object","properties":{},"additionalProperties":true}`)+`]},`+
			`{"name":"h","description":"d","additionalParameters":null,"parameters":[`+param("p", `{"type":"object","properties":{},"additionalProperties":null}`)+`]}`, ``)))
	if err != nil {
		t.Fatal(err)
	}
	for i, want := range []*bool{new(false), new(true), nil} {
		f := d.Functions[i]
		if !reflect.DeepEqual(f.AdditionalParameters, want) || !reflect.DeepEqual(f.Parameters[0].Schema.AdditionalProperties, want) {
			t.Errorf("%s: additionalParameters %v, additionalProperties %v; want %v", f.Name, f.AdditionalParameters, f.Parameters[0].Schema.AdditionalProperties, want)
		}
	}
	enc := mustJSON(t, d)
	for _, want := range []string{
		`"name":"f","description":"d","parameters":[{"name":"p","schema":{"type":"object","properties":{},"additionalProperties":false},"required":true}],"additionalParameters":false}`,
		`"name":"h","description":"d","parameters":[{"name":"p","schema":{"type":"object","properties":{}},"required":true}]}`,
	} {
		if !strings.Contains(enc, want) {
			t.Errorf("encoding %s\nlacks %s", enc, want)
		}
	}
}

func TestInlineKeepsAdditionalProperties(t *testing.T) {
	d, err := Parse([]byte(withSchema(`{"$ref":"#/schemas/A","description":"here"}`,
		`,"schemas":{"A":{"type":"object","properties":{"b":{"type":"object","properties":{},"additionalProperties":true}},"additionalProperties":false}}`)))
	if err != nil {
		t.Fatal(err)
	}
	in, err := d.Inline()
	if err != nil {
		t.Fatal(err)
	}
	s := in.Functions[0].Parameters[0].Schema
	if s.AdditionalProperties == nil || *s.AdditionalProperties || s.Properties["b"].AdditionalProperties == nil || !*s.Properties["b"].AdditionalProperties {
		t.Fatalf("inlined schema %s", mustJSON(t, s))
	}
	*s.AdditionalProperties = true
	if !reflect.DeepEqual(d.Schemas["A"].AdditionalProperties, new(false)) || !reflect.DeepEqual(in.Schemas["A"].AdditionalProperties, new(false)) {
		t.Error("the inlined schema shares AdditionalProperties with schemas.A")
	}
}

func TestAdditionalJSONSchema(t *testing.T) {
	s := &Schema{Type: TypeObject, Properties: map[string]*Schema{"x": {Type: TypeInteger}}, AdditionalProperties: new(false)}
	jsonEqual(t, s.JSONSchema(), `{"type":"object","properties":{"x":{"type":"integer"}},"additionalProperties":false}`)
	back, err := FromJSONSchema(s.JSONSchema())
	if err != nil || !reflect.DeepEqual(back, s) {
		t.Errorf("FromJSONSchema(JSONSchema()) = %s, %v; want %s", mustJSON(t, back), err, mustJSON(t, s))
	}

	param := Parameter{Name: "mode", Schema: &Schema{Type: TypeString, Enum: []any{"safe"}}, Required: true}
	for _, tc := range []struct {
		additional *bool
		want       string
	}{
		{new(false), `{"type":"object","properties":{"mode":{"type":"string","enum":["safe"]}},"required":["mode"],"additionalProperties":false}`},
		{new(true), `{"type":"object","properties":{"mode":{"type":"string","enum":["safe"]}},"required":["mode"],"additionalProperties":true}`},
		{nil, `{"type":"object","properties":{"mode":{"type":"string","enum":["safe"]}},"required":["mode"]}`},
	} {
		f := &Function{Name: "f", Description: "d", Parameters: []Parameter{param}, AdditionalParameters: tc.additional}
		js, err := ParametersJSONSchema(nil, f)
		if err != nil {
			t.Fatal(err)
		}
		jsonEqual(t, js, tc.want)
		obj, err := FromJSONSchema(js)
		if err != nil || !reflect.DeepEqual(obj.AdditionalProperties, tc.additional) {
			t.Errorf("FromJSONSchema(%s).AdditionalProperties = %v, %v", tc.want, obj.AdditionalProperties, err)
		}
	}
}

func TestCloneAdditional(t *testing.T) {
	f := &Function{Name: "f", AdditionalParameters: new(false), Parameters: []Parameter{{Name: "p", Schema: &Schema{Type: TypeObject, AdditionalProperties: new(false)}}}}
	c := f.Clone()
	*c.AdditionalParameters = true
	*c.Parameters[0].Schema.AdditionalProperties = true
	if *f.AdditionalParameters || *f.Parameters[0].Schema.AdditionalProperties {
		t.Errorf("Clone shares the bools: %s", mustJSON(t, f))
	}
	var raw map[string]any
	if err := json.Unmarshal([]byte(mustJSON(t, c)), &raw); err != nil || raw["additionalParameters"] != true {
		t.Errorf("clone encodes as %s", mustJSON(t, c))
	}
}
