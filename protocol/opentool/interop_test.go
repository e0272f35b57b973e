package opentool_test

import (
	"encoding/json"
	"errors"
	"os"
	"reflect"
	"strings"
	"testing"

	"github.com/invopop/jsonschema"
	jsv "github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/opentool-host/opentool-host/protocol/opentool"
)

type address struct {
	City string  `json:"city" jsonschema:"description=City name"`
	Zip  *string `json:"zip,omitempty"`
}

type forecastArgs struct {
	Location string            `json:"location" jsonschema:"description=The city and state"`
	Format   string            `json:"format" jsonschema:"enum=celsius,enum=fahrenheit"`
	Days     int               `json:"num_days,omitempty" jsonschema:"minimum=1"`
	Tags     []string          `json:"tags,omitempty"`
	Home     *address          `json:"home,omitempty"`
	Work     address           `json:"work"`
	Note     *string           `json:"note" jsonschema:"nullable"`
	Ratio    float64           `json:"ratio"`
	Meta     map[string]string `json:"meta,omitempty"`
	Flag     bool
}

type treeNode struct {
	Children []treeNode `json:"children"`
}

type anyArgs struct {
	Value any `json:"value"`
}

// reflectMap reflects v with invopop/jsonschema and decodes the result the
// way a caller would hand it to FromJSONSchema.
func reflectMap(t *testing.T, v any) map[string]any {
	t.Helper()
	b, err := json.Marshal((&jsonschema.Reflector{}).Reflect(v))
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	return m
}

func TestFromJSONSchemaInvopop(t *testing.T) {
	got, err := opentool.FromJSONSchema(reflectMap(t, &forecastArgs{}))
	if err != nil {
		t.Fatal(err)
	}
	// invopop refuses unknown members of structs: "additionalProperties":
	// false, kept; a map's value schema there is dropped (meta).
	addr := &opentool.Schema{Type: "object", Properties: map[string]*opentool.Schema{
		"city": {Type: "string", Description: "City name"},
		"zip":  {Type: "string"},
	}, Required: []string{"city"}, AdditionalProperties: new(false)}
	want := &opentool.Schema{Type: "object", Properties: map[string]*opentool.Schema{
		"location": {Type: "string", Description: "The city and state"},
		"format":   {Type: "string", Enum: []any{"celsius", "fahrenheit"}},
		"num_days": {Type: "integer"},
		"tags":     {Type: "array", Items: &opentool.Schema{Type: "string"}},
		"home":     addr,
		"work":     addr,
		"note":     {Type: "string"},
		"ratio":    {Type: "number"},
		"meta":     {Type: "object", Properties: map[string]*opentool.Schema{}},
		"Flag":     {Type: "boolean"},
	}, Required: []string{"location", "format", "work", "note", "ratio", "Flag"}, AdditionalProperties: new(false)}
	if !reflect.DeepEqual(got, want) {
		g, _ := json.Marshal(got)
		w, _ := json.Marshal(want)
		t.Errorf("got  %s\nwant %s", g, w)
	}

	if _, err := opentool.FromJSONSchema(reflectMap(t, &treeNode{})); !errors.Is(err, opentool.ErrRefCycle) {
		t.Errorf("recursive type: %v, want ErrRefCycle", err)
	}
	if _, err := opentool.FromJSONSchema(reflectMap(t, &anyArgs{})); !errors.Is(err, opentool.ErrUnsupportedSchema) {
		t.Errorf("any field: %v, want ErrUnsupportedSchema", err)
	}
}

// TestParametersJSONSchemaCompiles feeds ParametersJSONSchema output of the
// fixtures to a draft 2020-12 validator and checks arguments against it.
func TestParametersJSONSchemaCompiles(t *testing.T) {
	load := func(name string) *opentool.OpenTool {
		data, err := os.ReadFile("../../testdata/opentool/" + name)
		if err != nil {
			t.Fatalf("fixture %s: %v", name, err)
		}
		d, err := opentool.Parse(data)
		if err != nil {
			t.Fatal(err)
		}
		return d
	}
	weather, mock := load("reference-weather.json"), load("reference-mock-tool.json")
	tests := []struct {
		doc   *opentool.OpenTool
		fn    string
		args  string
		valid bool
	}{
		{weather, "get_current_weather", `{"currentWeatherInfo":{"location":"Paris","format":"celsius"}}`, true},
		{weather, "get_current_weather", `{"currentWeatherInfo":{"location":"Paris","format":"kelvin"}}`, false},
		{weather, "get_current_weather", `{"currentWeatherInfo":{"location":"Paris"}}`, false},
		{weather, "get_current_weather", `{}`, false},
		{weather, "get_n_day_weather_forecast", `{"forecastWeatherInfo":{"location":"Paris","format":"fahrenheit","num_days":3}}`, true},
		{weather, "get_n_day_weather_forecast", `{"forecastWeatherInfo":{"location":"Paris","format":"fahrenheit","num_days":2.5}}`, false},
		{mock, "update", `{"id":1,"text":"x"}`, true},
		{mock, "update", `{"id":"1","text":"x"}`, false},
		{mock, "update", `{"id":1}`, false},
		{mock, "count", `{}`, true},
	}
	for _, tt := range tests {
		js, err := opentool.ParametersJSONSchema(tt.doc, tt.doc.Function(tt.fn))
		if err != nil {
			t.Fatal(err)
		}
		c := jsv.NewCompiler()
		c.DefaultDraft(jsv.Draft2020)
		if err := c.AddResource("mem:///"+tt.fn+".json", js); err != nil {
			t.Fatalf("%s: AddResource: %v", tt.fn, err)
		}
		sch, err := c.Compile("mem:///" + tt.fn + ".json")
		if err != nil {
			t.Fatalf("%s: Compile: %v", tt.fn, err)
		}
		args, err := jsv.UnmarshalJSON(stringsReader(tt.args))
		if err != nil {
			t.Fatal(err)
		}
		if err := sch.Validate(args); (err == nil) != tt.valid {
			t.Errorf("%s %s: Validate = %v, want valid=%v", tt.fn, tt.args, err, tt.valid)
		}
	}
}

func stringsReader(s string) *strings.Reader { return strings.NewReader(s) }
