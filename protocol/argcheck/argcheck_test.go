package argcheck_test

import (
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/opentool-host/opentool-host/testkit"

	"github.com/opentool-host/opentool-host/protocol/argcheck"
	"github.com/opentool-host/opentool-host/protocol/opentool"
)

// loadFixture parses a shared fixture and returns it with $refs inlined.
func loadFixture(t testing.TB, name string) *opentool.OpenTool {
	t.Helper()
	in, err := testkit.Fixture(t, name).Inline()
	if err != nil {
		t.Fatalf("inline %s: %v", name, err)
	}
	return in
}

func compile(t testing.TB, doc *opentool.OpenTool, fn string) *argcheck.Validator {
	t.Helper()
	f := doc.Function(fn)
	if f == nil {
		t.Fatalf("no function %q", fn)
	}
	v, err := argcheck.Compile(f)
	if err != nil {
		t.Fatalf("compile %s: %v", fn, err)
	}
	return v
}

// tagsFunction has arrays, nested objects, an optional parameter and a
// member name that is not an identifier.
var tagsFunction = &opentool.Function{
	Name:        "tag",
	Description: "Tag things.",
	Parameters: []opentool.Parameter{
		{Name: "tags", Required: true, Schema: &opentool.Schema{Type: "array", Items: &opentool.Schema{Type: "string", Enum: []any{"a", "b"}}}},
		{Name: "points", Schema: &opentool.Schema{Type: "array", Items: &opentool.Schema{
			Type:       "object",
			Properties: map[string]*opentool.Schema{"x": {Type: "number"}, "odd key": {Type: "boolean"}},
			Required:   []string{"x"},
		}}},
		{Name: "count", Schema: &opentool.Schema{Type: "integer"}},
	},
}

func TestValidate(t *testing.T) {
	weather := loadFixture(t, "reference-weather.json")
	mock := loadFixture(t, "reference-mock-tool.json")
	tags, err := argcheck.Compile(tagsFunction)
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name   string
		v      *argcheck.Validator
		args   string
		faults []argcheck.Fault // nil: valid
	}{
		{"create ok", compile(t, mock, "create"), `{"text":"hi"}`, nil},
		{"create unknown params allowed", compile(t, mock, "create"), `{"text":"hi","extra":[1,2]}`, nil},
		{"create missing text", compile(t, mock, "create"), `{}`,
			[]argcheck.Fault{{Path: "text", Message: `missing required parameter "text"`}}},
		{"create nil args", compile(t, mock, "create"), ``,
			[]argcheck.Fault{{Path: "text", Message: `missing required parameter "text"`}}},
		{"create null args", compile(t, mock, "create"), ` null `,
			[]argcheck.Fault{{Path: "text", Message: `missing required parameter "text"`}}},
		{"create text null", compile(t, mock, "create"), `{"text":null}`,
			[]argcheck.Fault{{Path: "text", Message: `text: must be string, got null`}}},
		{"count no args", compile(t, mock, "count"), ``, nil},
		{"count empty object", compile(t, mock, "count"), `{}`, nil},
		{"read ok", compile(t, mock, "read"), `{"id":1}`, nil},
		{"read integral float ok", compile(t, mock, "read"), `{"id":1.0}`, nil},
		{"read big integer ok", compile(t, mock, "read"), `{"id":123456789012345678901234567890}`, nil},
		{"read id string", compile(t, mock, "read"), `{"id":"abc"}`,
			[]argcheck.Fault{{Path: "id", Message: `id: must be integer, got string`}}},
		{"read id fraction", compile(t, mock, "read"), `{"id":1.5}`,
			[]argcheck.Fault{{Path: "id", Message: `id: must be integer, got number 1.5`}}},
		{"update every fault", compile(t, mock, "update"), `{"id":true}`, []argcheck.Fault{
			{Path: "id", Message: `id: must be integer, got boolean`},
			{Path: "text", Message: `missing required parameter "text"`},
		}},
		{"args array", compile(t, mock, "count"), `[1,2]`,
			[]argcheck.Fault{{Path: "", Message: `arguments must be a JSON object, got array`}}},
		{"args string", compile(t, mock, "create"), `"text"`,
			[]argcheck.Fault{{Path: "", Message: `arguments must be a JSON object, got string`}}},
		{"weather ok", compile(t, weather, "get_current_weather"),
			`{"currentWeatherInfo":{"location":"Paris","format":"celsius"}}`, nil},
		{"weather nested faults", compile(t, weather, "get_current_weather"),
			`{"currentWeatherInfo":{"format":"kelvin"}}`, []argcheck.Fault{
				{Path: "currentWeatherInfo.format", Message: `currentWeatherInfo.format: must be one of "celsius", "fahrenheit"; got "kelvin"`},
				{Path: "currentWeatherInfo.location", Message: `missing required parameter "currentWeatherInfo.location"`},
			}},
		{"forecast every fault", compile(t, weather, "get_n_day_weather_forecast"),
			`{"forecastWeatherInfo":{"location":7,"format":"celsius","num_days":"3"}}`, []argcheck.Fault{
				{Path: "forecastWeatherInfo.location", Message: `forecastWeatherInfo.location: must be string, got number 7`},
				{Path: "forecastWeatherInfo.num_days", Message: `forecastWeatherInfo.num_days: must be integer, got string`},
			}},
		{"weather param wrong type", compile(t, weather, "get_current_weather"), `{"currentWeatherInfo":"Paris"}`,
			[]argcheck.Fault{{Path: "currentWeatherInfo", Message: `currentWeatherInfo: must be object, got string`}}},
		{"tags ok", tags, `{"tags":["a","b"],"points":[{"x":1,"odd key":true}],"count":3}`, nil},
		{"tags array paths", tags, `{"tags":["a","c",3],"points":[{"x":1},{"odd key":"yes"}]}`, []argcheck.Fault{
			{Path: "points[1].x", Message: `missing required parameter "points[1].x"`},
			{Path: `points[1]["odd key"]`, Message: `points[1]["odd key"]: must be boolean, got string`},
			{Path: "tags[1]", Message: `tags[1]: must be one of "a", "b"; got "c"`},
			{Path: "tags[2]", Message: `tags[2]: must be string, got number 3`},
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var args []byte
			if tc.args != "" {
				args = []byte(tc.args)
			}
			err := tc.v.Validate(args)
			if tc.faults == nil {
				if err != nil {
					t.Fatalf("Validate(%s) = %v, want nil", tc.args, err)
				}
				return
			}
			var ae *argcheck.Error
			if !errors.As(err, &ae) {
				t.Fatalf("Validate(%s) = %v (%T), want *argcheck.Error", tc.args, err, err)
			}
			if !errors.Is(err, argcheck.ErrInvalidArguments) {
				t.Errorf("errors.Is(err, ErrInvalidArguments) = false")
			}
			want := tc.faults
			if !reflect.DeepEqual(ae.Faults, want) {
				t.Errorf("faults:\n got %q\nwant %q", ae.Faults, want)
			}
			if ae.Function != tc.v.Function() {
				t.Errorf("Function = %q, want %q", ae.Function, tc.v.Function())
			}
		})
	}
}

func TestErrorText(t *testing.T) {
	mock := loadFixture(t, "reference-mock-tool.json")
	err := compile(t, mock, "update").Validate([]byte(`{"id":"x"}`))
	want := `invalid arguments for function "update": id: must be integer, got string; missing required parameter "text"`
	if err == nil || err.Error() != want {
		t.Fatalf("Error() = %v\nwant %s", err, want)
	}
	var ae *argcheck.Error
	errors.As(err, &ae)
	b, _ := json.Marshal(ae.Faults)
	if got := string(b); got != `[{"path":"id","message":"id: must be integer, got string"},{"path":"text","message":"missing required parameter \"text\""}]` {
		t.Errorf("faults JSON = %s", got)
	}
}

func TestInvalidJSON(t *testing.T) {
	v, err := argcheck.Compile(tagsFunction)
	if err != nil {
		t.Fatal(err)
	}
	for _, in := range []string{`{"tags":`, `{"tags":[]} {}`, `nope`} {
		err := v.Validate([]byte(in))
		var ae *argcheck.Error
		if !errors.As(err, &ae) || len(ae.Faults) != 1 || ae.Faults[0].Path != "" ||
			!strings.HasPrefix(ae.Faults[0].Message, "arguments are not valid JSON: ") {
			t.Errorf("Validate(%q) = %v, want one root fault about invalid JSON", in, err)
		}
	}
}

// TestEmptyResultNotShared checks that the cached result for no arguments
// is copied: changing one error does not change the next.
func TestEmptyResultNotShared(t *testing.T) {
	mock := loadFixture(t, "reference-mock-tool.json")
	v := compile(t, mock, "create")
	var a *argcheck.Error
	errors.As(v.Validate(nil), &a)
	a.Faults[0].Message = "changed"
	var b *argcheck.Error
	errors.As(v.Validate(nil), &b)
	if b.Faults[0].Message != `missing required parameter "text"` {
		t.Fatalf("second result was changed: %q", b.Faults[0].Message)
	}
}

func TestCompileErrors(t *testing.T) {
	tests := []struct {
		name string
		fn   *opentool.Function
		want string
	}{
		{"nil", nil, "nil function"},
		{"no schema", &opentool.Function{Name: "f", Parameters: []opentool.Parameter{{Name: "a"}}}, "schema: required"},
		{"duplicate", &opentool.Function{Name: "f", Parameters: []opentool.Parameter{
			{Name: "a", Schema: &opentool.Schema{Type: "string"}},
			{Name: "a", Schema: &opentool.Schema{Type: "string"}},
		}}, "duplicate parameter name"},
		{"ref left", &opentool.Function{Name: "f", Parameters: []opentool.Parameter{
			{Name: "a", Schema: &opentool.Schema{Ref: "#/schemas/Missing"}},
		}}, "Missing"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			v, err := argcheck.Compile(tc.fn)
			if err == nil {
				t.Fatalf("Compile = %v, want an error", v)
			}
			if !errors.Is(err, argcheck.ErrCompile) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Compile error = %v, want ErrCompile mentioning %q", err, tc.want)
			}
		})
	}
}

// TestConcurrent validates from many goroutines (run with -race).
func TestConcurrent(t *testing.T) {
	weather := loadFixture(t, "reference-weather.json")
	v := compile(t, weather, "get_current_weather")
	done := make(chan error, 8)
	for range 8 {
		go func() {
			var err error
			for range 200 {
				if err = v.Validate([]byte(`{"currentWeatherInfo":{"location":"x","format":"celsius"}}`)); err != nil {
					break
				}
				if v.Validate([]byte(`{"currentWeatherInfo":{}}`)) == nil {
					err = errors.New("invalid args accepted")
					break
				}
			}
			done <- err
		}()
	}
	for range 8 {
		if err := <-done; err != nil {
			t.Fatal(err)
		}
	}
}

func BenchmarkValidateValid(b *testing.B) {
	v := compile(b, loadFixture(b, "reference-weather.json"), "get_n_day_weather_forecast")
	args := []byte(`{"forecastWeatherInfo":{"location":"San Francisco, CA","format":"celsius","num_days":5}}`)
	b.ReportAllocs()
	for b.Loop() {
		if err := v.Validate(args); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkValidateInvalid(b *testing.B) {
	v := compile(b, loadFixture(b, "reference-weather.json"), "get_n_day_weather_forecast")
	args := []byte(`{"forecastWeatherInfo":{"location":3,"format":"kelvin"}}`)
	b.ReportAllocs()
	for b.Loop() {
		if v.Validate(args) == nil {
			b.Fatal("accepted")
		}
	}
}

func BenchmarkValidateNoArgs(b *testing.B) {
	v := compile(b, loadFixture(b, "reference-mock-tool.json"), "count")
	b.ReportAllocs()
	for b.Loop() {
		if err := v.Validate(nil); err != nil {
			b.Fatal(err)
		}
	}
}

// modeFunction refuses unknown parameters; mode may only be "safe", and
// opts refuses unknown members too.
var modeFunction = &opentool.Function{
	Name:                 "run",
	Description:          "Run something safely.",
	AdditionalParameters: new(false),
	Parameters: []opentool.Parameter{
		{Name: "mode", Required: true, Schema: &opentool.Schema{Type: "string", Enum: []any{"safe"}}},
		{Name: "opts", Schema: &opentool.Schema{Type: "object", Properties: map[string]*opentool.Schema{
			"level": {Type: "integer"},
		}, AdditionalProperties: new(false)}},
		{Name: "meta", Schema: &opentool.Schema{Type: "object", Properties: map[string]*opentool.Schema{}}},
	},
}

// TestCaseFoldedBypass: a member whose name differs from a parameter only
// by case is an unknown parameter, never the parameter (encoding/json, in
// a plugin, would fold it onto "mode" and the last one would win).
func TestCaseFoldedBypass(t *testing.T) {
	v, err := argcheck.Compile(modeFunction)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		args   string
		faults []argcheck.Fault
	}{
		{`{"mode":"safe"}`, nil},
		{`{"mode":"safe","opts":{"level":1},"meta":{"anything":[1]}}`, nil},
		{`{"mode":"safe","MODE":"rm-rf"}`, []argcheck.Fault{{Path: "MODE", Message: `unknown parameter "MODE" is not allowed`}}},
		{`{"MODE":"rm-rf","mode":"safe"}`, []argcheck.Fault{{Path: "MODE", Message: `unknown parameter "MODE" is not allowed`}}},
		{`{"Mode":"rm-rf"}`, []argcheck.Fault{
			{Path: "Mode", Message: `unknown parameter "Mode" is not allowed`},
			{Path: "mode", Message: `missing required parameter "mode"`},
		}},
		{`{"mode":"safe","opts":{"level":1,"LEVEL":"x"}}`, []argcheck.Fault{{Path: "opts.LEVEL", Message: `unknown parameter "opts.LEVEL" is not allowed`}}},
		{`{"mode":"safe","extra":1}`, []argcheck.Fault{{Path: "extra", Message: `unknown parameter "extra" is not allowed`}}},
	} {
		err := v.Validate([]byte(tc.args))
		checkFaults(t, tc.args, err, tc.faults)
	}
}

func TestDuplicateMembers(t *testing.T) {
	v, err := argcheck.Compile(modeFunction)
	if err != nil {
		t.Fatal(err)
	}
	tags, err := argcheck.Compile(tagsFunction)
	if err != nil {
		t.Fatal(err)
	}
	mock := loadFixture(t, "reference-mock-tool.json")
	for _, tc := range []struct {
		v      *argcheck.Validator
		args   string
		faults []argcheck.Fault
	}{
		{v, `{"mode":"safe","mode":"rm-rf"}`, []argcheck.Fault{{Path: "mode", Message: `duplicate parameter "mode"`}}},
		{v, `{"mode":"rm-rf","mode":"safe"}`, []argcheck.Fault{{Path: "mode", Message: `duplicate parameter "mode"`}}},
		{v, `{"mode":"safe","\u006dode":"x"}`, []argcheck.Fault{{Path: "mode", Message: `duplicate parameter "mode"`}}},
		{v, `{"mode":"safe","meta":{"a":{"b":{"x":1,"x":2}}}}`, []argcheck.Fault{{Path: "meta.a.b.x", Message: `meta.a.b: duplicate member "x"`}}},
		{tags, `{"tags":["a"],"points":[{"x":1},{"x":1,"odd key":true,"odd key":false}]}`,
			[]argcheck.Fault{{Path: `points[1]["odd key"]`, Message: `points[1]: duplicate member "odd key"`}}},
		// The function allows unknown parameters, not a parameter twice.
		{compile(t, mock, "create"), `{"text":"a","extra":1,"extra":2}`, []argcheck.Fault{{Path: "extra", Message: `duplicate parameter "extra"`}}},
	} {
		checkFaults(t, tc.args, tc.v.Validate([]byte(tc.args)), tc.faults)
	}
}

// checkFaults fails unless err has exactly faults (nil: err is nil).
func checkFaults(t *testing.T, args string, err error, faults []argcheck.Fault) {
	t.Helper()
	if faults == nil {
		if err != nil {
			t.Errorf("Validate(%s) = %v, want nil", args, err)
		}
		return
	}
	var ae *argcheck.Error
	if !errors.As(err, &ae) || !errors.Is(err, argcheck.ErrInvalidArguments) {
		t.Errorf("Validate(%s) = %v (%T), want an *argcheck.Error", args, err, err)
		return
	}
	if !reflect.DeepEqual(ae.Faults, faults) {
		t.Errorf("Validate(%s) faults:\n got %q\nwant %q", args, ae.Faults, faults)
	}
}
