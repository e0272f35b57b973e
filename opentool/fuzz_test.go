package opentool

import (
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"
)

// fuzzSeeds adds both fixtures and a few broken documents to f.
func fuzzSeeds(f *testing.F) {
	for _, name := range fixtureNames {
		f.Add(readFixture(f, name))
	}
	for _, s := range []string{
		``,
		`{}`,
		`[`,
		`{"opentool":"1.1.0","info":{"title":"t","version":"1"},"functions":[{"name":"a b","parameters":{}}]}`,
		withSchema(`{"type":"array"}`, ``),
		withSchema(`{"$ref":"#/schemas/A"}`, `,"schemas":{"A":{"type":"object","properties":{"n":{"$ref":"#/schemas/A"}}}}`),
		withSchema(`{"type":"integer","enum":[1,1.5,1e400,"x"]}`, ``),
		withSchema(`{"type":"object","properties":{"a":{"$ref":"#/schemas/a~1b"}},"required":["a","b"]}`, `,"schemas":{"a/b":{"type":"string","enum":["x"]}}`),
		doc(fn("x", ``)+","+fn("x", param("p", `{"type":"string"}`)+","+param("p", `{}`)), `,"schemas":{"":{}}`),
	} {
		f.Add([]byte(s))
	}
}

// checkValidationError checks the shape of a ValidateJSON/Parse error.
func checkValidationError(t *testing.T, data []byte, err error) {
	var ve *ValidationError
	if !errors.As(err, &ve) || !errors.Is(err, ErrInvalidDocument) || len(ve.Faults) == 0 {
		t.Fatalf("error %v (%T) is not a non-empty *ValidationError", err, err)
	}
	for _, fl := range ve.Faults {
		if fl.Path == "" || fl.Message == "" {
			t.Fatalf("fault with empty path or message: %+v", fl)
		}
	}
	if !json.Valid(data) && (len(ve.Faults) != 1 || ve.Faults[0].Path != rootPath || !strings.HasPrefix(ve.Faults[0].Message, "invalid JSON")) {
		t.Fatalf("invalid JSON gave %v", ve.Faults)
	}
	if strings.Count(err.Error(), "\n") != len(ve.Faults)-1 {
		t.Fatalf("Error() is not one fault per line: %q", err.Error())
	}
}

func FuzzValidateJSON(f *testing.F) {
	fuzzSeeds(f)
	f.Fuzz(func(t *testing.T, data []byte) {
		err := ValidateJSON(data)
		if err != nil {
			checkValidationError(t, data, err)
		}
		// Validation is deterministic (including fault order).
		if err2 := ValidateJSON(data); !reflect.DeepEqual(err, err2) {
			t.Fatalf("two runs differ: %v / %v", err, err2)
		}
	})
}

func FuzzParse(f *testing.F) {
	fuzzSeeds(f)
	f.Fuzz(func(t *testing.T, data []byte) {
		d, err := Parse(data)
		if err != nil {
			if d != nil {
				t.Fatal("Parse returned a document and an error")
			}
			checkValidationError(t, data, err)
			if ValidateJSON(data) == nil {
				t.Fatal("Parse failed where ValidateJSON passed")
			}
			return
		}
		if err := ValidateJSON(data); err != nil {
			t.Fatalf("Parse passed where ValidateJSON failed: %v", err)
		}
		if err := Validate(d); err != nil {
			t.Fatalf("parsed document does not validate: %v", err)
		}
		enc, err := json.Marshal(d)
		if err != nil {
			t.Fatal(err)
		}
		d2, err := Parse(enc)
		if err != nil {
			t.Fatalf("Parse(Marshal(doc)): %v\n%s", err, enc)
		}
		if !reflect.DeepEqual(d, d2) {
			t.Fatalf("round trip differs:\n%s", enc)
		}
		if c := d.Clone(); !reflect.DeepEqual(d, c) {
			t.Fatal("Clone differs")
		}
		for _, s := range d.Schemas {
			checkSchemaEncoding(t, s)
		}
		for _, fn := range d.Functions {
			for _, p := range fn.Parameters {
				checkSchemaEncoding(t, p.Schema)
			}
		}
	})
}

func FuzzInline(f *testing.F) {
	fuzzSeeds(f)
	f.Fuzz(func(t *testing.T, data []byte) {
		d, err := Parse(data)
		if err != nil {
			return
		}
		before := d.Clone()
		in, err := d.Inline()
		if !reflect.DeepEqual(d, before) {
			t.Fatal("Inline changed its receiver")
		}
		if err != nil {
			// A valid document has no unknown refs and no cycles.
			if !errors.Is(err, ErrTooLarge) {
				t.Fatalf("Inline of a valid document: %v", err)
			}
			return
		}
		for _, fn := range in.Functions {
			var schemas []*Schema
			for _, p := range fn.Parameters {
				schemas = append(schemas, p.Schema)
			}
			if fn.Return != nil {
				schemas = append(schemas, fn.Return.Schema)
			}
			if fn.Stream != nil {
				schemas = append(schemas, fn.Stream.Data.Schema)
			}
			for _, s := range schemas {
				if hasRef(s) {
					t.Fatalf("function %s still has a $ref", fn.Name)
				}
			}
		}
		if !reflect.DeepEqual(in.Schemas, d.Schemas) {
			t.Fatal("Inline changed Schemas")
		}
		if err := Validate(in); err != nil {
			t.Fatalf("inlined document does not validate: %v", err)
		}
	})
}

func hasRef(s *Schema) bool {
	if s == nil {
		return false
	}
	if s.Ref != "" || hasRef(s.Items) {
		return true
	}
	for _, p := range s.Properties {
		if hasRef(p) {
			return true
		}
	}
	return false
}

func FuzzParametersJSONSchema(f *testing.F) {
	fuzzSeeds(f)
	f.Fuzz(func(t *testing.T, data []byte) {
		d, err := Parse(data)
		if err != nil {
			return
		}
		for i := range d.Functions {
			fn := &d.Functions[i]
			js, err := ParametersJSONSchema(d, fn)
			if err != nil {
				if !errors.Is(err, ErrTooLarge) {
					t.Fatalf("ParametersJSONSchema(%s) of a valid document: %v", fn.Name, err)
				}
				continue
			}
			if _, err := json.Marshal(js); err != nil {
				t.Fatal(err)
			}
			// Converting back gives the inlined parameter schemas.
			s, err := FromJSONSchema(js)
			if err != nil {
				t.Fatalf("FromJSONSchema(ParametersJSONSchema(%s)): %v", fn.Name, err)
			}
			for _, p := range fn.Parameters {
				want, err := d.ResolveSchema(p.Schema)
				if err != nil {
					t.Fatal(err)
				}
				if p.Description != "" {
					want.Description = p.Description
				}
				if got := s.Properties[p.Name]; !reflect.DeepEqual(got, normalizeEmpty(want)) {
					t.Fatalf("parameter %s: got %s, want %s", p.Name, mustJSON(t, got), mustJSON(t, want))
				}
			}
		}
	})
}

// normalizeEmpty makes s look like FromJSONSchema output: empty
// Required/Enum are nil, object properties are non-nil.
func normalizeEmpty(s *Schema) *Schema {
	if s == nil {
		return nil
	}
	if len(s.Required) == 0 {
		s.Required = nil
	}
	if len(s.Enum) == 0 {
		s.Enum = nil
	}
	for _, p := range s.Properties {
		normalizeEmpty(p)
	}
	normalizeEmpty(s.Items)
	return s
}
