package opentool

import (
	"encoding/json"
	"errors"
	"reflect"
	"strconv"
	"strings"
	"testing"
)

// byteSource turns fuzz bytes into choices (0 once the bytes run out).
type byteSource struct {
	data []byte
	i    int
}

func (s *byteSource) n(k int) int {
	if s.i >= len(s.data) {
		return 0
	}
	s.i++
	return int(s.data[s.i-1]) % k
}

// genNames are the schema names genDoc uses; "Nope" is never defined.
var genNames = []string{"A", "B", "C", "a/b", "x y", "", "Nope"}

// genDoc builds a document from fuzz bytes: mostly valid, but with unknown
// and malformed references, cycles, mismatched enums and undeclared
// required names when the bytes say so. Random bytes rarely parse as a
// valid document, so this is what reaches Inline and ParametersJSONSchema.
func genDoc(data []byte) *OpenTool {
	src := &byteSource{data: data}
	d := &OpenTool{OpenTool: Version, Info: Info{Title: "t", Version: "1"}}
	for i, n := 0, src.n(5); i < n; i++ {
		if d.Schemas == nil {
			d.Schemas = map[string]*Schema{}
		}
		d.Schemas[genNames[src.n(len(genNames)-1)]] = genSchema(src, 0)
	}
	for i, n := 0, 1+src.n(3); i < n; i++ {
		f := Function{Name: "f" + strconv.Itoa(i), Description: "d", Parameters: []Parameter{}}
		for j, np := 0, src.n(4); j < np; j++ {
			p := Parameter{Name: "p" + strconv.Itoa(j), Schema: genSchema(src, 0), Required: src.n(2) == 0}
			if src.n(3) == 0 {
				p.Description = "param"
			}
			f.Parameters = append(f.Parameters, p)
		}
		f.AdditionalParameters = genBool(src)
		switch src.n(3) {
		case 1:
			f.Return = &Return{Name: "r", Schema: genSchema(src, 0)}
		case 2:
			f.Stream = &Stream{Data: &Return{Name: "s", Schema: genSchema(src, 0)}}
		}
		d.Functions = append(d.Functions, f)
	}
	return d
}

func genSchema(src *byteSource, depth int) *Schema {
	c := src.n(8)
	if depth >= 4 {
		c %= 4 // only leaves further down
	}
	s := &Schema{}
	if src.n(4) == 0 {
		s.Description = "desc"
	}
	switch c {
	case 0:
		s.Type = TypeBoolean
		if src.n(3) == 0 {
			s.Enum = []any{true}
		}
	case 1:
		s.Type = TypeInteger
		if src.n(3) == 0 {
			s.Enum = []any{1.0, float64(src.n(4)) + 0.5*float64(src.n(2))} // x.5: invalid
		}
	case 2:
		s.Type = TypeNumber
		if src.n(3) == 0 {
			s.Enum = []any{1.5, -2.0}
		}
	case 3:
		s.Type = TypeString
		switch src.n(4) {
		case 0:
			s.Enum = []any{"a", "b"}
		case 1:
			s.Enum = []any{"a", 1.0} // invalid
		}
	case 4, 5:
		s.Type = TypeObject
		for i, n := 0, src.n(4); i < n; i++ {
			if s.Properties == nil {
				s.Properties = map[string]*Schema{}
			}
			name := []string{"a", "b", "c d", ""}[src.n(4)]
			s.Properties[name] = genSchema(src, depth+1)
			if src.n(2) == 0 {
				s.Required = append(s.Required, name)
			}
		}
		if src.n(8) == 0 {
			s.Required = append(s.Required, "undeclared") // invalid
		}
		s.AdditionalProperties = genBool(src)
	case 6:
		s.Type = TypeArray
		s.Items = genSchema(src, depth+1)
	case 7:
		s.Ref = Ref(genNames[src.n(len(genNames))])
	}
	if src.n(16) == 0 {
		s.AdditionalProperties = new(false) // invalid unless type object
	}
	return s
}

// genBool returns nil, false or true.
func genBool(src *byteSource) *bool {
	switch src.n(3) {
	case 1:
		return new(false)
	case 2:
		return new(true)
	}
	return nil
}

// faultAt reports whether fs has a fault at path whose message starts with
// prefix.
func faultAt(fs []Fault, path, prefix string) bool {
	for _, f := range fs {
		if (path == "" || f.Path == path) && strings.HasPrefix(f.Message, prefix) {
			return true
		}
	}
	return false
}

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
		withSchema(`{"type":"object","properties":{},"additionalProperties":false}`, ``),
		withSchema(`{"type":"string","additionalProperties":1}`, ``),
		doc(`{"name":"f","description":"d","parameters":[],"additionalParameters":false}`, ``),
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
		checkInline(t, genDoc(data))
		if d, err := Parse(data); err == nil {
			checkInline(t, d)
		}
	})
}

// checkInline checks Inline against Validate: a valid document inlines
// (unless too large) into a valid document without "$ref" in functions; a
// *RefError is only possible for an invalid document, and the validator has
// a fault at the same "$ref" (unknown) or a cycle fault.
func checkInline(t *testing.T, d *OpenTool) {
	verr := Validate(d)
	faults := faultsOf(t, verr)
	before := d.Clone()
	in, err := d.Inline()
	if !reflect.DeepEqual(d, before) {
		t.Fatal("Inline changed its receiver")
	}
	var re *RefError
	switch {
	case err == nil:
	case errors.Is(err, ErrTooLarge):
		return
	case !errors.As(err, &re):
		t.Fatalf("Inline error %v (%T) is not a *RefError", err, err)
	case verr == nil:
		t.Fatalf("Inline of a valid document: %v\n%s", err, mustJSON(t, d))
	case errors.Is(err, ErrUnknownRef):
		if !faultAt(faults, re.Path, "unknown schema") && !faultAt(faults, re.Path, "must be of the form") {
			t.Fatalf("Inline: %v; validator has no fault there:%s", err, faultLines(faults))
		}
		return
	case errors.Is(err, ErrRefCycle):
		if !faultAt(faults, "", "$ref cycle: ") {
			t.Fatalf("Inline: %v; validator found no cycle:%s", err, faultLines(faults))
		}
		return
	default:
		t.Fatalf("Inline error %v wraps no sentinel", err)
	}
	if verr != nil {
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
		checkParametersJSONSchema(t, genDoc(data))
		if d, err := Parse(data); err == nil {
			checkParametersJSONSchema(t, d)
		}
	})
}

// checkParametersJSONSchema: for a valid document every function converts
// (unless too large), and FromJSONSchema gives back the resolved parameter
// schemas; for an invalid one errors wrap a sentinel.
func checkParametersJSONSchema(t *testing.T, d *OpenTool) {
	if Validate(d) != nil {
		for i := range d.Functions {
			js, err := ParametersJSONSchema(d, &d.Functions[i])
			if err != nil {
				if !errors.Is(err, ErrUnknownRef) && !errors.Is(err, ErrRefCycle) && !errors.Is(err, ErrTooLarge) && !errors.Is(err, ErrInvalidDocument) {
					t.Fatalf("ParametersJSONSchema error %v wraps no sentinel", err)
				}
				continue
			}
			if _, err := json.Marshal(js); err != nil {
				t.Fatal(err)
			}
			if _, err := FromJSONSchema(js); err != nil && !errors.Is(err, ErrUnsupportedSchema) {
				t.Fatalf("FromJSONSchema(%s): %v", mustJSON(t, js), err)
			}
		}
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
		if !reflect.DeepEqual(s.AdditionalProperties, fn.AdditionalParameters) {
			t.Fatalf("parameters object of %s: additionalProperties %v, additionalParameters %v", fn.Name, s.AdditionalProperties, fn.AdditionalParameters)
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
}

// FuzzFromJSONSchema: any JSON object either converts into a schema that
// validates and survives JSONSchema -> FromJSONSchema unchanged, or gives
// an error wrapping a sentinel.
func FuzzFromJSONSchema(f *testing.F) {
	for _, s := range []string{
		`{"type":"object","properties":{"a":{"type":["string","null"],"enum":["x",null]},"b":{"type":"array","items":{"$ref":"#/$defs/B"}}},"required":["a"],"$defs":{"B":{"type":"integer","const":3}}}`,
		`{"$ref":"#/$defs/N","$defs":{"N":{"type":"object","properties":{"n":{"$ref":"#/$defs/N"}}}}}`,
		`{"oneOf":[{"type":"null"},{"enum":[1,2.5]}]}`,
		`{"type":"array","items":[{"type":"string"}]}`,
		`{"anyOf":[{"type":"string"},{"type":"number"}]}`,
		`{"properties":{"x":true},"allOf":[]}`,
		`{"type":"object","properties":{"m":{"type":"object","additionalProperties":{"type":"string"}}},"additionalProperties":false}`,
		`{"type":"string","additionalProperties":true}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		var js map[string]any
		if json.Unmarshal(data, &js) != nil {
			return
		}
		s, err := FromJSONSchema(js)
		if err != nil {
			if s != nil {
				t.Fatal("schema and error")
			}
			if !errors.Is(err, ErrUnsupportedSchema) && !errors.Is(err, ErrUnknownRef) && !errors.Is(err, ErrRefCycle) && !errors.Is(err, ErrTooLarge) {
				t.Fatalf("error %v wraps no sentinel", err)
			}
			return
		}
		if err := ValidateJSON([]byte(withSchema(mustJSON(t, s), ``))); err != nil {
			t.Fatalf("FromJSONSchema(%s) = %s, invalid: %v", data, mustJSON(t, s), err)
		}
		again, err := FromJSONSchema(s.JSONSchema())
		if err != nil || !reflect.DeepEqual(again, s) {
			t.Fatalf("JSONSchema round trip: %s -> %s, %v", mustJSON(t, s), mustJSON(t, again), err)
		}
	})
}

// normalizeEmpty makes s look like FromJSONSchema output: empty
// Required/Enum are nil, object properties are non-nil.
func normalizeEmpty(s *Schema) *Schema {
	if s == nil {
		return nil
	}
	if s.Type == TypeObject && s.Properties == nil {
		s.Properties = map[string]*Schema{}
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
