package pluginsdk_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/opentool-host/opentool-host/pluginsdk"
	"github.com/opentool-host/opentool-host/protocol/argcheck"
	"github.com/opentool-host/opentool-host/protocol/opentool"
)

// boundedIn carries the constraints invopop/jsonschema reads from tags.
type boundedIn struct {
	N    int      `json:"n" jsonschema:"minimum=1,maximum=100,description=From 1 to 100"`
	Code string   `json:"code,omitempty" jsonschema:"pattern=^[A-Z]{3}$"`
	Unit string   `json:"unit,omitempty" jsonschema:"enum=cm,enum=in,default=cm"`
	When string   `json:"when,omitempty" jsonschema:"format=date"`
	Name string   `json:"name,omitempty" jsonschema:"minLength=2,maxLength=8"`
	Tags []string `json:"tags,omitempty" jsonschema:"minItems=1,maxItems=3"`
}

// TestFuncTagConstraints: the constraints of jsonschema tags reach the
// document (as extra keywords of the parameter schemas, which the host
// checks), and the document needs no inputSchema for them (issue 22).
func TestFuncTagConstraints(t *testing.T) {
	fn := pluginsdk.Func("pick", "Picks.", func(_ context.Context, in boundedIn) (addOut, error) { return addOut{}, nil })
	def := fn.Definition()
	if len(def.InputSchema) != 0 || len(def.OutputSchema) != 0 {
		t.Errorf("inputSchema %s, outputSchema %s; want none (the parameters say it all)", def.InputSchema, def.OutputSchema)
	}
	js, err := opentool.ParametersJSONSchema(nil, &def)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := json.Marshal(js["properties"])
	for _, want := range []string{
		`"n":{"description":"From 1 to 100","maximum":100,"minimum":1,"type":"integer"}`,
		`"code":{"pattern":"^[A-Z]{3}$","type":"string"}`,
		`"unit":{"default":"cm","enum":["cm","in"],"type":"string"}`,
		`"when":{"format":"date","type":"string"}`,
		`"name":{"maxLength":8,"minLength":2,"type":"string"}`,
		`"tags":{"items":{"type":"string"},"maxItems":3,"minItems":1,"type":"array"}`,
	} {
		if !strings.Contains(string(b), want) {
			t.Errorf("properties lack %s:\n%s", want, b)
		}
	}
	v, err := argcheck.Compile(&def)
	if err != nil {
		t.Fatal(err)
	}
	for args, want := range map[string]string{
		`{"n":100,"code":"ABC","unit":"in","name":"ab","tags":["x"]}`: "",
		`{"n":1000}`:                  "n: must be <= 100; got 1000",
		`{"n":0}`:                     "n: must be >= 1; got 0",
		`{"n":5,"code":"abc"}`:        `code: must match the pattern "^[A-Z]{3}$"; got "abc"`,
		`{"n":5,"name":"a"}`:          "name: must have at least 2 characters; got 1",
		`{"n":5,"tags":[]}`:           "tags: must have at least 1 item; got 0",
		`{"n":5,"unit":"mm"}`:         `unit: must be one of "cm", "in"; got "mm"`,
		`{"n":5,"when":"not-a-date"}`: "", // format is an annotation (draft 2020-12)
	} {
		err := v.Validate([]byte(args))
		if want == "" && err != nil || want != "" && (err == nil || !strings.Contains(err.Error(), want)) {
			t.Errorf("%s: %v, want %q", args, err, want)
		}
	}
}

// TestFuncDeclaredSchema: what the OpenTool projection cannot say (an
// interface field, a type union, a map's values) makes the reflected
// schema the function's inputSchema, which the host checks.
func TestFuncDeclaredSchema(t *testing.T) {
	type in struct {
		V     any               `json:"v"`
		Id    string            `json:"id" jsonschema:"oneof_type=string;integer"`
		Votes map[string]int    `json:"votes,omitempty"`
		Opt   map[string]string `json:"-"`
	}
	fn := pluginsdk.Func("f", "F.", func(context.Context, in) (map[string]int, error) { return nil, nil })
	def := fn.Definition()
	var m map[string]any
	if err := json.Unmarshal(def.InputSchema, &m); err != nil {
		t.Fatalf("inputSchema %s: %v", def.InputSchema, err)
	}
	if _, ok := m["$id"]; ok || m["type"] != "object" || m["additionalProperties"] != false {
		t.Errorf("inputSchema = %s", def.InputSchema)
	}
	if !strings.Contains(string(def.InputSchema), `"v":true`) || !strings.Contains(string(def.OutputSchema), `"additionalProperties":{"type":"integer"}`) {
		t.Errorf("inputSchema %s, outputSchema %s", def.InputSchema, def.OutputSchema)
	}
	if len(def.Parameters) != 3 || def.Parameters[0].Name != "v" {
		t.Errorf("parameters = %+v", def.Parameters)
	}
	v, err := argcheck.Compile(&def)
	if err != nil || v.Unchecked() != nil {
		t.Fatalf("compile: %v %v", err, v.Unchecked())
	}
	for args, ok := range map[string]bool{
		`{"v":[1],"id":"a"}`:                 true,
		`{"v":null,"id":7}`:                  true,
		`{"v":1,"id":true}`:                  false,
		`{"v":1,"id":"a","votes":{"x":1}}`:   true,
		`{"v":1,"id":"a","votes":{"x":"1"}}`: false,
	} {
		if err := v.Validate([]byte(args)); (err == nil) != ok {
			t.Errorf("%s: %v, want ok %v", args, err, ok)
		}
	}
	// The toolkit's document with it still validates.
	tk := pluginsdk.NewToolkit(opentool.Info{Title: "t", Version: "1"}).Add(fn)
	doc, _ := tk.Load(context.Background())
	if err := opentool.Validate(doc); err != nil {
		t.Fatal(err)
	}
}
