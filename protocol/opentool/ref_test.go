package opentool

import (
	"errors"
	"reflect"
	"strconv"
	"strings"
	"testing"
)

func TestRefName(t *testing.T) {
	tests := []struct {
		ref, name string
		ok        bool
	}{
		{"#/schemas/Id", "Id", true},
		{"#/schemas/a~1b~0c", "a/b~c", true},
		{"#/schemas/x.y z", "x.y z", true},
		{"#/schemas/", "", false},
		{"#/schemas/a/b", "", false},
		{"#/schemas/a~2", "", false},
		{"#/schemas/a~", "", false},
		{"#/definitions/Id", "", false},
		{"schemas/Id", "", false},
		{"", "", false},
	}
	for _, tt := range tests {
		name, ok := RefName(tt.ref)
		if name != tt.name || ok != tt.ok {
			t.Errorf("RefName(%q) = %q, %v; want %q, %v", tt.ref, name, ok, tt.name, tt.ok)
		}
		if tt.ok {
			if back := Ref(name); back != tt.ref {
				t.Errorf("Ref(%q) = %q, want %q", name, back, tt.ref)
			}
		}
	}
}

func TestInlineMockTool(t *testing.T) {
	d := parseFixture(t, "reference-mock-tool.json")
	before := d.Clone()
	in, err := d.Inline()
	if err != nil {
		t.Fatal(err)
	}
	if got := in.Function("read").Parameters[0].Schema; !reflect.DeepEqual(got, &Schema{Type: TypeInteger}) {
		t.Errorf("read.parameters[0].schema = %s, want {\"type\":\"integer\"}", mustJSON(t, got))
	}
	checks := map[string]*Schema{
		"count.return":            in.Function("count").Return.Schema,
		"read.return":             in.Function("read").Return.Schema,
		"sequentiallyRead.stream": in.Function("sequentiallyRead").Stream.Data.Schema,
		"update.parameters[1]":    in.Function("update").Parameters[1].Schema,
	}
	want := map[string]*Schema{
		"count.return":            {Type: TypeInteger},
		"read.return":             {Type: TypeString},
		"sequentiallyRead.stream": {Type: TypeString},
		"update.parameters[1]":    {Type: TypeString},
	}
	if !reflect.DeepEqual(checks, want) {
		t.Errorf("inlined = %s, want %s", mustJSON(t, checks), mustJSON(t, want))
	}
	if strings.Contains(mustJSON(t, in.Functions), "$ref") {
		t.Errorf("functions still have $ref: %s", mustJSON(t, in.Functions))
	}
	if !reflect.DeepEqual(in.Schemas, d.Schemas) {
		t.Error("Schemas must be kept")
	}
	if !reflect.DeepEqual(d, before) {
		t.Error("Inline changed its receiver")
	}
	// The inlined schemas are copies: not shared with Schemas or each other.
	in.Function("read").Parameters[0].Schema.Type = TypeString
	if in.Schemas["Id"].Type != TypeInteger || in.Function("delete").Parameters[0].Schema.Type != TypeInteger {
		t.Error("inlined schema shares memory")
	}
	if err := Validate(in); err != nil {
		t.Error(err)
	}
}

func TestInlineNested(t *testing.T) {
	d, err := Parse([]byte(withSchema(`{"type":"object","properties":{"tags":{"type":"array","items":{"$ref":"#/schemas/Tag","description":"a tag"}}}}`,
		`,"schemas":{"Tag":{"$ref":"#/schemas/Name"},"Name":{"type":"string","description":"a name","enum":["a","b"]}}`)))
	if err != nil {
		t.Fatal(err)
	}
	in, err := d.Inline()
	if err != nil {
		t.Fatal(err)
	}
	want := &Schema{Type: TypeObject, Properties: map[string]*Schema{
		"tags": {Type: TypeArray, Items: &Schema{Type: TypeString, Description: "a tag", Enum: []any{"a", "b"}}},
	}}
	if got := in.Functions[0].Parameters[0].Schema; !reflect.DeepEqual(got, want) {
		t.Errorf("got %s, want %s", mustJSON(t, got), mustJSON(t, want))
	}
}

func TestInlineErrors(t *testing.T) {
	str := &Schema{Type: TypeString}
	fnWith := func(s *Schema) []Function {
		return []Function{{Name: "ok", Parameters: []Parameter{{Name: "p", Schema: str}}}, {Name: "f", Parameters: []Parameter{{Name: "a", Schema: str}, {Name: "b", Schema: s}}}}
	}
	tests := []struct {
		name     string
		doc      *OpenTool
		sentinel error
		path     string
		cycle    []string
	}{
		{"unknown name", &OpenTool{Functions: fnWith(&Schema{Ref: "#/schemas/Nope"}), Schemas: map[string]*Schema{"Id": str}},
			ErrUnknownRef, "functions[1].parameters[1].schema.$ref", nil},
		{"no schemas", &OpenTool{Functions: fnWith(&Schema{Type: TypeArray, Items: &Schema{Ref: "#/schemas/Id"}})},
			ErrUnknownRef, "functions[1].parameters[1].schema.items.$ref", nil},
		{"bad form", &OpenTool{Functions: fnWith(&Schema{Ref: "#/definitions/Id"}), Schemas: map[string]*Schema{"Id": str}},
			ErrUnknownRef, "functions[1].parameters[1].schema.$ref", nil},
		{"nil target", &OpenTool{Functions: fnWith(&Schema{Ref: "#/schemas/Id"}), Schemas: map[string]*Schema{"Id": nil}},
			ErrUnknownRef, "functions[1].parameters[1].schema.$ref", nil},
		{"unknown inside schemas", &OpenTool{Functions: []Function{{Name: "f", Return: &Return{Schema: &Schema{Ref: "#/schemas/A"}}}},
			Schemas: map[string]*Schema{"A": {Type: TypeObject, Properties: map[string]*Schema{"x y": {Ref: "#/schemas/B"}}}}},
			ErrUnknownRef, `schemas.A.properties["x y"].$ref`, nil},
		{"self cycle", &OpenTool{Functions: []Function{{Name: "f", Stream: &Stream{Data: &Return{Schema: &Schema{Ref: "#/schemas/Node"}}}}},
			Schemas: map[string]*Schema{"Node": {Type: TypeObject, Properties: map[string]*Schema{"next": {Ref: "#/schemas/Node"}}}}},
			ErrRefCycle, "schemas.Node.properties.next.$ref", []string{"Node", "Node"}},
		{"long cycle", &OpenTool{Functions: []Function{{Name: "f", Return: &Return{Schema: &Schema{Ref: "#/schemas/A"}}}},
			Schemas: map[string]*Schema{"A": {Ref: "#/schemas/B"}, "B": {Type: TypeArray, Items: &Schema{Ref: "#/schemas/C"}}, "C": {Ref: "#/schemas/B"}}},
			ErrRefCycle, "schemas.C.$ref", []string{"B", "C", "B"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out, err := tt.doc.Inline()
			if out != nil || !errors.Is(err, tt.sentinel) {
				t.Fatalf("Inline = %v, %v; want error %v", out, err, tt.sentinel)
			}
			var re *RefError
			if !errors.As(err, &re) {
				t.Fatalf("error %T is not a *RefError", err)
			}
			if re.Path != tt.path || !reflect.DeepEqual(re.Cycle, tt.cycle) {
				t.Errorf("path %q cycle %v, want %q %v", re.Path, re.Cycle, tt.path, tt.cycle)
			}
			if !strings.Contains(err.Error(), tt.path) {
				t.Errorf("message %q lacks the path", err)
			}
		})
	}
}

func TestRefErrorMessages(t *testing.T) {
	tests := []struct {
		err  *RefError
		want string
	}{
		{&RefError{Path: "schemas.B.$ref", Ref: "#/schemas/A", Cycle: []string{"A", "B", "A"}, Err: ErrRefCycle}, "opentool: schemas.B.$ref: schema reference cycle A -> B -> A"},
		{&RefError{Path: "functions[0].return.schema.$ref", Ref: "#/schemas/X", Err: ErrUnknownRef}, `opentool: functions[0].return.schema.$ref: unknown schema reference "#/schemas/X"`},
		{&RefError{Ref: "#/schemas/X", Err: ErrUnknownRef}, `opentool: $: unknown schema reference "#/schemas/X"`},
	}
	for _, tt := range tests {
		if got := tt.err.Error(); got != tt.want {
			t.Errorf("got %q, want %q", got, tt.want)
		}
	}
}

// TestInlineTooLarge: each schema refers to the next twice, so 30 schemas
// would expand to 2^30 copies.
func TestInlineTooLarge(t *testing.T) {
	d := &OpenTool{OpenTool: Version, Info: Info{Title: "t", Version: "1"}, Schemas: map[string]*Schema{"S29": {Type: TypeString}}}
	for i := 28; i >= 0; i-- {
		next := Ref("S" + strconv.Itoa(i+1))
		d.Schemas["S"+strconv.Itoa(i)] = &Schema{Type: TypeObject, Properties: map[string]*Schema{"a": {Ref: next}, "b": {Ref: next}}}
	}
	d.Functions = []Function{{Name: "f", Description: "d", Parameters: []Parameter{{Name: "p", Schema: &Schema{Ref: "#/schemas/S0"}, Required: true}}}}
	if err := Validate(d); err != nil {
		t.Fatalf("the document is valid: %v", err)
	}
	if _, err := d.Inline(); !errors.Is(err, ErrTooLarge) {
		t.Errorf("Inline error = %v, want ErrTooLarge", err)
	}
	if _, err := ParametersJSONSchema(d, &d.Functions[0]); !errors.Is(err, ErrTooLarge) {
		t.Errorf("ParametersJSONSchema error = %v, want ErrTooLarge", err)
	}
}

func TestResolveSchema(t *testing.T) {
	d := parseFixture(t, "reference-mock-tool.json")
	tests := []struct {
		name string
		in   *Schema
		want *Schema
		path string // error path; "" for success
	}{
		{"nil", nil, nil, ""},
		{"plain", &Schema{Type: TypeString, Enum: []any{"a"}}, &Schema{Type: TypeString, Enum: []any{"a"}}, ""},
		{"ref with description", &Schema{Ref: "#/schemas/Id", Description: "the id"}, &Schema{Type: TypeInteger, Description: "the id"}, ""},
		{"nested", &Schema{Type: TypeArray, Items: &Schema{Ref: "#/schemas/Text"}}, &Schema{Type: TypeArray, Items: &Schema{Type: TypeString}}, ""},
		{"unknown at root", &Schema{Ref: "#/schemas/X"}, nil, "$ref"},
		{"unknown nested", &Schema{Type: TypeObject, Properties: map[string]*Schema{"a": {Type: TypeArray, Items: &Schema{Ref: "#/schemas/X"}}}}, nil, "properties.a.items.$ref"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := d.ResolveSchema(tt.in)
			if tt.path != "" {
				var re *RefError
				if !errors.As(err, &re) || re.Path != tt.path || !errors.Is(err, ErrUnknownRef) {
					t.Fatalf("error = %v, want *RefError at %q", err, tt.path)
				}
				return
			}
			if err != nil || !reflect.DeepEqual(got, tt.want) {
				t.Fatalf("got %s, %v; want %s", mustJSON(t, got), err, mustJSON(t, tt.want))
			}
		})
	}
	if _, err := (*OpenTool)(nil).ResolveSchema(&Schema{Ref: "#/schemas/Id"}); !errors.Is(err, ErrUnknownRef) {
		t.Errorf("nil doc: %v", err)
	}
	if out, err := (*OpenTool)(nil).Inline(); out != nil || err != nil {
		t.Errorf("nil Inline = %v, %v", out, err)
	}
}
