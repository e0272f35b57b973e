package opentool

import (
	"encoding/json"
	"math"
	"testing"
)

// tagSchema mirrors Schema's JSON tags without the MarshalJSON method; its
// Properties is a pointer so that an empty map can still be written, as the
// object rule of Schema.MarshalJSON asks.
type tagSchema struct {
	Ref         string                 `json:"$ref,omitempty"`
	Type        string                 `json:"type,omitempty"`
	Description string                 `json:"description,omitempty"`
	Properties  *map[string]*tagSchema `json:"properties,omitempty"`
	Items       *tagSchema             `json:"items,omitempty"`
	Enum        []any                  `json:"enum,omitempty"`
	Required    []string               `json:"required,omitempty"`
	// AdditionalProperties is Schema's extension.
	AdditionalProperties *bool `json:"additionalProperties,omitempty"`
}

func toTag(s *Schema) *tagSchema {
	if s == nil {
		return nil
	}
	t := &tagSchema{Ref: s.Ref, Type: s.Type, Description: s.Description, Items: toTag(s.Items), Enum: s.Enum, Required: s.Required, AdditionalProperties: s.AdditionalProperties}
	if len(s.Properties) > 0 || s.Ref == "" && s.Type == TypeObject {
		m := map[string]*tagSchema{}
		for k, p := range s.Properties {
			m[k] = toTag(p)
		}
		t.Properties = &m
	}
	return t
}

// checkSchemaEncoding fails unless s encodes exactly like its tag mirror.
func checkSchemaEncoding(t testing.TB, s *Schema) {
	t.Helper()
	got, err1 := json.Marshal(s)
	want, err2 := json.Marshal(toTag(s))
	if (err1 == nil) != (err2 == nil) || string(got) != string(want) {
		t.Fatalf("Schema encoding\n got  %s (%v)\n want %s (%v)", got, err1, want, err2)
	}
}

func TestSchemaMarshalMatchesTags(t *testing.T) {
	for _, s := range []*Schema{
		{},
		{Ref: "#/schemas/X", Description: "<b>&</b>"},
		{Ref: "#/schemas/X", Type: TypeObject},
		{Type: TypeObject},
		{Type: TypeObject, Properties: map[string]*Schema{"z": {Type: TypeString}, "a\u2028": nil, "m": {Type: TypeObject, AdditionalProperties: new(true)}}, Required: []string{"z"}, AdditionalProperties: new(false)},
		{Type: TypeArray, Items: &Schema{Type: TypeArray, Items: &Schema{Type: TypeNumber, Enum: []any{1.5, -0.0, 1e21, "x", nil, []any{true}}}}},
		{Type: TypeString, Properties: map[string]*Schema{}, Enum: []any{}, Required: []string{}},
		{Type: TypeNumber, Enum: []any{math.Inf(1)}},
	} {
		checkSchemaEncoding(t, s)
		if b, err := json.Marshal(*s); err == nil { // value and pointer agree
			if c, _ := json.Marshal(s); string(b) != string(c) {
				t.Errorf("value %s != pointer %s", b, c)
			}
		}
	}
}
