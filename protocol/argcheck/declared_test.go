package argcheck_test

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/opentool-host/opentool-host/protocol/argcheck"
	"github.com/opentool-host/opentool-host/protocol/opentool"
)

// declared is a function whose arguments schema is declared in full
// (opentool.Function.InputSchema), as an MCP server writes it: a type
// union, bounds, a pattern, $defs/$ref, allOf/anyOf, if/then/else.
func declared(t *testing.T, schema string) *argcheck.Validator {
	t.Helper()
	v, err := argcheck.Compile(declaredFn(t, schema))
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// declaredFn is the function of declared, uncompiled.
func declaredFn(t *testing.T, schema string) *opentool.Function {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal([]byte(schema), &m); err != nil {
		t.Fatal(err)
	}
	params, additional, _, err := opentool.ProjectParameters(m)
	if err != nil {
		t.Fatal(err)
	}
	return &opentool.Function{Name: "f", Description: "d", Parameters: params, AdditionalParameters: additional, InputSchema: json.RawMessage(schema)}
}

// TestDeclaredSchema: arguments are checked against the schema as
// declared, every keyword of draft 2020-12 (issue 22).
func TestDeclaredSchema(t *testing.T) {
	v := declared(t, `{"$schema":"https://json-schema.org/draft/2020-12/schema","type":"object",
		"$defs":{"address":{"$anchor":"addr","type":"object","properties":{"city":{"type":"string","minLength":2}},"required":["city"]}},
		"properties":{"flag":{"type":["boolean","string"]},"n":{"type":"integer","minimum":1,"maximum":100},
			"code":{"type":"string","pattern":"^[A-Z]{3}$"},"address":{"$ref":"#/$defs/address"},"home":{"$ref":"#addr"},
			"contactMethod":{"type":"string","enum":["phone","email"]},"phone":{"type":"string"},"email":{"type":"string"}},
		"allOf":[{"anyOf":[{"required":["phone"]},{"required":["email"]}]}],
		"if":{"properties":{"contactMethod":{"const":"phone"}},"required":["contactMethod"]},"then":{"required":["phone"]},"else":{"required":["email"]},
		"additionalProperties":false}`)
	tests := []struct {
		args   string
		faults []string // fault messages; nil: valid
	}{
		{`{"email":"a@b","flag":true}`, nil},
		{`{"email":"a@b","flag":"yes"}`, nil},
		{`{"email":"a@b","flag":1}`, []string{`flag: must be boolean or string, got number 1`}},
		{`{"email":"a@b","n":100}`, nil},
		{`{"email":"a@b","n":1000}`, []string{`n: must be <= 100; got 1000`}},
		{`{"email":"a@b","n":0}`, []string{`n: must be >= 1; got 0`}},
		{`{"email":"a@b","code":"ABC"}`, nil},
		{`{"email":"a@b","code":"abc"}`, []string{`code: must match the pattern "^[A-Z]{3}$"; got "abc"`}},
		{`{"email":"a@b","address":{"city":"Paris"},"home":{"city":"Lyon"}}`, nil},
		{`{"email":"a@b","address":{"city":"P"},"home":{}}`, []string{`address.city: must have at least 2 characters; got 1`, `missing required parameter "home.city"`}},
		{`{"email":"a@b","other":1}`, []string{`unknown parameter "other" is not allowed`}},
		{`{"contactMethod":"phone","email":"a@b"}`, []string{`missing required parameter "phone"`}},
		{`{}`, []string{`arguments: does not match any of the allowed forms`, `missing required parameter "email"`}},
	}
	for _, tc := range tests {
		err := v.Validate([]byte(tc.args))
		if tc.faults == nil {
			if err != nil {
				t.Errorf("Validate(%s) = %v, want nil", tc.args, err)
			}
			continue
		}
		var ae *argcheck.Error
		if !errors.As(err, &ae) {
			t.Errorf("Validate(%s) = %v, want *argcheck.Error", tc.args, err)
			continue
		}
		var got []string
		for _, f := range ae.Faults {
			got = append(got, f.Message)
		}
		if strings.Join(got, "\n") != strings.Join(tc.faults, "\n") {
			t.Errorf("Validate(%s) faults:\n got %q\nwant %q", tc.args, got, tc.faults)
		}
	}
	if u := v.Unchecked(); u != nil {
		t.Errorf("Unchecked = %q", u)
	}
}

// TestExtraKeywordsChecked: the extra keywords of an OpenTool schema
// (a plain document, or the Go SDK's struct tags) are checked.
func TestExtraKeywordsChecked(t *testing.T) {
	doc, err := opentool.Parse([]byte(`{"opentool":"1.1.0","info":{"title":"t","version":"1"},"functions":[{"name":"f","description":"d",
		"parameters":[{"name":"n","required":true,"schema":{"type":"integer","minimum":1,"maximum":100}}]}]}`))
	if err != nil {
		t.Fatal(err)
	}
	v, err := argcheck.Compile(&doc.Functions[0])
	if err != nil {
		t.Fatal(err)
	}
	if err := v.Validate([]byte(`{"n":50}`)); err != nil {
		t.Errorf("n=50: %v", err)
	}
	if err := v.Validate([]byte(`{"n":1000}`)); err == nil || !strings.Contains(err.Error(), "n: must be <= 100; got 1000") {
		t.Errorf("n=1000: %v", err)
	}
}

// TestDeclaredSchemaLoadsNothing: a $ref to a file or a URL is not
// loaded; the validator falls back to the OpenTool parameters and says so.
func TestDeclaredSchemaLoadsNothing(t *testing.T) {
	secret := filepath.Join(t.TempDir(), "s.json")
	if err := os.WriteFile(secret, []byte(`{"type":"string"}`), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, ref := range []string{"file://" + secret, "https://example.com/s.json"} {
		v := declared(t, `{"type":"object","properties":{"a":{"$ref":"`+ref+`"}},"required":["a"]}`)
		u := v.Unchecked()
		if len(u) != 1 || !strings.Contains(u[0], "the host loads no schema from elsewhere") || !strings.Contains(u[0], "checking the OpenTool parameters only") {
			t.Errorf("%s: Unchecked = %q", ref, u)
		}
		// The projection still requires a.
		if err := v.Validate([]byte(`{}`)); err == nil || !strings.Contains(err.Error(), `missing required parameter "a"`) {
			t.Errorf("%s: {} gives %v", ref, err)
		}
	}
}

// TestUncheckedPattern: a pattern Go's regexp cannot compile (an ECMA-262
// look-ahead) is not checked; the rest of the schema is.
func TestUncheckedPattern(t *testing.T) {
	v := declared(t, `{"type":"object","properties":{"e":{"type":"string","pattern":"^(?!\\.)[a-z.]+$"},"n":{"type":"integer","maximum":1}}}`)
	if u := v.Unchecked(); len(u) != 1 || !strings.Contains(u[0], `pattern "^(?!\\.)[a-z.]+$"`) {
		t.Errorf("Unchecked = %q", u)
	}
	if err := v.Validate([]byte(`{"e":".x"}`)); err != nil {
		t.Errorf("unchecked pattern: %v", err)
	}
	if err := v.Validate([]byte(`{"e":1,"n":2}`)); err == nil || !strings.Contains(err.Error(), "e: must be string") || !strings.Contains(err.Error(), "n: must be <= 1; got 2") {
		t.Errorf("checked keywords: %v", err)
	}
}

// TestBadExtraKeyword: an extra keyword the compiler refuses does not cost
// the function its checks: its OpenTool members are still checked.
func TestBadExtraKeyword(t *testing.T) {
	doc, err := opentool.Parse([]byte(`{"opentool":"1.1.0","info":{"title":"t","version":"1"},"functions":[{"name":"f","description":"d",
		"parameters":[{"name":"n","required":true,"schema":{"type":"integer","minimum":"one"}}]}]}`))
	if err != nil {
		t.Fatal(err)
	}
	v, err := argcheck.Compile(&doc.Functions[0])
	if err != nil {
		t.Fatal(err)
	}
	if u := v.Unchecked(); len(u) != 1 || !strings.Contains(u[0], "the extra keywords of the parameter schemas") {
		t.Errorf("Unchecked = %q", u)
	}
	if err := v.Validate([]byte(`{"n":"x"}`)); err == nil || !strings.Contains(err.Error(), "n: must be integer, got string") {
		t.Errorf("n=x: %v", err)
	}
}

// TestServerJudgesOptionalNull: a declared MCP server's tool given null for
// an optional parameter is not refused by the host (the server judges it,
// as with its own client); a null for a required parameter is, and so is
// any null of a function that is not an MCP server's.
func TestServerJudgesOptionalNull(t *testing.T) {
	schema := `{"type":"object","properties":{"verbose":{"type":"boolean"},"name":{"type":"string"},
		"opts":{"type":"object","properties":{"x":{"type":"boolean"}}}},"required":["name"]}`
	plain := declared(t, schema)
	fn := declaredFn(t, schema)
	fn.MCPTool = json.RawMessage(`{"name":"f","inputSchema":` + schema + `}`)
	mcp, err := argcheck.Compile(fn)
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		args       string
		plain, mcp bool // valid for each
	}{
		{`{"name":"a","verbose":null}`, false, true},
		{`{"name":"a","verbose":true}`, true, true},
		{`{"name":"a","verbose":1}`, false, false},
		{`{"name":null}`, false, false},
		{`{"name":"a","opts":{"x":null}}`, false, false},
		{`{"verbose":null}`, false, false},
	}
	for _, tc := range tests {
		if err := plain.Validate([]byte(tc.args)); (err == nil) != tc.plain {
			t.Errorf("own plugin: Validate(%s) = %v, want valid %v", tc.args, err, tc.plain)
		}
		if err := mcp.Validate([]byte(tc.args)); (err == nil) != tc.mcp {
			t.Errorf("MCP server's tool: Validate(%s) = %v, want valid %v", tc.args, err, tc.mcp)
		}
	}
}
