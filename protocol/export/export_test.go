package export_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/opentool-host/opentool-host/testkit"

	"github.com/opentool-host/opentool-host/protocol/export"
	"github.com/opentool-host/opentool-host/protocol/opentool"
)

func loadFixture(t *testing.T, name string) *opentool.OpenTool {
	return testkit.Fixture(t, name)
}

// compact returns the JSON text s without insignificant space.
func compact(t *testing.T, s string) string {
	t.Helper()
	var b bytes.Buffer
	if err := json.Compact(&b, []byte(s)); err != nil {
		t.Fatalf("bad expected JSON: %v\n%s", err, s)
	}
	return b.String()
}

// exportOne exports doc and returns the JSON of function fn.
func exportOne(t *testing.T, doc *opentool.OpenTool, format export.Format, strict bool, fn string) (string, []export.StrictIssue) {
	t.Helper()
	tools, issues, err := export.Functions(doc, format, strict)
	if err != nil {
		t.Fatalf("Functions(%s, strict=%v): %v", format, strict, err)
	}
	if len(tools) != len(doc.Functions) {
		t.Fatalf("got %d tools, want %d", len(tools), len(doc.Functions))
	}
	for i, f := range doc.Functions {
		if f.Name == fn {
			b, err := json.Marshal(tools[i])
			if err != nil {
				t.Fatal(err)
			}
			return string(b), issues
		}
	}
	t.Fatalf("no function %q", fn)
	return "", nil
}

const weatherParams = `{
  "properties": {
    "currentWeatherInfo": {
      "properties": {
        "format": {"description": "The temperature unit to use. Infer this from the users location.", "enum": ["celsius", "fahrenheit"], "type": "string"},
        "location": {"description": "The city and state, e.g. San Francisco, CA", "type": "string"}
      },
      "required": ["location", "format"],
      "type": "object"
    }
  },
  "required": ["currentWeatherInfo"],
  "type": "object"
}`

func TestFormatsWeather(t *testing.T) {
	doc := loadFixture(t, "reference-weather.json")
	tests := []struct {
		format export.Format
		want   string
	}{
		{export.OpenAI, `{"type": "function", "name": "get_current_weather", "description": "Get the current weather",
			"parameters": ` + weatherParams + `, "strict": false}`},
		{export.OpenAIChat, `{"type": "function", "function": {"name": "get_current_weather", "description": "Get the current weather",
			"parameters": ` + weatherParams + `, "strict": false}}`},
		{export.Anthropic, `{"name": "get_current_weather", "description": "Get the current weather",
			"input_schema": ` + weatherParams + `}`},
		{export.OpenTool, `{"name": "get_current_weather", "description": "Get the current weather",
			"parameters": [{"name": "currentWeatherInfo", "schema": {"type": "object", "properties": {
				"format": {"type": "string", "description": "The temperature unit to use. Infer this from the users location.", "enum": ["celsius", "fahrenheit"]},
				"location": {"type": "string", "description": "The city and state, e.g. San Francisco, CA"}},
				"required": ["location", "format"]}, "required": true}],
			"return": {"name": "currentWeather", "schema": {"type": "string"}}}`},
	}
	for _, tc := range tests {
		t.Run(string(tc.format), func(t *testing.T) {
			got, issues := exportOne(t, doc, tc.format, false, "get_current_weather")
			if want := compact(t, tc.want); got != want {
				t.Errorf("JSON:\n got %s\nwant %s", got, want)
			}
			if len(issues) != 0 {
				t.Errorf("issues = %v, want none", issues)
			}
		})
	}
}

func TestStrictWeather(t *testing.T) {
	doc := loadFixture(t, "reference-weather.json")
	got, issues := exportOne(t, doc, export.OpenAI, true, "get_current_weather")
	want := compact(t, `{"type": "function", "name": "get_current_weather", "description": "Get the current weather",
		"parameters": {
		  "additionalProperties": false,
		  "properties": {
		    "currentWeatherInfo": {
		      "additionalProperties": false,
		      "properties": {
		        "format": {"description": "The temperature unit to use. Infer this from the users location.", "enum": ["celsius", "fahrenheit"], "type": "string"},
		        "location": {"description": "The city and state, e.g. San Francisco, CA", "type": "string"}
		      },
		      "required": ["location", "format"],
		      "type": "object"
		    }
		  },
		  "required": ["currentWeatherInfo"],
		  "type": "object"
		},
		"strict": true}`)
	if got != want {
		t.Errorf("JSON:\n got %s\nwant %s", got, want)
	}
	if len(issues) != 0 {
		t.Errorf("issues = %v, want none", issues)
	}
}

// optionalDoc has optional parameters, at the top and nested, and a
// function strict mode cannot take (a free-form object parameter).
const optionalDoc = `{
  "opentool": "1.1.0",
  "info": {"title": "Opt", "version": "1.0.0"},
  "functions": [
    {"name": "forecast", "description": "Forecast.", "parameters": [
      {"name": "city", "schema": {"type": "string"}, "required": true},
      {"name": "units", "description": "Units.", "schema": {"type": "string", "enum": ["c", "f"]}, "required": false},
      {"name": "opts", "schema": {"$ref": "#/schemas/Opts"}, "required": false}
    ]},
    {"name": "store", "description": "Store a free-form record.", "parameters": [
      {"name": "key", "schema": {"type": "string"}, "required": true},
      {"name": "record", "schema": {"type": "object", "properties": {
        "meta": {"type": "object", "properties": {}}
      }}, "required": true}
    ]}
  ],
  "schemas": {
    "Opts": {"type": "object", "properties": {
      "days": {"type": "integer"},
      "tags": {"type": "array", "items": {"type": "string"}}
    }, "required": ["days"]}
  }
}`

func TestStrictOptional(t *testing.T) {
	doc, err := opentool.Parse([]byte(optionalDoc))
	if err != nil {
		t.Fatal(err)
	}
	got, issues := exportOne(t, doc, export.OpenAIChat, true, "forecast")
	want := compact(t, `{"type": "function", "function": {"name": "forecast", "description": "Forecast.",
		"parameters": {
		  "additionalProperties": false,
		  "properties": {
		    "city": {"type": "string"},
		    "opts": {
		      "additionalProperties": false,
		      "properties": {
		        "days": {"type": "integer"},
		        "tags": {"items": {"type": "string"}, "type": ["array", "null"]}
		      },
		      "required": ["days", "tags"],
		      "type": ["object", "null"]
		    },
		    "units": {"description": "Units.", "enum": ["c", "f", null], "type": ["string", "null"]}
		  },
		  "required": ["city", "units", "opts"],
		  "type": "object"
		},
		"strict": true}}`)
	if got != want {
		t.Errorf("JSON:\n got %s\nwant %s", got, want)
	}

	// store cannot be strict: it is exported as without --strict.
	wantIssue := export.StrictIssue{Function: "store",
		Reason: `parameter "record.meta" is an object without declared properties (any members); strict mode needs every member declared`}
	if len(issues) != 1 || issues[0] != wantIssue {
		t.Fatalf("issues = %q, want [%q]", issues, wantIssue)
	}
	if s := issues[0].String(); !strings.HasPrefix(s, `function "store" exported without strict mode: parameter "record.meta"`) {
		t.Errorf("String() = %s", s)
	}
	gotStore, _ := exportOne(t, doc, export.OpenAIChat, true, "store")
	plain, _ := exportOne(t, doc, export.OpenAIChat, false, "store")
	if gotStore != plain {
		t.Errorf("store with strict:\n got %s\nwant the non-strict export %s", gotStore, plain)
	}
	if !strings.Contains(gotStore, `"strict":false`) || strings.Contains(gotStore, "additionalProperties") {
		t.Errorf("store not exported non-strict: %s", gotStore)
	}
}

func TestMockFixture(t *testing.T) {
	doc := loadFixture(t, "reference-mock-tool.json")
	// $refs are inlined in the LLM formats.
	got, _ := exportOne(t, doc, export.Anthropic, false, "update")
	want := compact(t, `{"name": "update", "description": "Update a text in storage by id", "input_schema": {
		"properties": {
		  "id": {"description": "Text Id in storage.", "type": "integer"},
		  "text": {"description": "Text should be updated.", "type": "string"}
		},
		"required": ["id", "text"],
		"type": "object"}}`)
	if got != want {
		t.Errorf("JSON:\n got %s\nwant %s", got, want)
	}
	// A function without parameters is strict as an empty object.
	got, _ = exportOne(t, doc, export.OpenAI, true, "count")
	want = compact(t, `{"type": "function", "name": "count", "description": "Get storage size.",
		"parameters": {"additionalProperties": false, "properties": {}, "required": [], "type": "object"}, "strict": true}`)
	if got != want {
		t.Errorf("JSON:\n got %s\nwant %s", got, want)
	}
	// Streaming functions are exported too.
	if got, _ := exportOne(t, doc, export.OpenAI, false, "sequentiallyRead"); !strings.Contains(got, `"name":"sequentiallyRead"`) {
		t.Errorf("sequentiallyRead: %s", got)
	}
}

func TestDocument(t *testing.T) {
	doc := loadFixture(t, "reference-mock-tool.json")
	b, issues, err := export.Document(doc, export.OpenAI, true)
	if err != nil || len(issues) != 0 {
		t.Fatalf("Document: %v %v", issues, err)
	}
	var tools []map[string]any
	if err := json.Unmarshal(b, &tools); err != nil || len(tools) != 7 {
		t.Fatalf("Document is not an array of 7 tools (%v): %s", err, b)
	}
	b, _, err = export.Document(doc, export.OpenTool, false)
	if err != nil {
		t.Fatal(err)
	}
	back, err := opentool.Parse(b)
	if err != nil || back.Info.Title != "CRUD API for mock" || len(back.Functions) != 7 {
		t.Fatalf("opentool export does not parse back to the document (%v): %s", err, b)
	}
}

func TestErrors(t *testing.T) {
	doc := loadFixture(t, "reference-weather.json")
	if _, err := export.ParseFormat("gemini"); !errors.Is(err, export.ErrUnknownFormat) ||
		!strings.Contains(err.Error(), `"gemini"`) || !strings.Contains(err.Error(), "openai-chat") {
		t.Errorf("ParseFormat(gemini) = %v", err)
	}
	if _, err := export.ParseFormat(""); !errors.Is(err, export.ErrUnknownFormat) {
		t.Errorf("ParseFormat(\"\") = %v", err)
	}
	for _, f := range export.Formats {
		if got, err := export.ParseFormat(string(f)); err != nil || got != f {
			t.Errorf("ParseFormat(%s) = %v, %v", f, got, err)
		}
	}
	if _, _, err := export.Functions(doc, "gemini", false); !errors.Is(err, export.ErrUnknownFormat) {
		t.Errorf("Functions(gemini) = %v", err)
	}
	for _, f := range []export.Format{export.Anthropic, export.OpenTool} {
		if _, _, err := export.Functions(doc, f, true); !errors.Is(err, export.ErrStrictUnsupported) {
			t.Errorf("Functions(%s, strict) = %v, want ErrStrictUnsupported", f, err)
		}
	}
	if _, _, err := export.Functions(nil, export.OpenAI, false); !errors.Is(err, export.ErrInvalidDocument) {
		t.Errorf("Functions(nil) = %v", err)
	}
	bad := &opentool.OpenTool{Functions: []opentool.Function{{Name: "f", Parameters: []opentool.Parameter{
		{Name: "a", Schema: &opentool.Schema{Ref: "#/schemas/Nope"}},
	}}}}
	if _, _, err := export.Functions(bad, export.OpenAI, false); !errors.Is(err, export.ErrInvalidDocument) ||
		!errors.Is(err, opentool.ErrUnknownRef) {
		t.Errorf("Functions(unknown ref) = %v", err)
	}
}

func TestStrictLimits(t *testing.T) {
	// Eleven nested objects: one more than strict mode allows.
	s := &opentool.Schema{Type: "string"}
	for range 10 {
		s = &opentool.Schema{Type: "object", Properties: map[string]*opentool.Schema{"n": s}}
	}
	doc := &opentool.OpenTool{OpenTool: "1.1.0", Info: opentool.Info{Title: "t", Version: "1"}, Functions: []opentool.Function{
		{Name: "deep", Description: "d", Parameters: []opentool.Parameter{{Name: "p", Schema: s, Required: true}}},
	}}
	_, issues, err := export.Functions(doc, export.OpenAI, true)
	if err != nil {
		t.Fatal(err)
	}
	if len(issues) != 1 || !strings.Contains(issues[0].Reason, "11 levels deep") {
		t.Fatalf("issues = %v, want one about nesting depth", issues)
	}
	// Ten levels are fine.
	doc.Functions[0].Parameters[0].Schema = s.Properties["n"]
	if _, issues, _ := export.Functions(doc, export.OpenAI, true); len(issues) != 0 {
		t.Fatalf("issues = %v, want none at 10 levels", issues)
	}
}

// closedDoc refuses unknown parameters and, in one nested object, unknown
// members; another nested object allows them, and an empty object refuses
// every member.
const closedDoc = `{
  "opentool": "1.1.0",
  "info": {"title": "Closed", "version": "1.0.0"},
  "functions": [
    {"name": "run", "description": "Run.", "additionalParameters": false, "parameters": [
      {"name": "mode", "schema": {"type": "string", "enum": ["safe"]}, "required": true},
      {"name": "opts", "schema": {"$ref": "#/schemas/Opts"}, "required": false},
      {"name": "none", "schema": {"type": "object", "properties": {}, "additionalProperties": false}, "required": false},
      {"name": "free", "schema": {"type": "object", "properties": {"a": {"type": "string"}}}, "required": false}
    ]}
  ],
  "schemas": {
    "Opts": {"type": "object", "properties": {"n": {"type": "integer"}}, "additionalProperties": false}
  }
}`

func TestExportAdditionalProperties(t *testing.T) {
	doc, err := opentool.Parse([]byte(closedDoc))
	if err != nil {
		t.Fatal(err)
	}
	params := `{
		"type": "object",
		"properties": {
		  "mode": {"type": "string", "enum": ["safe"]},
		  "opts": {"type": "object", "properties": {"n": {"type": "integer"}}, "additionalProperties": false},
		  "none": {"type": "object", "properties": {}, "additionalProperties": false},
		  "free": {"type": "object", "properties": {"a": {"type": "string"}}}
		},
		"required": ["mode"],
		"additionalProperties": false}`
	for _, tc := range []struct {
		format export.Format
		want   string
	}{
		{export.OpenAI, `{"type": "function", "name": "run", "description": "Run.", "parameters": ` + params + `, "strict": false}`},
		{export.Anthropic, `{"name": "run", "description": "Run.", "input_schema": ` + params + `}`},
	} {
		got, _ := exportOne(t, doc, tc.format, false, "run")
		var g, w any
		if err := json.Unmarshal([]byte(got), &g); err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal([]byte(compact(t, tc.want)), &w); err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(g, w) {
			t.Errorf("%s:\n got %s\nwant %s", tc.format, got, compact(t, tc.want))
		}
	}
	if got, _ := exportOne(t, doc, export.OpenTool, false, "run"); !strings.Contains(got, `"additionalParameters":false`) {
		t.Errorf("opentool format lost additionalParameters: %s", got)
	}

	// Strict mode closes every object; the empty closed one is fine.
	got, issues := exportOne(t, doc, export.OpenAI, true, "run")
	if len(issues) != 0 || !strings.Contains(got, `"strict":true`) ||
		!strings.Contains(got, `"free":{"additionalProperties":false,`) ||
		!strings.Contains(got, `"none":{"additionalProperties":false,"properties":{},"required":[],"type":["object","null"]}`) {
		t.Errorf("strict export: %s (issues %v)", got, issues)
	}
}

// TestDeferred: the provider's tool search tool first (Anthropic's BM25
// tool; OpenAI's tool_search), then every function with defer_loading
// true and its input schema; Chat Completions has none.
func TestDeferred(t *testing.T) {
	doc := &opentool.OpenTool{OpenTool: "1.1.0", Info: opentool.Info{Title: "t", Version: "1"}, Functions: []opentool.Function{
		{Name: "add", Description: "Add.", Parameters: []opentool.Parameter{{Name: "a", Schema: &opentool.Schema{Type: opentool.TypeNumber}, Required: true}}},
		{Name: "ping", Description: "Ping.", Parameters: []opentool.Parameter{}},
	}}
	b, _, err := export.Deferred(doc, export.Anthropic, false)
	if err != nil {
		t.Fatal(err)
	}
	var got []map[string]any
	if err := json.Unmarshal(b, &got); err != nil || len(got) != 3 {
		t.Fatalf("Deferred = %s (%v)", b, err)
	}
	if got[0]["type"] != "tool_search_tool_bm25_20251119" || got[0]["name"] != "tool_search_tool_bm25" {
		t.Errorf("first tool = %v", got[0])
	}
	for _, tl := range got[1:] {
		if tl["defer_loading"] != true || tl["input_schema"] == nil {
			t.Errorf("tool = %v, want defer_loading and input_schema", tl)
		}
	}

	b, _, err = export.Deferred(doc, export.OpenAI, true)
	if err != nil {
		t.Fatal(err)
	}
	got = nil
	if err := json.Unmarshal(b, &got); err != nil || len(got) != 3 || len(got[0]) != 1 || got[0]["type"] != "tool_search" {
		t.Fatalf("Deferred(openai) = %s (%v)", b, err)
	}
	for _, tl := range got[1:] {
		if tl["type"] != "function" || tl["defer_loading"] != true || tl["strict"] != true || tl["parameters"] == nil {
			t.Errorf("tool = %v, want a strict function with defer_loading and parameters", tl)
		}
	}
	if _, _, err := export.Deferred(doc, export.OpenAIChat, false); !errors.Is(err, export.ErrDeferUnsupported) {
		t.Errorf("Deferred(openai-chat) = %v, want ErrDeferUnsupported", err)
	}
}

// TestExport: Export is Document, or Deferred with DeferLoading, which
// only the anthropic and openai formats take.
func TestExport(t *testing.T) {
	doc := loadFixture(t, "reference-mock-tool.json")
	for _, o := range []export.Options{{Format: export.OpenAI, Strict: true}, {Format: export.Anthropic, DeferLoading: true}, {Format: export.OpenAI, DeferLoading: true}} {
		want, _, err := export.Document(doc, o.Format, o.Strict)
		if o.DeferLoading {
			want, _, err = export.Deferred(doc, o.Format, o.Strict)
		}
		got, _, gerr := export.Export(doc, o)
		if err != nil || gerr != nil || string(got) != string(want) {
			t.Errorf("Export(%+v) = %s, %v\nwant %s, %v", o, got, gerr, want, err)
		}
	}
	if _, _, err := export.Export(doc, export.Options{Format: export.OpenAIChat, DeferLoading: true}); !errors.Is(err, export.ErrDeferUnsupported) {
		t.Errorf("Export(openai-chat, DeferLoading) = %v, want ErrDeferUnsupported", err)
	}
	if _, _, err := export.Export(doc, export.Options{Format: export.Anthropic, Strict: true}); !errors.Is(err, export.ErrStrictUnsupported) {
		t.Errorf("Export(anthropic, Strict) = %v, want ErrStrictUnsupported", err)
	}
}
