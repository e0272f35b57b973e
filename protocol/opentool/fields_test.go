package opentool

import (
	"encoding/json"
	"reflect"
	"testing"
)

// everyField is a document that sets every field of OpenTool and of every
// type it holds (Function and its parts), each somewhere: a field added to
// a type must be added here, and to the parser (parse.go's build*
// functions), or TestParseReadsEveryField fails. It is compact, so that
// the raw members Parse keeps as written are those json.Unmarshal keeps.
const everyField = `{"opentool":"1.1.0",` +
	`"info":{"title":"every field","description":"each set","version":"1.2.3"},` +
	`"server":{"url":"http://127.0.0.1:9627/opentool","description":"here"},` +
	`"functions":[{"name":"all","description":"sets everything",` +
	`"parameters":[{"name":"p","description":"a parameter","schema":{"type":"object","description":"an object",` +
	`"properties":{"n":{"type":"integer","enum":[1,2],"minimum":1},"l":{"type":"array","items":{"type":"string"}}},` +
	`"required":["n"],"additionalProperties":false},"required":false},{"name":"r","schema":{"$ref":"#/schemas/Id"},"required":true}],` +
	`"additionalParameters":false,` +
	`"return":{"name":"out","description":"the result","schema":{"type":"string"}},` +
	`"inputSchema":{"type":"object","properties":{"p":{"type":"object"},"r":{"type":"integer"}}},` +
	`"outputSchema":{"type":"object"},` +
	`"title":"All","annotations":{"title":"All of it","readOnlyHint":true,"destructiveHint":false,"idempotentHint":true,"openWorldHint":false},` +
	`"icons":[{"src":"https://example.com/i.png","mimeType":"image/png","sizes":["48x48"],"theme":"dark"}],` +
	`"_meta":{"k":"v"},"mcpTool":{"name":"all"},"execution":{"taskSupport":"optional"}},` +
	`{"name":"flow","description":"streams","parameters":[],"stream":{"data":{"name":"item","schema":{"type":"string"}}}}],` +
	`"schemas":{"Id":{"type":"integer"}},` +
	`"refused":[{"kind":"tool","name":"bad","reason":"inputSchema: not an object"}]}`

// TestParseReadsEveryField holds the hand-written parser to the types:
// parsed, everyField sets every exported field of every struct type
// reachable from OpenTool somewhere (a field the parser does not read stays
// zero everywhere), and it parses to what encoding/json makes of it by the
// fields' tags (a field read into the wrong place differs).
func TestParseReadsEveryField(t *testing.T) {
	d, err := Parse([]byte(everyField))
	if err != nil {
		t.Fatal(err)
	}
	set := map[string]bool{}
	fields := map[string]bool{}
	markSet(reflect.ValueOf(d).Elem(), set, fields)
	for f := range fields {
		if !set[f] {
			t.Errorf("%s is zero everywhere in the parsed document: set it in everyField and read it in parse.go", f)
		}
	}
	var want OpenTool
	if err := json.Unmarshal([]byte(everyField), &want); err != nil {
		t.Fatal(err)
	}
	want.Functions[0].Parameters[0].Schema.Properties["n"].Extra = map[string]json.RawMessage{"minimum": json.RawMessage("1")}
	if !reflect.DeepEqual(*d, want) {
		got, _ := json.Marshal(d)
		exp, _ := json.Marshal(want)
		t.Errorf("Parse gives\n%s\nencoding/json gives\n%s", got, exp)
	}
}

// markSet walks v, recording in fields every exported field of every struct
// type it meets ("Type.Field") and in set those that are non-zero at least
// once.
func markSet(v reflect.Value, set, fields map[string]bool) {
	switch v.Kind() {
	case reflect.Pointer, reflect.Interface:
		if !v.IsNil() {
			markSet(v.Elem(), set, fields)
		}
	case reflect.Slice, reflect.Array:
		if v.Type() == reflect.TypeFor[json.RawMessage]() {
			return
		}
		for i := range v.Len() {
			markSet(v.Index(i), set, fields)
		}
	case reflect.Map:
		for it := v.MapRange(); it.Next(); {
			markSet(it.Value(), set, fields)
		}
	case reflect.Struct:
		for i := range v.NumField() {
			sf := v.Type().Field(i)
			if !sf.IsExported() {
				continue
			}
			name := v.Type().Name() + "." + sf.Name
			fields[name] = true
			if !v.Field(i).IsZero() {
				set[name] = true
			}
			markSet(v.Field(i), set, fields)
		}
	}
}
