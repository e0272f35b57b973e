package opentool

import (
	"errors"
	"math"
	"strings"
	"testing"
)

// head is the valid start of a test document.
const head = `"opentool":"1.1.0","info":{"title":"t","version":"1"}`

// doc returns a document with the given function objects (comma-separated)
// and extra root members (",..." or "").
func doc(functions, extra string) string {
	return `{` + head + `,"functions":[` + functions + `]` + extra + `}`
}

// fn returns a function object named name with the given parameter objects.
func fn(name, params string) string {
	return `{"name":"` + name + `","description":"d","parameters":[` + params + `]}`
}

// param returns a parameter object with the given schema.
func param(name, schema string) string {
	return `{"name":"` + name + `","schema":` + schema + `,"required":true}`
}

// withSchema is a document whose only parameter has the given schema.
func withSchema(schema, extra string) string {
	return doc(fn("f", param("p", schema)), extra)
}

// P is the path of withSchema's schema.
const P = "functions[0].parameters[0].schema"

func TestFixturesValid(t *testing.T) {
	for _, name := range fixtureNames {
		t.Run(name, func(t *testing.T) {
			data := readFixture(t, name)
			if fs := faultsOf(t, ValidateJSON(data)); fs != nil {
				t.Fatalf("ValidateJSON faults:%s", faultLines(fs))
			}
			doc, err := Parse(data)
			if err != nil {
				t.Fatalf("Parse: %v", err)
			}
			if fs := faultsOf(t, Validate(doc)); fs != nil {
				t.Fatalf("Validate faults:%s", faultLines(fs))
			}
		})
	}
}

func TestValidateJSONFaults(t *testing.T) {
	S := `,"schemas":{"Id":{"type":"integer"}}`
	tests := []struct {
		name string
		doc  string
		want []string // "path: message", in document order; none = valid
	}{
		// Not a JSON object.
		{"empty input", ``, []string{"$: invalid JSON at byte offset 0: unexpected end of JSON input"}},
		{"truncated", `{"opentool":`, []string{"$: invalid JSON at byte offset 12: unexpected end of JSON input"}},
		{"bad character", `{"opentool" "1"}`, []string{"$: invalid JSON at byte offset 13: invalid character '\"' after object key"}},
		{"trailing data", `{} x`, []string{"$: invalid JSON at byte offset 4: invalid character 'x' after top-level value"}},
		{"root array", `[]`, []string{"$: must be an object"}},
		{"root null", `null`, []string{"$: must be an object"}},

		// OpenTool object.
		{"empty object", `{}`, []string{"opentool: required", "info: required", "functions: required"}},
		{"opentool not string", `{"opentool":1,"info":{"title":"t","version":"1"},"functions":[]}`, []string{"opentool: must be a string"}},
		{"opentool empty", `{"opentool":"","info":{"title":"t","version":"1"},"functions":[]}`, []string{"opentool: must not be empty"}},
		{"opentool null", `{"opentool":null,"info":{"title":"t","version":"1"},"functions":[]}`, []string{"opentool: required"}},
		{"minimal valid", doc(``, ``), nil},
		{"unknown fields allowed", `{"x-ext":1,` + head[:len(head)-1] + `,"x":[1]},"functions":[{"name":"f","description":"d","parameters":[{"name":"p","schema":{"type":"string","format":"uri"},"required":false,"deprecated":true}],"x":{}}],"future":{}}`, nil},
		{"optional fields null", `{` + head[:len(head)-1] + `,"description":null},"server":null,"functions":[{"name":"f","description":"d","parameters":[],"return":null,"stream":null}],"schemas":null}`, nil},

		// Info object.
		{"info not object", `{"opentool":"1","info":"t","functions":[]}`, []string{"info: must be an object"}},
		{"unsupported version", `{"opentool":"9.9","info":{"title":"t","version":"1"},"functions":[]}`, []string{`opentool: version "9.9" is not supported: this host reads OpenTool 1.x (1.0.0, 1.1.0)`}},
		{"info empty", `{"opentool":"1","info":{},"functions":[]}`, []string{"info.title: required", "info.version: required"}},
		{"info wrong types", `{"opentool":"1","info":{"title":1,"description":2,"version":true},"functions":[]}`, []string{"info.title: must be a string", "info.description: must be a string", "info.version: must be a string"}},

		// Server object.
		{"server not object", doc(``, `,"server":"http://x"`), []string{"server: must be an object"}},
		{"server without url", doc(``, `,"server":{"description":"d"}`), []string{"server.url: required"}},
		{"server wrong types", doc(``, `,"server":{"url":1,"description":[]}`), []string{"server.url: must be a string", "server.description: must be a string"}},
		{"server valid", doc(``, `,"server":{"url":"http://127.0.0.1:9627/opentool","description":"d"}`), nil},

		// functions.
		{"functions not array", `{` + head + `,"functions":{}}`, []string{"functions: must be an array"}},
		{"function not object", doc(`1`, ``), []string{"functions[0]: must be an object"}},
		{"function empty", doc(`{}`, ``), []string{"functions[0].name: required", "functions[0].description: required", "functions[0].parameters: required"}},
		{"function wrong types", doc(`{"name":1,"description":2,"parameters":{}}`, ``), []string{"functions[0].name: must be a string", "functions[0].description: must be a string", "functions[0].parameters: must be an array"}},
		{"function name bad char", doc(fn("get weather", ``), ``), []string{`functions[0].name: must match ^[a-zA-Z0-9_-]{1,64}$ (got "get weather")`}},
		{"function name empty", doc(fn("", ``), ``), []string{`functions[0].name: must match ^[a-zA-Z0-9_-]{1,64}$ (got "")`}},
		{"function name 64", doc(fn(strings.Repeat("a", 64), ``), ``), nil},
		{"function name 65", doc(fn(strings.Repeat("a", 65), ``), ``), []string{`functions[0].name: must match ^[a-zA-Z0-9_-]{1,64}$ (got "` + strings.Repeat("a", 65) + `")`}},
		{"function name duplicate", doc(fn("a", ``)+","+fn("x", ``)+","+fn("b", ``)+","+fn("c", ``)+","+fn("x", ``)+","+fn("x", ``), ``), []string{
			`functions[4].name: duplicate function name "x" (first at functions[1])`,
			`functions[5].name: duplicate function name "x" (first at functions[1])`}},
		{"parameter not object", doc(fn("f", `"p"`), ``), []string{"functions[0].parameters[0]: must be an object"}},

		// return and stream.
		{"return not object", doc(`{"name":"f","description":"d","parameters":[],"return":"x"}`, ``), []string{"functions[0].return: must be an object"}},
		{"return empty", doc(`{"name":"f","description":"d","parameters":[],"return":{}}`, ``), []string{"functions[0].return.name: required", "functions[0].return.schema: required"}},
		{"return wrong types", doc(`{"name":"f","description":"d","parameters":[],"return":{"name":1,"description":2,"schema":3}}`, ``), []string{"functions[0].return.name: must be a string", "functions[0].return.description: must be a string", "functions[0].return.schema: must be an object"}},
		{"return bad schema", doc(`{"name":"f","description":"d","parameters":[],"return":{"name":"r","schema":{"type":"array"}}}`, ``), []string{"functions[0].return.schema.items: required when type is array"}},
		{"stream not object", doc(`{"name":"f","description":"d","parameters":[],"stream":[]}`, ``), []string{"functions[0].stream: must be an object"}},
		{"stream without data", doc(`{"name":"f","description":"d","parameters":[],"stream":{}}`, ``), []string{"functions[0].stream.data: required"}},
		{"stream data not object", doc(`{"name":"f","description":"d","parameters":[],"stream":{"data":"x"}}`, ``), []string{"functions[0].stream.data: must be an object"}},
		{"stream data invalid", doc(`{"name":"f","description":"d","parameters":[],"stream":{"data":{"description":"x","schema":{"type":"blob"}}}}`, ``), []string{
			"functions[0].stream.data.name: required",
			`functions[0].stream.data.schema.type: must be one of boolean, integer, number, string, array, object (got "blob")`}},

		// Parameter object.
		{"parameter empty", doc(fn("f", `{}`), ``), []string{"functions[0].parameters[0].name: required", "functions[0].parameters[0].schema: required", "functions[0].parameters[0].required: required"}},
		{"parameter wrong types", doc(fn("f", `{"name":1,"description":2,"schema":{"type":"string"},"required":"yes"}`), ``), []string{"functions[0].parameters[0].name: must be a string", "functions[0].parameters[0].description: must be a string", "functions[0].parameters[0].required: must be a boolean"}},
		{"parameter name empty", doc(fn("f", param("", `{"type":"string"}`)), ``), []string{"functions[0].parameters[0].name: must not be empty"}},
		{"parameter name duplicate", doc(fn("f", param("a", `{"type":"string"}`)+","+param("b", `{"type":"string"}`)+","+param("a", `{"type":"integer"}`)), ``), []string{
			`functions[0].parameters[2].name: duplicate parameter name "a" (first at functions[0].parameters[0])`}},
		{"same parameter name in two functions", doc(fn("f", param("a", `{"type":"string"}`))+","+fn("g", param("a", `{"type":"string"}`)), ``), nil},

		// Schema object.
		{"schema not object", withSchema(`"string"`, ``), []string{P + ": must be an object"}},
		{"schema without type", withSchema(`{"description":"d"}`, ``), []string{P + ".type: required"}},
		{"schema type not string", withSchema(`{"type":["string","null"]}`, ``), []string{P + ".type: must be a string"}},
		{"schema unknown type", withSchema(`{"type":"null"}`, ``), []string{P + `.type: must be one of boolean, integer, number, string, array, object (got "null")`}},
		{"schema description not string", withSchema(`{"type":"string","description":false}`, ``), []string{P + ".description: must be a string"}},
		{"all types valid", withSchema(`{"type":"object","properties":{"b":{"type":"boolean"},"i":{"type":"integer"},"n":{"type":"number"},"s":{"type":"string"},"a":{"type":"array","items":{"type":"string"}},"o":{"type":"object","properties":{}}}}`, ``), nil},
		{"object without properties", withSchema(`{"type":"object"}`, ``), []string{P + ".properties: required when type is object"}},
		{"properties not object", withSchema(`{"type":"object","properties":[]}`, ``), []string{P + ".properties: must be an object"}},
		{"properties on string", withSchema(`{"type":"string","properties":{}}`, ``), []string{P + ".properties: only allowed when type is object"}},
		{"property invalid", withSchema(`{"type":"object","properties":{"a":{"type":"string"},"b":{},"a b":{"type":1}}}`, ``), []string{P + ".properties.b.type: required", P + `.properties["a b"].type: must be a string`}},
		{"properties checked when type missing", withSchema(`{"properties":{"a":{}}}`, ``), []string{P + ".type: required", P + ".properties.a.type: required"}},
		{"array without items", doc(fn("a", ``)+","+fn("b", ``)+","+fn("c", ``)+","+fn("d", param("p", `{"type":"array"}`)), ``), []string{"functions[3].parameters[0].schema.items: required when type is array"}},
		{"items on object", withSchema(`{"type":"object","properties":{},"items":{"type":"string"}}`, ``), []string{P + ".items: only allowed when type is array"}},
		{"items not object", withSchema(`{"type":"array","items":[{"type":"string"}]}`, ``), []string{P + ".items: must be an object"}},
		{"items nested", withSchema(`{"type":"array","items":{"type":"array","items":{"type":"object"}}}`, ``), []string{P + ".items.items.properties: required when type is object"}},
		{"enum valid", withSchema(`{"type":"object","properties":{"s":{"type":"string","enum":["a","b"]},"i":{"type":"integer","enum":[1,-2,3.0,1e2,100e-2]},"n":{"type":"number","enum":[1.5,-2,1e-3]},"b":{"type":"boolean","enum":[true,false]}}}`, ``), nil},
		{"enum not array", withSchema(`{"type":"string","enum":"a"}`, ``), []string{P + ".enum: must be an array"}},
		{"enum empty", withSchema(`{"type":"string","enum":[]}`, ``), []string{P + ".enum: must not be empty"}},
		{"enum on array", withSchema(`{"type":"array","items":{"type":"string"},"enum":[["a"]]}`, ``), []string{P + ".enum: not allowed when type is array"}},
		{"enum on object", withSchema(`{"type":"object","properties":{},"enum":[{}]}`, ``), []string{P + ".enum: not allowed when type is object"}},
		{"enum string mismatch", withSchema(`{"type":"string","enum":["a",1,null,true]}`, ``), []string{P + ".enum[1]: must be a string", P + ".enum[2]: must be a string", P + ".enum[3]: must be a string"}},
		{"enum integer mismatch", withSchema(`{"type":"integer","enum":[1,1.5,"2",1e-1,true]}`, ``), []string{P + ".enum[1]: must be an integer", P + ".enum[2]: must be an integer", P + ".enum[3]: must be an integer", P + ".enum[4]: must be an integer"}},
		{"enum number mismatch", withSchema(`{"type":"number","enum":[1.5,"1.5",1e400]}`, ``), []string{P + ".enum[1]: must be a number", P + ".enum[2]: number out of range"}},
		{"enum boolean mismatch", withSchema(`{"type":"boolean","enum":[true,0,"false"]}`, ``), []string{P + ".enum[1]: must be a boolean", P + ".enum[2]: must be a boolean"}},
		{"required valid", withSchema(`{"type":"object","properties":{"a":{"type":"string"}},"required":["a"]}`, ``), nil},
		{"required not array", withSchema(`{"type":"object","properties":{"a":{"type":"string"}},"required":"a"}`, ``), []string{P + ".required: must be an array"}},
		{"required on string", withSchema(`{"type":"string","required":["a"]}`, ``), []string{P + ".required: only allowed when type is object"}},
		{"required entries", withSchema(`{"type":"object","properties":{"a":{"type":"string"}},"required":["a",1,"b"]}`, ``), []string{P + ".required[1]: must be a string", P + `.required[2]: "b" is not a declared property`}},

		// References.
		{"ref valid", withSchema(`{"$ref":"#/schemas/Id","description":"an id"}`, S), nil},
		{"ref not string", withSchema(`{"$ref":1}`, S), []string{P + ".$ref: must be a string"}},
		{"ref other form", withSchema(`{"$ref":"#/definitions/Id"}`, S), []string{P + `.$ref: must be of the form "#/schemas/Name" (got "#/definitions/Id")`}},
		{"ref empty name", withSchema(`{"$ref":"#/schemas/"}`, S), []string{P + `.$ref: must be of the form "#/schemas/Name" (got "#/schemas/")`}},
		{"ref too deep", withSchema(`{"$ref":"#/schemas/Id/type"}`, S), []string{P + `.$ref: must be of the form "#/schemas/Name" (got "#/schemas/Id/type")`}},
		{"ref external", withSchema(`{"$ref":"other.json#/schemas/Id"}`, S), []string{P + `.$ref: must be of the form "#/schemas/Name" (got "other.json#/schemas/Id")`}},
		{"ref unknown", withSchema(`{"$ref":"#/schemas/Nope"}`, S), []string{P + `.$ref: unknown schema "Nope"`}},
		{"ref without schemas", withSchema(`{"$ref":"#/schemas/Id"}`, ``), []string{P + `.$ref: unknown schema "Id"`}},
		{"ref with siblings", withSchema(`{"$ref":"#/schemas/Id","type":"integer","properties":{},"items":{},"enum":[1],"required":[],"description":"ok"}`, S), []string{
			P + ".type: not allowed with $ref", P + ".properties: not allowed with $ref", P + ".items: not allowed with $ref", P + ".enum: not allowed with $ref", P + ".required: not allowed with $ref"}},
		{"ref escaped name", withSchema(`{"$ref":"#/schemas/a~1b~0c"}`, `,"schemas":{"a/b~c":{"type":"string"}}`), nil},
		{"ref nested in items", withSchema(`{"type":"array","items":{"$ref":"#/schemas/Nope"}}`, S), []string{P + `.items.$ref: unknown schema "Nope"`}},

		// schemas.
		{"schemas not object", doc(``, `,"schemas":[]`), []string{"schemas: must be an object"}},
		{"schemas empty name", doc(``, `,"schemas":{"":{"type":"string"}}`), []string{`schemas[""]: name must not be empty`}},
		{"schemas entry invalid", doc(``, `,"schemas":{"Good":{"type":"string"},"Bad":{"type":"array"},"a.b":{}}`), []string{"schemas.Bad.items: required when type is array", `schemas["a.b"].type: required`}},
		{"schemas entry not object", doc(``, `,"schemas":{"X":"string"}`), []string{"schemas.X: must be an object"}},
		{"schemas ref chain", doc(``, `,"schemas":{"A":{"$ref":"#/schemas/B"},"B":{"type":"array","items":{"$ref":"#/schemas/C"}},"C":{"type":"string"}}`), nil},
		{"schemas self cycle", doc(``, `,"schemas":{"Node":{"type":"object","properties":{"next":{"$ref":"#/schemas/Node"}}}}`), []string{"schemas.Node.properties.next.$ref: $ref cycle: Node -> Node"}},
		{"schemas cycle", doc(``, `,"schemas":{"A":{"$ref":"#/schemas/B"},"B":{"type":"array","items":{"$ref":"#/schemas/C"}},"C":{"$ref":"#/schemas/A"}}`), []string{"schemas.C.$ref: $ref cycle: A -> B -> C -> A"}},
		{"schemas two cycles", doc(``, `,"schemas":{"A":{"$ref":"#/schemas/A"},"B":{"$ref":"#/schemas/C"},"C":{"$ref":"#/schemas/B"}}`), []string{"schemas.A.$ref: $ref cycle: A -> A", "schemas.C.$ref: $ref cycle: B -> C -> B"}},
		{"ref to cyclic schema", withSchema(`{"$ref":"#/schemas/A"}`, `,"schemas":{"A":{"$ref":"#/schemas/A"}}`), []string{"schemas.A.$ref: $ref cycle: A -> A"}},
		{"duplicate key last wins", `{"opentool":1,"opentool":"1.1.0","info":{"title":"t","version":"1"},"functions":[]}`, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := faultsOf(t, ValidateJSON([]byte(tt.doc)))
			want := faults(tt.want...)
			if !equalFaults(got, want) {
				t.Errorf("ValidateJSON(%s)\ngot:%s\nwant:%s", tt.doc, faultLines(got), faultLines(want))
			}
			// Parse reports the same faults, and a document only on success.
			d, err := Parse([]byte(tt.doc))
			if got := faultsOf(t, err); !equalFaults(got, want) {
				t.Errorf("Parse faults:%s\nwant:%s", faultLines(got), faultLines(want))
			}
			if (d == nil) != (len(want) > 0) {
				t.Errorf("Parse returned doc %v with %d faults", d != nil, len(want))
			}
		})
	}
}

func TestValidateJSONReportsAllFaultsInDocumentOrder(t *testing.T) {
	data := `{
  "info": {"title": 1},
  "functions": [
    {"name": "ok", "description": "d", "parameters": [
      {"name": "a", "schema": {"type": "object", "properties": {"x": {"type": "array"}}, "required": ["y"]}, "required": true},
      {"name": "a", "schema": {"$ref": "#/schemas/Missing"}}
    ]},
    {"name": "bad name", "parameters": [], "return": {"name": "r", "schema": {"type": "integer", "enum": [1.5]}}},
    {"name": "ok", "description": "d", "parameters": [], "stream": {"data": {"name": "s", "schema": {"$ref": "#/schemas/Loop"}}}}
  ],
  "schemas": {"Loop": {"type": "array", "items": {"$ref": "#/schemas/Loop"}}, "": {"type": "string"}}
}`
	want := faults(
		"opentool: required",
		"info.version: required", // missing fields sort at the start of their object
		"info.title: must be a string",
		"functions[0].parameters[0].schema.properties.x.items: required when type is array",
		`functions[0].parameters[0].schema.required[0]: "y" is not a declared property`,
		"functions[0].parameters[1].required: required",
		`functions[0].parameters[1].name: duplicate parameter name "a" (first at functions[0].parameters[0])`,
		`functions[0].parameters[1].schema.$ref: unknown schema "Missing"`,
		"functions[1].description: required",
		`functions[1].name: must match ^[a-zA-Z0-9_-]{1,64}$ (got "bad name")`,
		"functions[1].return.schema.enum[0]: must be an integer",
		`functions[2].name: duplicate function name "ok" (first at functions[0])`,
		"schemas.Loop.items.$ref: $ref cycle: Loop -> Loop",
		`schemas[""]: name must not be empty`,
	)
	err := ValidateJSON([]byte(data))
	got := faultsOf(t, err)
	if !equalFaults(got, want) {
		t.Fatalf("got:%s\nwant:%s", faultLines(got), faultLines(want))
	}
	var lines []string
	for _, f := range want {
		lines = append(lines, f.String())
	}
	if err.Error() != strings.Join(lines, "\n") {
		t.Errorf("Error() = %q, want the faults one per line", err.Error())
	}
}

func TestFaultAndValidationError(t *testing.T) {
	f := Fault{Path: "functions[3].parameters[0].schema.items", Message: "required when type is array"}
	if got, want := f.String(), "functions[3].parameters[0].schema.items: required when type is array"; got != want {
		t.Errorf("String() = %q, want %q", got, want)
	}
	if got := (Fault{Message: "m"}).String(); got != "m" {
		t.Errorf("String() without path = %q", got)
	}
	var err error = &ValidationError{Faults: faults("a: x", "b: y")}
	if err.Error() != "a: x\nb: y" {
		t.Errorf("Error() = %q", err.Error())
	}
	if !errors.Is(err, ErrInvalidDocument) || errors.Is(err, ErrUnknownRef) {
		t.Error("ValidationError must match ErrInvalidDocument only")
	}
	if !errors.Is(fmtWrap(err), ErrInvalidDocument) {
		t.Error("wrapped ValidationError must match ErrInvalidDocument")
	}
	if (&ValidationError{}).Error() == "" {
		t.Error("empty ValidationError has an empty message")
	}
}

func fmtWrap(err error) error { return &wrapErr{err} }

type wrapErr struct{ err error }

func (w *wrapErr) Error() string { return "wrapped: " + w.err.Error() }
func (w *wrapErr) Unwrap() error { return w.err }

func TestValidate(t *testing.T) {
	obj := &Schema{Type: TypeObject} // no properties: encoded as {}
	tests := []struct {
		name string
		doc  *OpenTool
		want []string
	}{
		{"nil", nil, []string{"$: must be an object"}},
		{"zero", &OpenTool{}, []string{"opentool: must not be empty"}}, // info fields are "" (present), functions []
		{"built in Go", &OpenTool{
			OpenTool:  Version,
			Info:      Info{Title: "t", Version: "1"},
			Functions: []Function{{Name: "f", Description: "d", Parameters: []Parameter{{Name: "o", Schema: obj, Required: true}}}, {Name: "g", Description: "no params"}},
		}, nil},
		{"bad name and missing schema", &OpenTool{
			OpenTool:  Version,
			Info:      Info{Title: "t", Version: "1"},
			Functions: []Function{{Name: "a.b", Description: "d", Parameters: []Parameter{{Name: "p"}}}},
		}, []string{`functions[0].name: must match ^[a-zA-Z0-9_-]{1,64}$ (got "a.b")`, "functions[0].parameters[0].schema: required"}},
		{"not encodable", &OpenTool{
			OpenTool:  Version,
			Info:      Info{Title: "t", Version: "1"},
			Functions: []Function{{Name: "f", Description: "d", Parameters: []Parameter{{Name: "p", Schema: &Schema{Type: TypeNumber, Enum: []any{math.NaN()}}}}}},
		}, []string{"$: cannot be encoded as JSON: *"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := faultsOf(t, Validate(tt.doc))
			want := faults(tt.want...)
			for i, f := range want { // "prefix*" matches any message with that prefix
				if p, ok := strings.CutSuffix(f.Message, "*"); ok && i < len(got) && strings.HasPrefix(got[i].Message, p) {
					want[i].Message = got[i].Message
				}
			}
			if !equalFaults(got, want) {
				t.Errorf("got:%s\nwant:%s", faultLines(got), faultLines(want))
			}
		})
	}
}

func TestIsIntegerLiteral(t *testing.T) {
	for lit, want := range map[string]bool{
		"0": true, "-0": true, "1": true, "1.0": true, "1.50e1": true, "1e3": true, "100e-2": true, "0.0e-5": true,
		"1e99999999999999999999": true, "12345678901234567890": true, "1.5": false, "1e-3": false, "10e-2": false,
		"1.0000000000000000001": false, "1e-99999999999999999999": false, "-2.5E+0": false, "25E-1": false,
	} {
		if got := isIntegerLiteral(lit); got != want {
			t.Errorf("isIntegerLiteral(%s) = %v, want %v", lit, got, want)
		}
	}
}
