package opentool

import (
	"encoding/json"
	"reflect"
	"testing"
)

func TestParseMockTool(t *testing.T) {
	d := parseFixture(t, "reference-mock-tool.json")
	if d.OpenTool != "1.0.0" || d.Info.Title != "CRUD API for mock" || d.Info.Version != "1.0.0" || d.Server != nil {
		t.Errorf("header = %q %+v %v", d.OpenTool, d.Info, d.Server)
	}
	var names []string
	for _, f := range d.Functions {
		names = append(names, f.Name)
	}
	if want := []string{"count", "create", "read", "sequentiallyRead", "update", "delete", "run"}; !reflect.DeepEqual(names, want) {
		t.Errorf("functions = %v, want %v", names, want)
	}
	if want := map[string]*Schema{"Count": {Type: TypeInteger}, "Id": {Type: TypeInteger}, "Text": {Type: TypeString}}; !reflect.DeepEqual(d.Schemas, want) {
		t.Errorf("schemas = %v", d.Schemas)
	}
	read := d.Function("read")
	want := Function{
		Name: "read", Description: "Read text from storage by id",
		Parameters: []Parameter{{Name: "id", Description: "Text Id in storage", Schema: &Schema{Ref: "#/schemas/Id"}, Required: true}},
		Return:     &Return{Name: "text", Description: "Text find by Id in storage", Schema: &Schema{Ref: "#/schemas/Text"}},
	}
	if !reflect.DeepEqual(*read, want) {
		t.Errorf("read = %+v, want %+v", *read, want)
	}
	sr := d.Function("sequentiallyRead")
	if sr.Return != nil || !sr.IsStream() || !reflect.DeepEqual(sr.Stream.Data, &Return{Name: "text", Description: "Text in storage", Schema: &Schema{Ref: "#/schemas/Text"}}) {
		t.Errorf("sequentiallyRead = %+v", *sr)
	}
	if run := d.Function("run"); run.Parameters == nil || len(run.Parameters) != 0 || run.Return != nil || run.IsStream() {
		t.Errorf("run = %+v (parameters must be empty, not nil)", *run)
	}
	if d.Function("nope") != nil || (*OpenTool)(nil).Function("read") != nil {
		t.Error("Function of an absent name must be nil")
	}
	d.Function("run").Description = "changed" // a pointer into the document
	if d.Functions[6].Description != "changed" {
		t.Error("Function must point into d.Functions")
	}
}

func TestParseWeather(t *testing.T) {
	d := parseFixture(t, "reference-weather.json")
	f := d.Function("get_n_day_weather_forecast")
	want := &Schema{
		Type: TypeObject,
		Properties: map[string]*Schema{
			"location": {Type: TypeString, Description: "The city and state, e.g. San Francisco, CA"},
			"format":   {Type: TypeString, Description: "The temperature unit to use. Infer this from the users location.", Enum: []any{"celsius", "fahrenheit"}},
			"num_days": {Type: TypeInteger, Description: "The number of days to forecast"},
		},
		Required: []string{"location", "format", "num_days"},
	}
	if got := f.Parameters[0].Schema; !reflect.DeepEqual(got, want) {
		t.Errorf("schema = %s", mustJSON(t, got))
	}
	if d.Schemas != nil {
		t.Errorf("Schemas = %v, want nil", d.Schemas)
	}
}

func TestParseDecoding(t *testing.T) {
	tests := []struct {
		name string
		doc  string
		want *OpenTool
	}{
		{"case-sensitive keys and last duplicate wins",
			`{"opentool":"1.1.0","OpenTool":5,"info":{"title":"a","Title":1,"title":"b","version":"1"},"functions":[],"schemas":{}}`,
			&OpenTool{OpenTool: "1.1.0", Info: Info{Title: "b", Version: "1"}, Functions: []Function{}}},
		{"enum numbers are float64, server and stream kept",
			`{"opentool":"1.1.0","info":{"title":"t","version":"1","description":"x"},"server":{"url":"http://h/opentool"},"functions":[
			  {"name":"f","description":"d","parameters":[{"name":"n","schema":{"type":"integer","enum":[1,2e0]},"required":false}],
			   "stream":{"data":{"name":"s","schema":{"type":"object","properties":{},"required":[]}}}}]}`,
			&OpenTool{OpenTool: "1.1.0", Info: Info{Title: "t", Description: "x", Version: "1"}, Server: &Server{URL: "http://h/opentool"},
				Functions: []Function{{Name: "f", Description: "d",
					Parameters: []Parameter{{Name: "n", Schema: &Schema{Type: TypeInteger, Enum: []any{1.0, 2.0}}}},
					Stream:     &Stream{Data: &Return{Name: "s", Schema: &Schema{Type: TypeObject, Properties: map[string]*Schema{}}}}}}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Parse([]byte(tt.doc))
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("got %s\nwant %s", mustJSON(t, got), mustJSON(t, tt.want))
			}
		})
	}
}

// TestRoundTrip checks Parse -> json.Marshal -> Parse gives an equal
// document, and that the encoding is itself valid.
func TestRoundTrip(t *testing.T) {
	docs := map[string][]byte{
		"object without properties": []byte(withSchema(`{"type":"object","properties":{},"required":[]}`, `,"schemas":{}`)),
		"everything": []byte(`{"opentool":"1.1.0","info":{"title":"t","version":"1","description":"d"},"server":{"url":"u","description":"s"},
		  "functions":[{"name":"f","description":"d","additionalParameters":false,"parameters":[
		    {"name":"a","description":"pa","schema":{"type":"array","description":"arr","items":{"$ref":"#/schemas/a~1b"}},"required":true},
		    {"name":"n","schema":{"type":"number","enum":[-0,1.5,1e300,-2]},"required":false}],
		   "return":{"name":"r","schema":{"type":"boolean","enum":[true]}},"stream":{"data":{"name":"s","schema":{"$ref":"#/schemas/a~1b","description":"x"}}}}],
		  "schemas":{"a/b":{"type":"object","properties":{"x\u2028y":{"type":"string","enum":["\u00e9","<>&"]}},"required":["x\u2028y"],"additionalProperties":false}}}`),
	}
	for _, name := range fixtureNames {
		docs[name] = readFixture(t, name)
	}
	for name, data := range docs {
		t.Run(name, func(t *testing.T) {
			d1, err := Parse(data)
			if err != nil {
				t.Fatal(err)
			}
			enc, err := json.Marshal(d1)
			if err != nil {
				t.Fatal(err)
			}
			d2, err := Parse(enc)
			if err != nil {
				t.Fatalf("Parse(Marshal): %v\n%s", err, enc)
			}
			if !reflect.DeepEqual(d1, d2) {
				t.Errorf("round trip differs:\n%s\n%s", mustJSON(t, d1), mustJSON(t, d2))
			}
			if err := Validate(d2); err != nil {
				t.Error(err)
			}
		})
	}
}

func TestMarshalWritesRequiredFields(t *testing.T) {
	d := &OpenTool{OpenTool: Version, Info: Info{Title: "t", Version: "1"}}
	if got, want := mustJSON(t, d), `{"opentool":"1.1.0","info":{"title":"t","version":"1"},"functions":[]}`; got != want {
		t.Errorf("got %s, want %s", got, want)
	}
	f := Function{Name: "f", Description: "d"}
	if got, want := mustJSON(t, f), `{"name":"f","description":"d","parameters":[]}`; got != want {
		t.Errorf("got %s, want %s", got, want)
	}
	for _, s := range []*Schema{{Type: TypeObject}, {Type: TypeObject, Properties: map[string]*Schema{}}} {
		if got, want := mustJSON(t, s), `{"type":"object","properties":{}}`; got != want {
			t.Errorf("got %s, want %s", got, want)
		}
	}
	if got, want := mustJSON(t, Schema{Ref: "#/schemas/X"}), `{"$ref":"#/schemas/X"}`; got != want {
		t.Errorf("got %s, want %s", got, want)
	}
	if got, want := mustJSON(t, &Schema{Type: TypeArray, Items: &Schema{Type: TypeObject}}), `{"type":"array","items":{"type":"object","properties":{}}}`; got != want {
		t.Errorf("got %s, want %s", got, want)
	}
}

func TestClone(t *testing.T) {
	if (*OpenTool)(nil).Clone() != nil || (*Schema)(nil).Clone() != nil || (*Function)(nil).Clone() != nil || (*Return)(nil).Clone() != nil {
		t.Error("Clone of nil must be nil")
	}
	for _, name := range fixtureNames {
		d := parseFixture(t, name)
		c := d.Clone()
		if !reflect.DeepEqual(d, c) {
			t.Fatalf("%s: clone differs", name)
		}
	}
	d := &OpenTool{
		OpenTool: Version, Info: Info{Title: "t", Version: "1"}, Server: &Server{URL: "u"},
		Functions: []Function{{Name: "f", AdditionalParameters: new(false), Parameters: []Parameter{{Name: "p", Schema: &Schema{Type: TypeObject, Properties: map[string]*Schema{"a": {Type: TypeArray, Items: &Schema{Type: TypeString, Enum: []any{"x", []any{1.0}, map[string]any{"k": []any{"v"}}}}}}, Required: []string{"a"}, AdditionalProperties: new(false)}}},
			Return: &Return{Name: "r", Schema: &Schema{Ref: "#/schemas/S"}}, Stream: &Stream{Data: &Return{Name: "s", Schema: &Schema{Type: TypeString}}}}},
		Schemas: map[string]*Schema{"S": {Type: TypeString}},
	}
	before := mustJSON(t, d)
	c := d.Clone()
	// Change every part of the copy; the original must not move.
	c.Server.URL = "x"
	c.Functions[0].Name = "g"
	*c.Functions[0].AdditionalParameters = true
	p := c.Functions[0].Parameters[0].Schema
	*p.AdditionalProperties = true
	p.Required[0] = "b"
	p.Properties["a"].Items.Enum[0] = "y"
	p.Properties["a"].Items.Enum[1].([]any)[0] = 2.0
	p.Properties["a"].Items.Enum[2].(map[string]any)["k"].([]any)[0] = "w"
	p.Properties["b"] = &Schema{}
	c.Functions[0].Return.Schema.Ref = "#/schemas/T"
	c.Functions[0].Stream.Data.Schema.Type = TypeInteger
	c.Schemas["S"].Type = TypeBoolean
	c.Schemas["T"] = &Schema{}
	if after := mustJSON(t, d); after != before {
		t.Errorf("changing the clone changed the original:\n%s\n%s", before, after)
	}
}

func mustJSON(t testing.TB, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
