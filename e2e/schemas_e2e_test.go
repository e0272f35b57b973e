package e2e_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os/exec"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/opentool-host/opentool-host/protocol/opentool"
	"github.com/opentool-host/opentool-host/testkit"
)

// The tests of issue 22, "Schemas as declared" and "Nothing hidden": an
// MCP server's tools and a Go SDK plugin's functions behind a real host,
// their schemas compared with what the server itself lists and their
// constraints enforced by the host, over /mcp and /opentool.

// sdListTools lists cs's tools by name.
func sdListTools(t *testing.T, cs *mcp.ClientSession) map[string]*mcp.Tool {
	t.Helper()
	out := map[string]*mcp.Tool{}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for tool, err := range cs.Tools(ctx, nil) {
		if err != nil {
			t.Fatal(err)
		}
		out[tool.Name] = tool
	}
	return out
}

// sdCall calls tool name with args over MCP: the result's text and
// isError.
func sdCall(t *testing.T, cs *mcp.ClientSession, name string, args any) (string, bool) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: name, Arguments: args})
	if err != nil {
		t.Fatalf("tools/call %s: %v", name, err)
	}
	var sb strings.Builder
	for _, c := range res.Content {
		if tc, ok := c.(*mcp.TextContent); ok {
			sb.WriteString(tc.Text)
		}
	}
	return sb.String(), res.IsError
}

// sdRPCError is the JSON-RPC error code and message of a /opentool/call
// answer (0 and "" for a result).
func sdRPCError(m map[string]any) (int, string) {
	e, ok := m["error"].(map[string]any)
	if !ok {
		return 0, ""
	}
	code, _ := e["code"].(float64)
	msg, _ := e["message"].(string)
	data, _ := json.Marshal(e["data"])
	return int(code), msg + " " + string(data)
}

// TestMCPSchemasAsDeclared: an MCP server's tools whose schemas OpenTool
// cannot express (a ["boolean","string"] property; allOf, anyOf, $defs,
// $ref, $anchor, if/then/else) are served on /mcp with inputSchema,
// title, annotations, icons and _meta exactly as the server lists them,
// and the host enforces the schemas (a violated maximum, a wrong member
// of the union, a missing anyOf branch are invalid params, never reaching
// the server). A tool whose input schema is not an object is listed in
// /health, and the plugin is degraded. Before issue 22 choose and contact
// were not served at all, bounded lost its maximum (n=1000 reached the
// server), and notes said ready.
func TestMCPSchemasAsDeclared(t *testing.T) {
	dir := t.TempDir()
	msDeclare(t, dir, "notes", "--schema-tools")
	hp := startHostProc(t, dir)

	// The server itself, for comparison.
	direct := msClient(t, &mcp.CommandTransport{Command: exec.Command(testkit.Build(t, "./examples/mcp-notes"), "--schema-tools")})
	want := sdListTools(t, direct)

	cs := msClient(t, &mcp.StreamableClientTransport{Endpoint: hp.url + "/mcp"})
	got := sdListTools(t, cs)
	for _, name := range []string{"choose", "contact", "bounded", "add_note", "repeat"} {
		g, w := got[name], want[name]
		if g == nil {
			t.Errorf("%s not served on /mcp (tools %v)", name, keys(got))
			continue
		}
		if !reflect.DeepEqual(g.InputSchema, w.InputSchema) {
			t.Errorf("%s inputSchema through the host:\n%s\ndirectly:\n%s", name, js(g.InputSchema), js(w.InputSchema))
		}
		if !reflect.DeepEqual(g.OutputSchema, w.OutputSchema) {
			t.Errorf("%s outputSchema through the host:\n%s\ndirectly:\n%s", name, js(g.OutputSchema), js(w.OutputSchema))
		}
		if g.Title != w.Title || !reflect.DeepEqual(g.Annotations, w.Annotations) || !reflect.DeepEqual(g.Icons, w.Icons) || !reflect.DeepEqual(g.Meta, w.Meta) {
			t.Errorf("%s title/annotations/icons/_meta through the host: %q %s %s %s\ndirectly: %q %s %s %s",
				name, g.Title, js(g.Annotations), js(g.Icons), js(g.Meta), w.Title, js(w.Annotations), js(w.Icons), js(w.Meta))
		}
	}
	if got["bad_input"] != nil {
		t.Errorf("bad_input (an input schema that is not an object) served")
	}

	// The schemas are enforced by the host.
	for _, c := range []struct {
		tool   string
		args   any
		fault  string // "" when the call reaches the server
		echoed string
	}{
		{"choose", map[string]any{"flag": true}, "", `{"flag":true}`},
		{"choose", map[string]any{"flag": "maybe"}, "", `{"flag":"maybe"}`},
		{"choose", map[string]any{"flag": 1}, "flag: must be boolean or string, got number 1", ""},
		{"choose", map[string]any{"flag": true, "other": 1}, `unknown parameter "other" is not allowed`, ""},
		{"bounded", map[string]any{"n": 100}, "", `{"n":100}`},
		{"bounded", map[string]any{"n": 1000}, "n: must be <= 100; got 1000", ""},
		{"contact", map[string]any{"email": "a@example.com", "address": map[string]any{"city": "Paris"}}, "", `"city":"Paris"`},
		{"contact", map[string]any{"name": "x"}, "arguments: does not match any of the allowed forms", ""},
		{"contact", map[string]any{"email": "a@example.com", "address": map[string]any{"city": "P"}}, "address.city: must have at least 2 characters; got 1", ""},
		{"contact", map[string]any{"contactMethod": "phone", "email": "a@example.com"}, `missing required parameter "phone"`, ""},
	} {
		text, isErr := sdCall(t, cs, c.tool, c.args)
		switch {
		case c.fault == "" && (isErr || !echoes(text, c.echoed)):
			t.Errorf("%s %v = %q (isError %v), want the server's echo %s", c.tool, c.args, text, isErr, c.echoed)
		case c.fault != "" && (!isErr || !strings.Contains(text, "invalid params") || !strings.Contains(text, c.fault)):
			t.Errorf("%s %v = %q (isError %v), want invalid params with %q", c.tool, c.args, text, isErr, c.fault)
		}
	}

	// The same over OpenTool: JSON-RPC -32602.
	_, m := rpc(t, hp.url, `{"jsonrpc":"2.0","method":"bounded","params":{"n":1000},"id":1}`)
	if code, msg := sdRPCError(m); code != -32602 || !strings.Contains(msg, "n: must be <= 100; got 1000") {
		t.Errorf("/opentool/call bounded n=1000 = %v", m)
	}
	_, m = rpc(t, hp.url, `{"jsonrpc":"2.0","method":"choose","params":{"flag":"yes"},"id":2}`)
	if code, _ := sdRPCError(m); code != 0 {
		t.Errorf("/opentool/call choose flag=yes = %v", m)
	}

	// /opentool/load is an OpenTool 1.1 projection (it parses), with the
	// schemas as declared beside it.
	doc := loadDoc(t, hp.url)
	choose := doc.Function("choose")
	if choose == nil || len(choose.Parameters) != 1 || choose.Parameters[0].Schema.Type != opentool.TypeBoolean || !strings.Contains(string(choose.InputSchema), `["boolean","string"]`) {
		t.Errorf("choose in /opentool/load = %+v", choose)
	}
	if b := doc.Function("bounded"); b == nil || string(b.Parameters[0].Schema.Extra["maximum"]) != "100" || b.Title != "Bounded number" {
		t.Errorf("bounded in /opentool/load = %+v", b)
	}

	// Nothing hidden: the refused tool is in /health, the plugin degraded.
	h := health(t, hp.url)
	notes := h.plugin("notes")
	if h.Status != "degraded" || notes.State != "degraded" || len(notes.Refused) != 1 || notes.Refused[0].Name != "bad_input" ||
		!strings.Contains(notes.Refused[0].Reason, `inputSchema.type: "string": the arguments of a call are an object`) {
		t.Errorf("/health = %+v", h)
	}
	if !strings.Contains(hp.logs.String(), "plugin refused part of what it declares") {
		t.Errorf("the refusal is not logged by the host")
	}
}

// TestSDKTagConstraints: the constraints of a Go SDK function's jsonschema
// tags (minimum, maximum, pattern, default, minLength) and a type union
// reach the host's documents and are enforced by it: the plugin checks
// nothing itself. Before issue 22 they were dropped and n=1000 reached the
// plugin.
func TestSDKTagConstraints(t *testing.T) {
	dir := t.TempDir()
	testkit.InstallPlugin(t, dir, "bounded", "./testkit/plugins/bounded")
	hp := startHostProc(t, dir)

	doc := loadDoc(t, hp.url)
	pick := doc.Function("pick")
	if pick == nil {
		t.Fatal("pick not served")
	}
	n := pick.Parameters[0].Schema
	if n.Type != opentool.TypeInteger || string(n.Extra["minimum"]) != "1" || string(n.Extra["maximum"]) != "100" {
		t.Errorf("n in /opentool/load = %s", js(n))
	}
	if u := pick.Parameters[2].Schema; string(u.Extra["default"]) != `"cm"` {
		t.Errorf("unit in /opentool/load = %s", js(u))
	}

	cs := msClient(t, &mcp.StreamableClientTransport{Endpoint: hp.url + "/mcp"})
	tool := sdListTools(t, cs)["pick"]
	if tool == nil || !strings.Contains(js(tool.InputSchema), `"n":{"description":"From 1 to 100","maximum":100,"minimum":1,"type":"integer"}`) ||
		!strings.Contains(js(tool.InputSchema), `"id":{"oneOf":[{"type":"string"},{"type":"integer"}]}`) {
		t.Errorf("pick on /mcp: %s", js(tool))
	}

	for _, c := range []struct {
		params string
		fault  string
	}{
		{`{"n":5,"code":"ABC","unit":"in","name":"ab","id":7}`, ""},
		{`{"n":5,"id":"x7"}`, ""},
		{`{"n":1000}`, "n: must be <= 100; got 1000"},
		{`{"n":0}`, "n: must be >= 1; got 0"},
		{`{"n":5,"code":"abc"}`, `code: must match the pattern \"^[A-Z]{3}$\"; got \"abc\"`},
		{`{"n":5,"name":"a"}`, "name: must have at least 2 characters; got 1"},
		{`{"n":5,"id":true}`, "id: does not match any of the allowed forms"},
	} {
		_, m := rpc(t, hp.url, fmt.Sprintf(`{"jsonrpc":"2.0","method":"pick","params":%s,"id":1}`, c.params))
		code, msg := sdRPCError(m)
		switch {
		case c.fault == "" && code != 0:
			t.Errorf("pick %s = %v, want a result", c.params, m)
		case c.fault != "" && (code != -32602 || !strings.Contains(msg, c.fault)):
			t.Errorf("pick %s = %v, want -32602 with %q", c.params, m, c.fault)
		}
	}
	text, isErr := sdCall(t, cs, "pick", map[string]any{"n": 1000})
	if !isErr || !strings.Contains(text, "invalid params") || !strings.Contains(text, "n: must be <= 100; got 1000") {
		t.Errorf("pick n=1000 over /mcp = %q (isError %v)", text, isErr)
	}
	if h := health(t, hp.url); h.Status != "ok" || h.plugin("bounded").State != "ready" {
		t.Errorf("/health = %+v", h)
	}
}

// loadDoc returns GET /opentool/load, parsed (so valid OpenTool).
func loadDoc(t *testing.T, url string) *opentool.OpenTool {
	t.Helper()
	resp, err := http.Get(url + "/opentool/load")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var raw json.RawMessage
	if err := json.NewDecoder(resp.Body).Decode(&raw); err != nil {
		t.Fatal(err)
	}
	doc, err := opentool.Parse(raw)
	if err != nil {
		t.Fatalf("/opentool/load is not a valid OpenTool document: %v\n%s", err, raw)
	}
	return doc
}

// healthBody is GET /health.
type healthBody struct {
	Status  string
	Plugins []struct {
		Name, State    string
		Refused        []opentool.Refusal
		ClientRestarts int `json:"client_restarts"`
	}
}

// plugin returns the status of plugin name (zero when absent).
func (h healthBody) plugin(name string) (p struct {
	Name, State    string
	Refused        []opentool.Refusal
	ClientRestarts int `json:"client_restarts"`
}) {
	for _, q := range h.Plugins {
		if q.Name == name {
			return q
		}
	}
	return p
}

// health returns GET /health.
func health(t *testing.T, url string) healthBody {
	t.Helper()
	resp, err := http.Get(url + "/health")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var h healthBody
	if err := json.NewDecoder(resp.Body).Decode(&h); err != nil {
		t.Fatal(err)
	}
	return h
}

// echoes reports whether the text of a result carries want, as it is or
// inside a JSON string (the adapter may wrap a text result in JSON).
func echoes(text, want string) bool {
	esc, _ := json.Marshal(want)
	return strings.Contains(text, want) || strings.Contains(text, string(esc[1:len(esc)-1]))
}

// js is v as JSON, for messages.
func js(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

// keys lists the names of tools.
func keys(m map[string]*mcp.Tool) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}
