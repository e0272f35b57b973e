package opentool

import (
	"encoding/json"
	"errors"
	"reflect"
	"strconv"
	"strings"
	"testing"
)

func TestSchemaJSONSchema(t *testing.T) {
	tests := []struct {
		name string
		in   *Schema
		want map[string]any
	}{
		{"nil", nil, map[string]any{}},
		{"string", &Schema{Type: TypeString, Description: "d", Enum: []any{"a", "b"}}, map[string]any{"type": "string", "description": "d", "enum": []any{"a", "b"}}},
		{"object without properties", &Schema{Type: TypeObject}, map[string]any{"type": "object", "properties": map[string]any{}}},
		{"nested", &Schema{Type: TypeObject, Properties: map[string]*Schema{
			"tags": {Type: TypeArray, Items: &Schema{Type: TypeInteger, Enum: []any{1.0, 2.0}}},
			"ok":   {Type: TypeBoolean},
		}, Required: []string{"tags"}}, map[string]any{
			"type": "object",
			"properties": map[string]any{
				"tags": map[string]any{"type": "array", "items": map[string]any{"type": "integer", "enum": []any{1.0, 2.0}}},
				"ok":   map[string]any{"type": "boolean"},
			},
			"required": []any{"tags"},
		}},
		{"ref kept", &Schema{Ref: "#/schemas/Id"}, map[string]any{"$ref": "#/schemas/Id"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.in.JSONSchema(); !reflect.DeepEqual(got, tt.want) {
				t.Errorf("got %#v\nwant %#v", got, tt.want)
			}
		})
	}
}

// jsonEqual compares v with the JSON text want, key order aside.
func jsonEqual(t *testing.T, v any, want string) {
	t.Helper()
	var a, b any
	if err := json.Unmarshal([]byte(mustJSON(t, v)), &a); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal([]byte(want), &b); err != nil {
		t.Fatalf("bad want: %v", err)
	}
	if !reflect.DeepEqual(a, b) {
		t.Errorf("got  %s\nwant %s", mustJSON(t, v), want)
	}
}

func TestParametersJSONSchemaFixtures(t *testing.T) {
	weather := parseFixture(t, "reference-weather.json")
	mock := parseFixture(t, "reference-mock-tool.json")
	tests := []struct {
		doc  *OpenTool
		fn   string
		want string
	}{
		{weather, "get_current_weather", `{"type":"object","properties":{"currentWeatherInfo":{"type":"object","properties":{
			"location":{"type":"string","description":"The city and state, e.g. San Francisco, CA"},
			"format":{"type":"string","description":"The temperature unit to use. Infer this from the users location.","enum":["celsius","fahrenheit"]}},
			"required":["location","format"]}},"required":["currentWeatherInfo"]}`},
		{weather, "get_n_day_weather_forecast", `{"type":"object","properties":{"forecastWeatherInfo":{"type":"object","properties":{
			"location":{"type":"string","description":"The city and state, e.g. San Francisco, CA"},
			"format":{"type":"string","description":"The temperature unit to use. Infer this from the users location.","enum":["celsius","fahrenheit"]},
			"num_days":{"type":"integer","description":"The number of days to forecast"}},
			"required":["location","format","num_days"]}},"required":["forecastWeatherInfo"]}`},
		{mock, "update", `{"type":"object","properties":{"id":{"type":"integer","description":"Text Id in storage."},"text":{"type":"string","description":"Text should be updated."}},"required":["id","text"]}`},
		{mock, "count", `{"type":"object","properties":{},"required":[]}`},
	}
	for _, tt := range tests {
		t.Run(tt.fn, func(t *testing.T) {
			got, err := ParametersJSONSchema(tt.doc, tt.doc.Function(tt.fn))
			if err != nil {
				t.Fatal(err)
			}
			jsonEqual(t, got, tt.want)
			// And back: the parameters as one object schema.
			s, err := FromJSONSchema(got)
			if err != nil {
				t.Fatalf("FromJSONSchema: %v", err)
			}
			f := tt.doc.Function(tt.fn)
			if s.Type != TypeObject || len(s.Properties) != len(f.Parameters) {
				t.Errorf("FromJSONSchema = %s", mustJSON(t, s))
			}
		})
	}
	// Required parameters keep their order; optional ones are left out.
	d := &OpenTool{Functions: []Function{{Name: "f", Parameters: []Parameter{
		{Name: "z", Schema: &Schema{Type: TypeString}, Required: true},
		{Name: "o", Schema: &Schema{Type: TypeString, Description: "schema"}, Description: "param"},
		{Name: "a", Schema: &Schema{Type: TypeString}, Required: true},
	}}}}
	got, err := ParametersJSONSchema(d, &d.Functions[0])
	if err != nil {
		t.Fatal(err)
	}
	jsonEqual(t, got, `{"type":"object","properties":{"z":{"type":"string"},"o":{"type":"string","description":"param"},"a":{"type":"string"}},"required":["z","a"]}`)
}

func TestParametersJSONSchemaErrors(t *testing.T) {
	d := &OpenTool{Functions: []Function{
		{Name: "ok"},
		{Name: "unknown", Parameters: []Parameter{{Name: "p", Schema: &Schema{Type: TypeArray, Items: &Schema{Ref: "#/schemas/X"}}}}},
		{Name: "noschema", Parameters: []Parameter{{Name: "p"}}},
		{Name: "dup", Parameters: []Parameter{{Name: "p", Schema: &Schema{Type: TypeString}}, {Name: "p", Schema: &Schema{Type: TypeString}}}},
		{Name: "cycle", Parameters: []Parameter{{Name: "p", Schema: &Schema{Ref: "#/schemas/A"}}}},
	}, Schemas: map[string]*Schema{"A": {Type: TypeArray, Items: &Schema{Ref: "#/schemas/A"}}}}
	tests := []struct {
		name     string
		fn       *Function
		sentinel error
		msg      string
	}{
		{"nil function", nil, ErrInvalidDocument, "nil function"},
		{"unknown ref", d.Function("unknown"), ErrUnknownRef, "functions[1].parameters[0].schema.items.$ref"},
		{"no schema", d.Function("noschema"), ErrInvalidDocument, "functions[2].parameters[0].schema: required"},
		{"duplicate", d.Function("dup"), ErrInvalidDocument, `functions[3].parameters[1].name: duplicate parameter name "p"`},
		{"cycle", d.Function("cycle"), ErrRefCycle, "schemas.A.items.$ref: schema reference cycle A -> A"},
		{"function not in doc", &Function{Name: "other", Parameters: []Parameter{{Name: "p", Schema: &Schema{Ref: "#/schemas/Y"}}}}, ErrUnknownRef, `function "other".parameters[0].schema.$ref`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ParametersJSONSchema(d, tt.fn)
			if got != nil || !errors.Is(err, tt.sentinel) || !strings.Contains(err.Error(), tt.msg) {
				t.Errorf("got %v, %v; want %v containing %q", got, err, tt.sentinel, tt.msg)
			}
		})
	}
}

// TestJSONSchemaRoundTrip: FromJSONSchema(s.JSONSchema()) == s for every
// inlined schema of the fixtures.
func TestJSONSchemaRoundTrip(t *testing.T) {
	for _, name := range fixtureNames {
		d, err := parseFixture(t, name).Inline()
		if err != nil {
			t.Fatal(err)
		}
		var all []*Schema
		for _, f := range d.Functions {
			for _, p := range f.Parameters {
				all = append(all, p.Schema)
			}
			if f.Return != nil {
				all = append(all, f.Return.Schema)
			}
		}
		for _, s := range all {
			got, err := FromJSONSchema(s.JSONSchema())
			if err != nil || !reflect.DeepEqual(got, s) {
				t.Errorf("%s: FromJSONSchema(%s) = %s, %v", name, mustJSON(t, s), mustJSON(t, got), err)
			}
		}
	}
}

// decodeJS parses a JSON Schema the way a caller would (json.Unmarshal).
func decodeJS(t *testing.T, s string) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal([]byte(s), &m); err != nil {
		t.Fatalf("bad schema %s: %v", s, err)
	}
	return m
}

func TestFromJSONSchema(t *testing.T) {
	tests := []struct {
		name string
		js   string
		want string // the OpenTool schema as JSON
	}{
		{"string", `{"type":"string","description":"d","format":"uri","minLength":1}`, `{"type":"string","description":"d"}`},
		{"nullable type array", `{"type":["null","integer"],"minimum":0}`, `{"type":"integer"}`},
		{"object dropping constraints", `{"$schema":"https://json-schema.org/draft/2020-12/schema","$id":"x","title":"T","type":"object","additionalProperties":false,
			"properties":{"a":{"type":"string"},"b":{"type":"array","items":{"type":"number"},"minItems":1}},"required":["a"]}`,
			`{"type":"object","properties":{"a":{"type":"string"},"b":{"type":"array","items":{"type":"number"}}},"required":["a"],"additionalProperties":false}`},
		{"additionalProperties true kept", `{"type":"object","properties":{},"additionalProperties":true}`, `{"type":"object","properties":{},"additionalProperties":true}`},
		{"additionalProperties dropped off objects", `{"type":"string","additionalProperties":false}`, `{"type":"string"}`},
		{"map becomes empty object", `{"type":"object","additionalProperties":{"type":"string"}}`, `{"type":"object","properties":{}}`},
		{"enum drops null", `{"type":["string","null"],"enum":["a",null,"b"]}`, `{"type":"string","enum":["a","b"]}`},
		{"const", `{"type":"integer","const":3}`, `{"type":"integer","enum":[3]}`},
		{"type inferred", `{"properties":{"e":{"enum":["x","y"]},"n":{"enum":[1,2.5]},"i":{"const":2},"b":{"enum":[true]},"l":{"items":{"type":"string"}}}}`,
			`{"type":"object","properties":{"e":{"type":"string","enum":["x","y"]},"n":{"type":"number","enum":[1,2.5]},"i":{"type":"integer","enum":[2]},"b":{"type":"boolean","enum":[true]},"l":{"type":"array","items":{"type":"string"}}}}`},
		{"defs and refs", `{"$ref":"#/$defs/Args","$defs":{"Args":{"type":"object","properties":{"home":{"$ref":"#/$defs/Addr","description":"home address"},"work":{"$ref":"#/$defs/Addr"}},"required":["work"]},
			"Addr":{"type":"object","description":"an address","properties":{"city":{"type":"string"}}}}}`,
			`{"type":"object","properties":{"home":{"type":"object","description":"home address","properties":{"city":{"type":"string"}}},"work":{"type":"object","description":"an address","properties":{"city":{"type":"string"}}}},"required":["work"]}`},
		{"pointer into an array", `{"$ref":"#/x/1","x":[{"type":"string"},{"type":"boolean"}]}`, `{"type":"boolean"}`},
		{"definitions and escaped pointer", `{"type":"array","items":{"$ref":"#/definitions/a~1b"},"definitions":{"a/b":{"type":"boolean"}}}`, `{"type":"array","items":{"type":"boolean"}}`},
		{"oneOf with null", `{"oneOf":[{"type":"null"},{"type":"string","enum":["a"]}],"description":"maybe"}`, `{"type":"string","description":"maybe","enum":["a"]}`},
		{"anyOf with null ref", `{"type":"object","properties":{"a":{"anyOf":[{"$ref":"#/$defs/X"},{"type":"null"}]}},"$defs":{"X":{"type":"number"}}}`, `{"type":"object","properties":{"a":{"type":"number"}}}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := FromJSONSchema(decodeJS(t, tt.js))
			if err != nil {
				t.Fatal(err)
			}
			jsonEqual(t, got, tt.want)
			// The result is a valid OpenTool schema.
			if err := ValidateJSON([]byte(withSchema(mustJSON(t, got), ``))); err != nil {
				t.Errorf("result invalid: %v", err)
			}
		})
	}
}

func TestFromJSONSchemaGoValues(t *testing.T) {
	// Hand-built maps with []string, ints and json.Number are accepted too.
	got, err := FromJSONSchema(map[string]any{
		"type":       []string{"object"},
		"properties": map[string]any{"n": map[string]any{"type": "integer", "enum": []any{1, int64(2), json.Number("3")}}, "s": map[string]any{"type": "string", "enum": []string{"x"}}},
		"required":   []string{"n"},
	})
	if err != nil {
		t.Fatal(err)
	}
	want := &Schema{Type: TypeObject, Properties: map[string]*Schema{"n": {Type: TypeInteger, Enum: []any{1.0, 2.0, 3.0}}, "s": {Type: TypeString, Enum: []any{"x"}}}, Required: []string{"n"}}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("got %s", mustJSON(t, got))
	}
}

func TestFromJSONSchemaErrors(t *testing.T) {
	tests := []struct {
		name     string
		js       string
		sentinel error
		msg      string
	}{
		{"boolean schema", `{"type":"object","properties":{"any":true}}`, ErrUnsupportedSchema, "at properties.any: boolean schema true"},
		{"not an object", `{"type":"array","items":"string"}`, ErrUnsupportedSchema, "at items: must be an object, got string"},
		{"no type", `{"description":"anything"}`, ErrUnsupportedSchema, "at type: missing"},
		{"null type", `{"type":"null"}`, ErrUnsupportedSchema, "at type: type null is not supported"},
		{"several types", `{"type":["string","integer","null"]}`, ErrUnsupportedSchema, `at type: several types ["string" "integer"] are not supported`},
		{"unknown type", `{"type":"date"}`, ErrUnsupportedSchema, `at type: unknown type "date"`},
		{"type not string", `{"type":5}`, ErrUnsupportedSchema, "at type: must be a string or an array of strings"},
		{"allOf", `{"type":"object","properties":{"a":{"allOf":[{"type":"string"}]}}}`, ErrUnsupportedSchema, "at properties.a.allOf: keyword not supported"},
		{"if", `{"type":"string","if":{}}`, ErrUnsupportedSchema, "at if: keyword not supported"},
		{"oneOf two alternatives", `{"oneOf":[{"type":"string"},{"type":"array","items":{"type":"string"}}]}`, ErrUnsupportedSchema, "at oneOf: more than one non-null alternative"},
		{"anyOf only null", `{"anyOf":[{"type":"null"}]}`, ErrUnsupportedSchema, "at anyOf: no non-null alternative"},
		{"anyOf with type", `{"type":"string","anyOf":[{"type":"string"}]}`, ErrUnsupportedSchema, "at type: not supported alongside anyOf"},
		{"tuple items", `{"type":"array","items":[{"type":"string"}]}`, ErrUnsupportedSchema, "at items: tuple items"},
		{"array without items", `{"type":"object","properties":{"l":{"type":"array"}}}`, ErrUnsupportedSchema, "at properties.l.items: required"},
		{"items on string", `{"type":"string","items":{"type":"string"}}`, ErrUnsupportedSchema, "at items: only supported with type array"},
		{"properties on array", `{"type":"array","items":{"type":"string"},"properties":{}}`, ErrUnsupportedSchema, "at properties: only supported with type object"},
		{"enum mismatch", `{"type":"integer","enum":[1,1.5]}`, ErrUnsupportedSchema, "at enum[1]: value 1.5 does not match type integer"},
		{"enum on object", `{"type":"object","enum":[{}]}`, ErrUnsupportedSchema, "at enum: not supported for type object"},
		{"enum only null", `{"type":["string","null"],"enum":[null]}`, ErrUnsupportedSchema, "at enum: no value other than null"},
		{"required undeclared", `{"type":"object","properties":{"a":{"type":"string"}},"required":["a","b"]}`, ErrUnsupportedSchema, `at required[1]: "b" is not a declared property`},
		{"required not strings", `{"type":"object","properties":{},"required":[1]}`, ErrUnsupportedSchema, "at required: must be an array of strings"},
		{"description not string", `{"type":"string","description":1}`, ErrUnsupportedSchema, "at description: must be a string"},
		{"ref with type", `{"$ref":"#/$defs/X","type":"string","$defs":{"X":{"type":"string"}}}`, ErrUnsupportedSchema, "at type: not supported alongside $ref"},
		{"ref not string", `{"$ref":1}`, ErrUnsupportedSchema, "at $ref: must be a string"},
		{"ref unknown", `{"type":"object","properties":{"a":{"$ref":"#/$defs/Nope"}},"$defs":{}}`, ErrUnknownRef, `properties.a.$ref: unknown schema reference "#/$defs/Nope"`},
		{"ref remote", `{"$ref":"https://example.com/s.json"}`, ErrUnknownRef, `$ref: unknown schema reference "https://example.com/s.json"`},
		{"ref index with leading zero", `{"$ref":"#/x/01","x":[{"type":"string"},{"type":"string"}]}`, ErrUnknownRef, `$ref: unknown schema reference "#/x/01"`},
		{"ref index out of range", `{"$ref":"#/x/2","x":[{"type":"string"},{"type":"string"}]}`, ErrUnknownRef, `$ref: unknown schema reference "#/x/2"`},
		{"recursive type", `{"$ref":"#/$defs/Node","$defs":{"Node":{"type":"object","properties":{"children":{"type":"array","items":{"$ref":"#/$defs/Node"}}}}}}`,
			ErrRefCycle, "$defs.Node.properties.children.items.$ref: schema reference cycle #/$defs/Node -> #/$defs/Node"},
		{"root recursion", `{"type":"object","properties":{"self":{"$ref":"#"}}}`, ErrRefCycle, "properties.self.$ref"},
		{"nested error in def", `{"$ref":"#/$defs/A","$defs":{"A":{"type":"object","properties":{"x y":{"type":"bogus"}}}}}`, ErrUnsupportedSchema, `at $defs.A.properties["x y"].type: unknown type "bogus"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := FromJSONSchema(decodeJS(t, tt.js))
			if got != nil || !errors.Is(err, tt.sentinel) || !strings.Contains(err.Error(), tt.msg) {
				t.Errorf("got %v, %v\nwant %v containing %q", got, err, tt.sentinel, tt.msg)
			}
		})
	}
}

func TestFromJSONSchemaTooLarge(t *testing.T) {
	defs := map[string]any{"D29": map[string]any{"type": "string"}}
	for i := 28; i >= 0; i-- {
		next := map[string]any{"$ref": "#/$defs/D" + strconv.Itoa(i+1)}
		defs["D"+strconv.Itoa(i)] = map[string]any{"type": "object", "properties": map[string]any{"a": next, "b": next}}
	}
	_, err := FromJSONSchema(map[string]any{"$ref": "#/$defs/D0", "$defs": defs})
	if !errors.Is(err, ErrTooLarge) {
		t.Errorf("error = %v, want ErrTooLarge", err)
	}
}
