package pluginsdk_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"sync"
	"testing"

	"github.com/opentool-host/opentool-host/pluginsdk"
	"github.com/opentool-host/opentool-host/protocol/opentool"
	"github.com/opentool-host/opentool-host/testkit"
)

type addIn struct {
	A float64 `json:"a" jsonschema:"description=First operand"`
	B float64 `json:"b" jsonschema:"description=Second operand"`
}

type addOut struct {
	Result float64 `json:"result"`
}

type point struct {
	X int `json:"x"`
	Y int `json:"y,omitempty"`
}

type richIn struct {
	Name   string   `json:"name" jsonschema:"description=Who to greet"`
	Count  int      `json:"count,omitempty" jsonschema:"description=How many times"`
	Mode   string   `json:"mode,omitempty" jsonschema:"enum=fast,enum=slow"`
	Tags   []string `json:"tags,omitempty"`
	Origin point    `json:"origin"`
	Path   []point  `json:"path,omitempty"`
	Ratio  *float64 `json:"ratio,omitempty"`
	Flag   bool     `json:"flag" jsonschema:"description=A flag"`
	Hidden string   `json:"-"`
	secret string
}

type richOut struct {
	Greeting string  `json:"greeting"`
	Points   []point `json:"points"`
}

type countIn struct {
	N int `json:"n" jsonschema:"description=How many items"`
}

type item struct {
	I int `json:"i"`
}

// newTestToolkit returns a toolkit with add, rich, fail, plain_fail, nothing
// and count (streaming).
func newTestToolkit() *pluginsdk.Toolkit {
	tk := pluginsdk.NewToolkit(opentool.Info{Title: "Test", Version: "1.0.0", Description: "Toolkit test."})
	return tk.Add(
		pluginsdk.Func("add", "Add two numbers.", func(_ context.Context, in addIn) (addOut, error) {
			return addOut{in.A + in.B}, nil
		}),
		pluginsdk.Func("rich", "Exercise the schema derivation.", func(_ context.Context, in richIn) (richOut, error) {
			return richOut{Greeting: fmt.Sprintf("%s/%d/%s/%v", in.Name, in.Count, in.Mode, in.Tags), Points: append([]point{in.Origin}, in.Path...)}, nil
		}),
		pluginsdk.Func("fail", "Fail with code 418.", func(context.Context, struct{}) (addOut, error) {
			return addOut{}, fmt.Errorf("wrapped: %w", pluginsdk.Errorf(418, "teapot"))
		}),
		pluginsdk.Func("plain_fail", "Fail with a plain error.", func(context.Context, struct{}) (addOut, error) {
			return addOut{}, errors.New("boom")
		}),
		pluginsdk.Func("nothing", "Return nothing.", func(context.Context, struct{}) (struct{}, error) {
			return struct{}{}, nil
		}),
		pluginsdk.Func("as_map", "Return a map.", func(context.Context, struct{}) (map[string]any, error) {
			return map[string]any{"big": int64(1) << 60}, nil
		}),
		pluginsdk.StreamFunc("count", "Stream n items.", func(ctx context.Context, in countIn, send func(item) error) error {
			for i := range in.N {
				if err := send(item{I: i}); err != nil {
					return err
				}
			}
			if in.N < 0 {
				return pluginsdk.InvalidArguments("n must not be negative")
			}
			return nil
		}),
	)
}

func function(t *testing.T, doc *opentool.OpenTool, name string) opentool.Function {
	t.Helper()
	for _, f := range doc.Functions {
		if f.Name == name {
			return f
		}
	}
	t.Fatalf("function %q not in document", name)
	return opentool.Function{}
}

func load(t *testing.T, tk *pluginsdk.Toolkit) *opentool.OpenTool {
	t.Helper()
	doc, err := tk.Load(context.Background())
	if err != nil {
		t.Fatalf("Load: %v", err)
	}
	return doc
}

func TestToolkitLoadIsValid(t *testing.T) {
	doc := load(t, newTestToolkit())
	if doc.OpenTool != opentool.Version {
		t.Errorf("opentool = %q, want %q", doc.OpenTool, opentool.Version)
	}
	if doc.Info.Title != "Test" || doc.Info.Version != "1.0.0" || doc.Info.Description != "Toolkit test." {
		t.Errorf("info = %+v", doc.Info)
	}
	var names []string
	for _, f := range doc.Functions {
		names = append(names, f.Name)
	}
	want := []string{"add", "rich", "fail", "plain_fail", "nothing", "as_map", "count"}
	if !reflect.DeepEqual(names, want) {
		t.Errorf("function order = %v, want %v", names, want)
	}
	if err := opentool.Validate(doc); err != nil {
		t.Fatalf("Validate: %v", err)
	}
	raw, err := json.Marshal(doc)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := opentool.Parse(raw); err != nil {
		t.Fatalf("Parse(encoded document): %v", err)
	}
}

func TestToolkitLoadEmpty(t *testing.T) {
	doc := load(t, pluginsdk.NewToolkit(opentool.Info{Title: "Empty", Version: "0.1.0"}))
	if doc.Functions == nil || len(doc.Functions) != 0 {
		t.Errorf("Functions = %#v, want empty non-nil", doc.Functions)
	}
	if err := opentool.Validate(doc); err != nil {
		t.Errorf("Validate: %v", err)
	}
}

func TestFuncParameters(t *testing.T) {
	f := function(t, load(t, newTestToolkit()), "add")
	if len(f.Parameters) != 2 {
		t.Fatalf("parameters = %+v", f.Parameters)
	}
	for i, want := range []struct{ name, desc string }{{"a", "First operand"}, {"b", "Second operand"}} {
		p := f.Parameters[i]
		if p.Name != want.name || p.Description != want.desc || !p.Required || p.Schema == nil || p.Schema.Type != opentool.TypeNumber {
			t.Errorf("parameter %d = %+v (schema %+v), want %s %q required number", i, p, p.Schema, want.name, want.desc)
		}
		if p.Schema.Description != "" {
			t.Errorf("parameter %q: description repeated in schema: %q", p.Name, p.Schema.Description)
		}
	}
	if f.Return == nil || f.Return.Name != "result" || f.Return.Schema.Type != opentool.TypeObject {
		t.Fatalf("return = %+v", f.Return)
	}
	if rs := f.Return.Schema.Properties["result"]; rs == nil || rs.Type != opentool.TypeNumber {
		t.Errorf("return.schema.properties.result = %+v", rs)
	}
	if f.Stream != nil {
		t.Errorf("stream = %+v, want nil", f.Stream)
	}
}

func TestFuncSchemaDerivation(t *testing.T) {
	f := function(t, load(t, newTestToolkit()), "rich")
	type want struct {
		typ      string
		required bool
		desc     string
	}
	wants := map[string]want{
		"name":   {opentool.TypeString, true, "Who to greet"},
		"count":  {opentool.TypeInteger, false, "How many times"},
		"mode":   {opentool.TypeString, false, ""},
		"tags":   {opentool.TypeArray, false, ""},
		"origin": {opentool.TypeObject, true, ""},
		"path":   {opentool.TypeArray, false, ""},
		"ratio":  {opentool.TypeNumber, false, ""},
		"flag":   {opentool.TypeBoolean, true, "A flag"},
	}
	order := []string{"name", "count", "mode", "tags", "origin", "path", "ratio", "flag"}
	if len(f.Parameters) != len(order) {
		t.Fatalf("got %d parameters, want %d (json:\"-\" and unexported fields skipped): %+v", len(f.Parameters), len(order), f.Parameters)
	}
	params := map[string]opentool.Parameter{}
	for i, p := range f.Parameters {
		if p.Name != order[i] {
			t.Errorf("parameter %d is %q, want %q (field order)", i, p.Name, order[i])
		}
		params[p.Name] = p
		w := wants[p.Name]
		if p.Schema.Type != w.typ || p.Required != w.required || p.Description != w.desc {
			t.Errorf("parameter %q: type %q required %v desc %q; want %q %v %q", p.Name, p.Schema.Type, p.Required, p.Description, w.typ, w.required, w.desc)
		}
	}
	if got := params["mode"].Schema.Enum; !reflect.DeepEqual(got, []any{"fast", "slow"}) {
		t.Errorf("mode enum = %#v", got)
	}
	if it := params["tags"].Schema.Items; it == nil || it.Type != opentool.TypeString {
		t.Errorf("tags items = %+v", it)
	}
	origin := params["origin"].Schema
	if origin.Properties["x"] == nil || origin.Properties["x"].Type != opentool.TypeInteger || origin.Properties["y"] == nil {
		t.Errorf("origin properties = %+v", origin.Properties)
	}
	if !reflect.DeepEqual(origin.Required, []string{"x"}) {
		t.Errorf("origin required = %v, want [x]", origin.Required)
	}
	path := params["path"].Schema.Items
	if path == nil || path.Type != opentool.TypeObject || path.Properties["x"] == nil {
		t.Errorf("path items = %+v", path)
	}
	ret := f.Return.Schema
	if ret.Properties["greeting"] == nil || ret.Properties["points"] == nil || ret.Properties["points"].Items == nil {
		t.Errorf("return schema = %+v", ret)
	}
}

func TestFuncNoReturn(t *testing.T) {
	tk := newTestToolkit()
	f := function(t, load(t, tk), "nothing")
	if f.Return != nil || len(f.Parameters) != 0 {
		t.Errorf("nothing = %+v, want no parameters and no return", f)
	}
	out, err := tk.CallJSON(context.Background(), "nothing", nil)
	if err != nil || string(out) != "{}" {
		t.Errorf("CallJSON = %s, %v; want {}", out, err)
	}
}

func TestStreamFuncDefinition(t *testing.T) {
	f := function(t, load(t, newTestToolkit()), "count")
	if f.Return != nil {
		t.Errorf("return = %+v, want nil", f.Return)
	}
	if f.Stream == nil || f.Stream.Data == nil || f.Stream.Data.Name != "item" || f.Stream.Data.Schema.Properties["i"] == nil {
		t.Fatalf("stream = %+v", f.Stream)
	}
	if len(f.Parameters) != 1 || f.Parameters[0].Name != "n" || !f.Parameters[0].Required {
		t.Errorf("parameters = %+v", f.Parameters)
	}
}

func TestFunctionAccessors(t *testing.T) {
	fn := pluginsdk.Func("add", "Add.", func(_ context.Context, in addIn) (addOut, error) { return addOut{}, nil })
	if fn.Name() != "add" {
		t.Errorf("Name = %q", fn.Name())
	}
	d := fn.Definition()
	d.Parameters[0].Name = "changed"
	d.Parameters[0].Schema.Type = opentool.TypeString
	d.Return.Schema.Properties["result"].Type = opentool.TypeString
	again := fn.Definition()
	if again.Parameters[0].Name != "a" || again.Parameters[0].Schema.Type != opentool.TypeNumber ||
		again.Return.Schema.Properties["result"].Type != opentool.TypeNumber {
		t.Errorf("Definition shares memory with the Function: %+v", again)
	}

	// Nor does a loaded document share memory with the toolkit.
	tk := pluginsdk.NewToolkit(opentool.Info{Title: "t", Version: "1"}).Add(fn)
	doc := load(t, tk)
	doc.Functions[0].Parameters[0].Schema.Type = opentool.TypeString
	if load(t, tk).Functions[0].Parameters[0].Schema.Type != opentool.TypeNumber {
		t.Error("Load shares schemas with the Toolkit")
	}
}

func TestCallJSON(t *testing.T) {
	tk := newTestToolkit()
	ctx := context.Background()
	for _, tc := range []struct {
		name, args, want string
	}{
		{"add", `{"a": 1.5, "b": 2}`, `{"result":3.5}`},
		{"add", ` {"b": -2, "a": 2} `, `{"result":0}`},
		{"rich", `{"name":"n","origin":{"x":1},"flag":false,"tags":["t"],"path":[{"x":2,"y":3}]}`,
			`{"greeting":"n/0//[t]","points":[{"x":1},{"x":2,"y":3}]}`},
		{"rich", `{"name":"n","origin":{"x":1},"flag":true,"mode":"fast","count":2}`,
			`{"greeting":"n/2/fast/[]","points":[{"x":1}]}`},
		{"rich", `{"name":"n","origin":{"x":1},"flag":true,"count":2.0,"path":[{"x":1e1,"y":-0.0}]}`,
			`{"greeting":"n/2//[]","points":[{"x":1},{"x":10}]}`},
		{"nothing", `null`, `{}`},
		{"nothing", ``, `{}`},
		{"nothing", `{}`, `{}`},
		{"as_map", `{}`, `{"big":1152921504606846976}`},
	} {
		out, err := tk.CallJSON(ctx, tc.name, []byte(tc.args))
		if err != nil {
			t.Errorf("%s(%s): %v", tc.name, tc.args, err)
			continue
		}
		if string(out) != tc.want {
			t.Errorf("%s(%s) = %s, want %s", tc.name, tc.args, out, tc.want)
		}
	}
}

func TestCallMap(t *testing.T) {
	tk := newTestToolkit()
	out, err := tk.Call(context.Background(), "add", map[string]any{"a": 40.0, "b": 2})
	if err != nil {
		t.Fatal(err)
	}
	if out["result"] != json.Number("42") {
		t.Errorf("result = %#v, want json.Number(\"42\")", out["result"])
	}
	out, err = tk.Call(context.Background(), "as_map", nil)
	if err != nil {
		t.Fatal(err)
	}
	if out["big"] != json.Number("1152921504606846976") {
		t.Errorf("big = %#v: precision lost", out["big"])
	}
}

func wantCode(t *testing.T, err error, code int, contains ...string) {
	t.Helper()
	var te *pluginsdk.Error
	if !errors.As(err, &te) {
		t.Fatalf("error %v (%T) is not a *pluginsdk.Error", err, err)
	}
	if te.Code != code {
		t.Errorf("code = %d, want %d (message %q)", te.Code, code, te.Message)
	}
	for _, s := range contains {
		if !strings.Contains(te.Message, s) {
			t.Errorf("message %q does not contain %q", te.Message, s)
		}
	}
}

func TestCallJSONInvalidArguments(t *testing.T) {
	tk := newTestToolkit()
	for _, tc := range []struct {
		name, args string
		contains   []string
	}{
		{"add", `{"a": "one", "b": 2}`, []string{`"a"`, "number", "string"}},
		{"add", `{"a": 1, "b": true}`, []string{`"b"`, "number", "bool"}},
		{"add", `{"a": 1}`, []string{`missing required parameter "b"`}},
		{"add", `{"a": 1, "b": null}`, []string{`missing required parameter "b"`}},
		{"add", `{"a": 1, "b": 2, "c": 3}`, []string{`unknown field "c"`}},
		{"add", `[1, 2]`, []string{"must be a JSON object, got array"}},
		{"add", `"x"`, []string{"must be a JSON object, got string"}},
		{"add", `{"a": 1,`, []string{"not valid JSON"}},
		{"rich", `{"name":"n","origin":{"x":"1"},"flag":true}`, []string{`"origin.x"`, "integer"}},
		{"rich", `{"name":"n","origin":{"x":1},"flag":true,"count":1.5}`, []string{`"count"`, "integer", "1.5"}},
		{"rich", `{"name":"n","origin":{"x":1},"flag":true,"tags":"t"}`, []string{`"tags"`, "array"}},
		// null is not a value of an optional parameter (issue 23: the
		// SDKs' shared strictness, testdata/sdk-strictness.json).
		{"rich", `{"name":"n","origin":{"x":1},"flag":true,"ratio":null}`, []string{`parameter "ratio": want number, got null`}},
		{"rich", `{"name":"n","origin":{"x":1},"flag":true,"path":[{"x":1,"y":"2"}]}`, []string{`parameter "path[0].y": want integer, got string`}},
		{"rich", `{"name":"n","origin":{"x":1},"flag":true,"count":9007199254740992}`, []string{`"count"`, "out of range"}},
		{"count", `{"n":"x"}`, nil},
	} {
		var err error
		if tc.name == "count" {
			err = tk.StreamCall(context.Background(), tc.name, map[string]any{"n": "x"}, func(map[string]any) error { return nil })
		} else {
			_, err = tk.CallJSON(context.Background(), tc.name, []byte(tc.args))
		}
		t.Run(tc.args, func(t *testing.T) { wantCode(t, err, pluginsdk.CodeInvalidArguments, tc.contains...) })
	}
}

func TestUnknownFunction(t *testing.T) {
	tk := newTestToolkit()
	_, err := tk.CallJSON(context.Background(), "nope", nil)
	wantCode(t, err, pluginsdk.CodeNotFound, `"nope"`)
	_, err = tk.Call(context.Background(), "nope", map[string]any{})
	wantCode(t, err, pluginsdk.CodeNotFound, `"nope"`)
	err = tk.StreamCall(context.Background(), "nope", nil, func(map[string]any) error { return nil })
	wantCode(t, err, pluginsdk.CodeNotFound, `"nope"`)
	// A streaming function is not callable, and the reverse.
	_, err = tk.CallJSON(context.Background(), "count", []byte(`{"n":1}`))
	wantCode(t, err, pluginsdk.CodeNotFound, "streamCall")
	err = tk.StreamCall(context.Background(), "add", map[string]any{"a": 1, "b": 2}, func(map[string]any) error { return nil })
	wantCode(t, err, pluginsdk.CodeNotFound, "does not stream")
}

func TestToolErrorsPreserved(t *testing.T) {
	tk := newTestToolkit()
	_, err := tk.CallJSON(context.Background(), "fail", nil)
	wantCode(t, err, 418, "teapot")
	_, err = tk.CallJSON(context.Background(), "plain_fail", nil)
	if err == nil || err.Error() != "boom" {
		t.Fatalf("plain_fail error = %v, want the function's own error", err)
	}
	if e := pluginsdk.AsError(err); e.Code != pluginsdk.CodeToolFailure || e.Message != "boom" {
		t.Errorf("AsError = %+v", e)
	}
}

func TestStreamCall(t *testing.T) {
	tk := newTestToolkit()
	var got []map[string]any
	err := tk.StreamCall(context.Background(), "count", map[string]any{"n": 3}, func(m map[string]any) error {
		got = append(got, m)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	want := []map[string]any{{"i": json.Number("0")}, {"i": json.Number("1")}, {"i": json.Number("2")}}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("items = %v, want %v", got, want)
	}

	// The function's error ends the stream with its code.
	err = tk.StreamCall(context.Background(), "count", map[string]any{"n": -1}, func(map[string]any) error { return nil })
	wantCode(t, err, pluginsdk.CodeInvalidArguments, "negative")

	// send's error reaches the function, which stops.
	stop := errors.New("caller gone")
	n := 0
	err = tk.StreamCall(context.Background(), "count", map[string]any{"n": 10}, func(map[string]any) error {
		n++
		if n == 2 {
			return stop
		}
		return nil
	})
	if !errors.Is(err, stop) || n != 2 {
		t.Errorf("err = %v after %d sends, want %v after 2", err, n, stop)
	}

	// A cancelled context makes send fail with ctx's error.
	ctx, cancel := context.WithCancel(context.Background())
	n = 0
	err = tk.StreamCall(ctx, "count", map[string]any{"n": 10}, func(map[string]any) error {
		n++
		cancel()
		return nil
	})
	if !errors.Is(err, context.Canceled) || n != 1 {
		t.Errorf("err = %v after %d sends, want context.Canceled after 1", err, n)
	}
}

func mustPanic(t *testing.T, contains string, f func()) {
	t.Helper()
	defer func() {
		t.Helper()
		r := recover()
		if r == nil {
			t.Fatalf("no panic, want one containing %q", contains)
		}
		if !strings.Contains(fmt.Sprint(r), contains) {
			t.Errorf("panic %q does not contain %q", r, contains)
		}
	}()
	f()
}

type recursive struct {
	Kids []*recursive `json:"kids"`
}

func TestAddAndFuncPanics(t *testing.T) {
	add := pluginsdk.Func("add", "Add.", func(_ context.Context, in addIn) (addOut, error) { return addOut{}, nil })
	mustPanic(t, `duplicate function name "add"`, func() { newTestToolkit().Add(add) })
	mustPanic(t, `duplicate function name "add"`, func() {
		pluginsdk.NewToolkit(opentool.Info{Title: "t", Version: "1"}).Add(add, add)
	})
	mustPanic(t, "zero Function", func() {
		pluginsdk.NewToolkit(opentool.Info{Title: "t", Version: "1"}).Add(pluginsdk.Function{})
	})
	for _, bad := range []string{"", "has space", "dot.ted", strings.Repeat("x", 65)} {
		fn := pluginsdk.Func(bad, "Bad.", func(_ context.Context, in addIn) (addOut, error) { return addOut{}, nil })
		mustPanic(t, "invalid function name", func() {
			pluginsdk.NewToolkit(opentool.Info{Title: "t", Version: "1"}).Add(fn)
		})
	}
	// A failed Add adds nothing.
	tk := pluginsdk.NewToolkit(opentool.Info{Title: "t", Version: "1"})
	mustPanic(t, "invalid function name", func() {
		tk.Add(add, pluginsdk.Func("bad name", "Bad.", func(_ context.Context, in addIn) (addOut, error) { return addOut{}, nil }))
	})
	if n := len(load(t, tk).Functions); n != 0 {
		t.Errorf("%d functions added by a failed Add", n)
	}

	mustPanic(t, "not a struct", func() {
		pluginsdk.Func("f", "F.", func(context.Context, int) (addOut, error) { return addOut{}, nil })
	})
	mustPanic(t, "JSON object", func() {
		pluginsdk.Func("f", "F.", func(context.Context, addIn) (float64, error) { return 0, nil })
	})
	mustPanic(t, "JSON object", func() {
		pluginsdk.StreamFunc("f", "F.", func(context.Context, addIn, func(string) error) error { return nil })
	})
	mustPanic(t, "recursive", func() {
		pluginsdk.Func("f", "F.", func(context.Context, recursive) (addOut, error) { return addOut{}, nil })
	})
}

func TestToolkitConcurrentCalls(t *testing.T) {
	tk := newTestToolkit()
	var wg sync.WaitGroup
	for i := range 20 {
		wg.Go(func() {
			out, err := tk.CallJSON(context.Background(), "add", fmt.Appendf(nil, `{"a":%d,"b":1}`, i))
			if err != nil || string(out) != fmt.Sprintf(`{"result":%d}`, i+1) {
				t.Errorf("add(%d, 1) = %s, %v", i, out, err)
			}
		})
		wg.Go(func() {
			if _, err := tk.Load(context.Background()); err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
}

// TestToolkitOverGRPC serves a Toolkit through the real plugin gRPC
// service and uses it as the host does.
func TestToolkitOverGRPC(t *testing.T) {
	c := testkit.WireConn(t, newTestToolkit())
	ctx := context.Background()
	call := func(name, args string) (string, error) {
		items, err := testkit.WireInvoke(ctx, c, name, []byte(args), false)
		if err != nil || len(items) != 1 {
			return "", err
		}
		return string(items[0]), nil
	}

	docJSON, err := c.Load(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := opentool.ValidateJSON(docJSON); err != nil {
		t.Fatalf("document over the wire is invalid: %v", err)
	}

	out, err := call("add", `{"a":2,"b":3}`)
	if err != nil || out != `{"result":5}` {
		t.Errorf("add = %s, %v", out, err)
	}
	_, err = call("add", `{"a":"2","b":3}`)
	testkit.WantToolError(t, err, pluginsdk.CodeInvalidArguments, `"a"`)
	_, err = call("fail", "")
	testkit.WantToolError(t, err, 418, "teapot")
	_, err = call("missing", "")
	testkit.WantToolError(t, err, pluginsdk.CodeNotFound, "")

	var items []string
	raw, err := testkit.WireInvoke(ctx, c, "count", []byte(`{"n":2}`), true)
	for _, b := range raw {
		items = append(items, string(b))
	}
	if err != nil || !reflect.DeepEqual(items, []string{`{"i":0}`, `{"i":1}`}) {
		t.Errorf("count stream = %v, %v", items, err)
	}
}

type modeIn struct {
	Mode string `json:"mode" jsonschema:"enum=safe"`
}

type embeddedBase struct {
	Base string `json:"base"`
}

type nestedIn struct {
	embeddedBase
	Origin point            `json:"origin"`
	Path   []point          `json:"path,omitempty"`
	Named  map[string]any   `json:"named,omitempty"`
	ByKey  map[string]point `json:"by_key,omitempty"`
	Skip   string           `json:"-"`
}

// exactToolkit has run (mode must be "safe") and nested, which record
// whether they ran.
func exactToolkit(ran *bool) *pluginsdk.Toolkit {
	return pluginsdk.NewToolkit(opentool.Info{Title: "Exact", Version: "1.0.0"}).Add(
		pluginsdk.Func("run", "Run safely.", func(_ context.Context, in modeIn) (addOut, error) {
			*ran = true
			if in.Mode != "safe" {
				return addOut{}, fmt.Errorf("mode %q reached the function", in.Mode)
			}
			return addOut{}, nil
		}),
		pluginsdk.Func("nested", "Nested structs.", func(_ context.Context, in nestedIn) (addOut, error) {
			*ran = true
			return addOut{Result: float64(in.Origin.X)}, nil
		}),
		pluginsdk.StreamFunc("stream", "Stream.", func(_ context.Context, in modeIn, send func(item) error) error {
			*ran = true
			return send(item{})
		}),
	)
}

// TestCaseFoldedBypassRefused: the SDK alone refuses what encoding/json
// would have folded onto a field (last one winning), whatever the host
// checked before.
func TestCaseFoldedBypassRefused(t *testing.T) {
	for _, tc := range []struct {
		fn, args string
		contains []string
	}{
		{"run", `{"mode":"safe","MODE":"rm-rf"}`, []string{`unknown field "MODE"`, `the parameter is "mode"`}},
		{"run", `{"MODE":"rm-rf","mode":"safe"}`, []string{`unknown field "MODE"`}},
		{"run", `{"Mode":"rm-rf"}`, []string{`unknown field "Mode"`}},
		{"run", `{"mode":"safe","mode":"rm-rf"}`, []string{`duplicate parameter "mode"`}},
		{"run", `{"mode":"rm-rf","\u006dode":"safe"}`, []string{`duplicate parameter "mode"`}},
		{"nested", `{"base":"b","origin":{"x":1,"X":2}}`, []string{`unknown field "origin.X"`, `the member is "x"`}},
		{"nested", `{"origin":{"x":1},"path":[{"x":1},{"x":2,"Y":3}]}`, []string{`unknown field "path[1].Y"`}},
		{"nested", `{"origin":{"x":1},"by_key":{"k":{"x":1,"z":1}}}`, []string{`unknown field "by_key.k.z"`}},
		{"nested", `{"origin":{"x":1},"BASE":"b"}`, []string{`unknown field "BASE"`, `the parameter is "base"`}},
		{"nested", `{"origin":{"x":1},"Skip":"s"}`, []string{`unknown field "Skip"`}},
		{"nested", `{"origin":{"x":1,"x":2}}`, []string{`origin: duplicate member "x"`}},
		{"nested", `{"origin":{"x":1},"named":{"a":{"b":1,"b":2}}}`, []string{`named.a: duplicate member "b"`}},
		{"nested", `{"origin":{"x":1}} {}`, []string{"not valid JSON", "after top-level value"}},
	} {
		ran := false
		_, err := exactToolkit(&ran).CallJSON(context.Background(), tc.fn, []byte(tc.args))
		t.Run(tc.args, func(t *testing.T) {
			wantCode(t, err, pluginsdk.CodeInvalidArguments, tc.contains...)
			if ran {
				t.Error("the function ran")
			}
		})
	}

	ran := false
	err := exactToolkit(&ran).StreamCall(context.Background(), "stream", map[string]any{"mode": "safe", "MODE": "x"}, func(map[string]any) error { return nil })
	wantCode(t, err, pluginsdk.CodeInvalidArguments, `unknown field "MODE"`)
	if ran {
		t.Error("the streaming function ran")
	}
}

func TestExactArgumentsAccepted(t *testing.T) {
	ran := false
	tk := exactToolkit(&ran)
	out, err := tk.CallJSON(context.Background(), "nested",
		[]byte(`{"base":"b","origin":{"x":7,"y":1},"path":[{"x":1}],"named":{"ANY":{"Key":[1]}},"by_key":{"K":{"x":1}}}`))
	if err != nil || string(out) != `{"result":7}` || !ran {
		t.Fatalf("nested = %s, %v (ran %v)", out, err, ran)
	}
	if _, err := tk.CallJSON(context.Background(), "run", []byte(`{"mode":"safe"}`)); err != nil {
		t.Fatal(err)
	}
}

// TestGeneratedDefinitionsRefuseUnknownNames: Func and StreamFunc say in
// the document what they refuse, so the host refuses it first.
func TestGeneratedDefinitionsRefuseUnknownNames(t *testing.T) {
	doc := load(t, newTestToolkit())
	for _, f := range doc.Functions {
		if f.AdditionalParameters == nil || *f.AdditionalParameters {
			t.Errorf("%s: additionalParameters = %v, want false", f.Name, f.AdditionalParameters)
		}
	}
	rich := function(t, doc, "rich")
	params := map[string]*opentool.Schema{}
	for _, p := range rich.Parameters {
		params[p.Name] = p.Schema
	}
	for name, s := range map[string]*opentool.Schema{
		"origin":       params["origin"],
		"path items":   params["path"].Items,
		"return":       rich.Return.Schema,
		"return items": rich.Return.Schema.Properties["points"].Items,
	} {
		if s.AdditionalProperties == nil || *s.AdditionalProperties {
			t.Errorf("%s: additionalProperties = %v, want false", name, s.AdditionalProperties)
		}
	}
	if s := params["tags"]; s.AdditionalProperties != nil {
		t.Errorf("tags (an array): additionalProperties = %v, want none", *s.AdditionalProperties)
	}
	count := function(t, doc, "count")
	if d := count.Stream.Data.Schema; d.AdditionalProperties == nil || *d.AdditionalProperties {
		t.Errorf("stream item: additionalProperties = %v, want false", d.AdditionalProperties)
	}

	// On the wire, and as JSON Schema for the host's validator.
	raw, err := json.Marshal(rich)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(raw), `"additionalParameters":false`) ||
		!strings.Contains(string(raw), `"origin","schema":{"type":"object","properties":{"x":{"type":"integer"},"y":{"type":"integer"}},"required":["x"],"additionalProperties":false}`) {
		t.Errorf("encoded definition: %s", raw)
	}
	js, err := opentool.ParametersJSONSchema(nil, &rich)
	if err != nil || js["additionalProperties"] != false {
		t.Errorf("ParametersJSONSchema: additionalProperties %v, %v", js["additionalProperties"], err)
	}

	// A map parameter takes any member names.
	nested := function(t, load(t, exactToolkit(new(bool))), "nested")
	for _, p := range nested.Parameters {
		if p.Name == "named" && p.Schema.AdditionalProperties != nil {
			t.Errorf("named (a map): additionalProperties = %v, want none", *p.Schema.AdditionalProperties)
		}
	}
}
