package mcpapi_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"os"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/opentool-host/opentool-host/frontend/frontdoor"
	"github.com/opentool-host/opentool-host/frontend/mcpapi"
	"github.com/opentool-host/opentool-host/frontend/opentoolapi"
	"github.com/opentool-host/opentool-host/host"
	"github.com/opentool-host/opentool-host/host/core"
	"github.com/opentool-host/opentool-host/testkit"
)

// apiKey is the one key every rig accepts.
const apiKey = "mcp-test-key"

// rig is a real host, its MCP server following it, and one loopback
// HTTP server: /mcp (stateless), /sessions/mcp (with sessions) and the
// OpenTool API, all behind apiKey.
type rig struct {
	h   *host.Host
	s   *mcpapi.Server
	dir string // the plugins directory
	url string // http://127.0.0.1:PORT
	// sessions is the handler of /sessions/mcp.
	sessions *mcpapi.HTTPHandler
}

// newRig starts a host on the plugins pkgs (mod adjusts its
// configuration, as for testkit.StartHost) and serves it.
func newRig(t testing.TB, mod func(*core.Config), cfg mcpapi.Config, pkgs ...string) *rig {
	t.Helper()
	r := &rig{}
	r.h = testkit.StartHost(t, func(c *core.Config) {
		r.dir = c.Dir
		if mod != nil {
			mod(c)
		}
	}, pkgs...)
	if cfg.Logger == nil {
		cfg.Logger = testkit.Logger(t)
	}
	r.s = mcpapi.New(r.h, cfg)
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	go r.s.Follow(ctx)
	r.sessions = r.s.Handler(mcpapi.HTTPOptions{Sessions: true})
	sessions := r.sessions.Routes()
	sessions[0].Pattern = "/sessions" + mcpapi.Path
	routes := slices.Concat(r.s.Handler(mcpapi.HTTPOptions{}).Routes(), sessions, opentoolapi.New(r.h, opentoolapi.Config{Version: "test"}).Routes())
	r.url = testkit.Serve(t, frontdoor.KeyedHandler([]string{apiKey}, routes...))
	return r
}

// examples are the example plugins and the faulty test plugin.
var examples = []string{"./plugins/mock", "./plugins/calculator", "./plugins/files", "./testkit/plugins/faulty"}

// mode is one way to reach the server over HTTP.
type mode struct {
	name     string
	endpoint string // path under the rig's URL
	protocol string // the client's protocol version; "" for the SDK's latest
}

var modes = []mode{
	{"stateless", mcpapi.Path, ""},
	{"stateless-2025-06-18", mcpapi.Path, "2025-06-18"},
	{"sessions", "/sessions" + mcpapi.Path, "2025-11-25"},
	// The SDK's latest (2026-07-28) has no sessions: the endpoint with
	// sessions answers it as the stateless one does.
	{"sessions-2026-07-28", "/sessions" + mcpapi.Path, ""},
}

// keyTransport sends apiKey with every request.
type keyTransport struct{}

func (keyTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	req = req.Clone(req.Context())
	req.Header.Set("Authorization", "Bearer "+apiKey)
	return http.DefaultTransport.RoundTrip(req)
}

// connect opens a client session to r in mode m, closed when the test
// ends.
func (r *rig) connect(t testing.TB, m mode, opts *mcp.ClientOptions) *mcp.ClientSession {
	t.Helper()
	tr := &mcp.StreamableClientTransport{Endpoint: r.url + m.endpoint, HTTPClient: &http.Client{Transport: keyTransport{}}, MaxRetries: -1}
	return connectWith(t, tr, m.protocol, opts)
}

// connectWith connects a client over tr, asking for protocol ("" for the
// SDK's latest).
func connectWith(t testing.TB, tr mcp.Transport, protocol string, opts *mcp.ClientOptions) *mcp.ClientSession {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	c := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "1"}, opts)
	cs, err := c.Connect(ctx, tr, &mcp.ClientSessionOptions{ProtocolVersion: protocol})
	if err != nil {
		t.Fatalf("connect: %v", err)
	}
	t.Cleanup(func() { _ = cs.Close() })
	return cs
}

// call calls tool name with args and fails the test on a protocol error.
func call(t testing.TB, cs *mcp.ClientSession, name string, args any) *mcp.CallToolResult {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: name, Arguments: args})
	if err != nil {
		t.Fatalf("tools/call %s: %v", name, err)
	}
	return res
}

// ok returns the structured result of a successful call and checks that
// the text block holds the same JSON.
func ok(t testing.TB, res *mcp.CallToolResult) map[string]any {
	t.Helper()
	if res.IsError {
		t.Fatalf("isError result: %s", text(res))
	}
	m, isMap := res.StructuredContent.(map[string]any)
	if !isMap {
		t.Fatalf("structuredContent = %#v, want an object", res.StructuredContent)
	}
	var fromText map[string]any
	if err := json.Unmarshal([]byte(text(res)), &fromText); err != nil {
		t.Fatalf("text block is not the JSON result: %q", text(res))
	}
	if a, b := mustJSON(t, m), mustJSON(t, fromText); a != b {
		t.Fatalf("text block %s != structuredContent %s", b, a)
	}
	return m
}

// failed returns the text and error meta of an isError result.
func failed(t testing.TB, res *mcp.CallToolResult) (string, map[string]any) {
	t.Helper()
	if !res.IsError {
		t.Fatalf("want isError, got %s", mustJSON(t, res.StructuredContent))
	}
	meta, _ := res.Meta[mcpapi.ErrorMetaKey].(map[string]any)
	return text(res), meta
}

func text(res *mcp.CallToolResult) string {
	if len(res.Content) != 1 {
		return ""
	}
	tc, _ := res.Content[0].(*mcp.TextContent)
	if tc == nil {
		return ""
	}
	return tc.Text
}

func mustJSON(t testing.TB, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// sleeps returns the faulty plugin's sleeps in flight and those ended by
// cancellation.
func sleeps(t *testing.T, cs *mcp.ClientSession) (active, cancelled float64) {
	t.Helper()
	m := ok(t, call(t, cs, "sleeps", nil))
	return m["active"].(float64), m["cancelled"].(float64)
}

// TestCallToolProgress: a streaming function called through tool
// search's call_tool reports its items as progress, as when it is called
// directly.
func TestCallToolProgress(t *testing.T) {
	r := newRig(t, func(c *core.Config) { c.ToolSearch = true }, mcpapi.Config{}, examples...)
	for _, m := range modes[:2] {
		t.Run(m.name, func(t *testing.T) {
			checkMockProgress(t, r, m, &mcp.CallToolParams{Name: "call_tool", Arguments: map[string]any{"name": "sequentiallyRead"}})
		})
	}
}

// TestCallToolProgressOnce: a streaming function that also reports its
// own progress (rich's ticks: progress, then an item, n times) sends each
// progress value once and increasing, through call_tool as when called
// directly (issue 32 item 6: through call_tool the client got the
// plugin's progress and the item's, 1,1,2,2,3,3): the items are the
// progress, the plugin's own is dropped.
func TestCallToolProgressOnce(t *testing.T) {
	r := newRig(t, func(c *core.Config) { c.ToolSearch = true }, mcpapi.Config{}, "./testkit/plugins/rich")
	const n = 3
	for _, m := range modes {
		for _, params := range []*mcp.CallToolParams{
			{Name: "call_tool", Arguments: map[string]any{"name": "ticks", "arguments": map[string]any{"n": n}}},
			{Name: "ticks", Arguments: map[string]any{"n": n}},
		} {
			t.Run(m.name+"/"+params.Name, func(t *testing.T) {
				if items := checkProgressOf(t, r, m, params); len(items) != n {
					t.Fatalf("items = %s, want %d", mustJSON(t, items), n)
				}
			})
		}
	}
}

// TestModes runs every MCP feature over each HTTP mode against the
// example plugins.
func TestModes(t *testing.T) {
	r := newRig(t, nil, mcpapi.Config{}, examples...)
	for _, m := range modes {
		t.Run(m.name, func(t *testing.T) {
			cs := r.connect(t, m, nil)
			t.Run("list", func(t *testing.T) { checkList(t, r.h, cs) })
			t.Run("crud", func(t *testing.T) { checkCRUD(t, cs) })
			t.Run("errors", func(t *testing.T) { checkErrors(t, cs) })
			t.Run("progress", func(t *testing.T) { checkProgress(t, r, m) })
			t.Run("cancel", func(t *testing.T) { checkCancel(t, cs) })
		})
	}
}

// checkList checks that tools/list has every served function with the
// host's schemas.
func checkList(t *testing.T, h *host.Host, cs *mcp.ClientSession) {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	tools := map[string]*mcp.Tool{}
	for tool, err := range cs.Tools(ctx, nil) {
		if err != nil {
			t.Fatal(err)
		}
		tools[tool.Name] = tool
	}
	var want []string
	for _, fi := range h.Functions() {
		want = append(want, fi.Function.Name)
	}
	got := make([]string, 0, len(tools))
	for name := range tools {
		got = append(got, name)
	}
	slices.Sort(want)
	slices.Sort(got)
	if !slices.Equal(got, want) {
		t.Fatalf("tools = %v\nwant %v", got, want)
	}
	schemas := []struct{ tool, in, out string }{
		{"add", `{"additionalProperties":false,"properties":{"a":{"description":"First operand","type":"number"},"b":{"description":"Second operand","type":"number"}},"required":["a","b"],"type":"object"}`,
			`{"additionalProperties":false,"properties":{"result":{"description":"The result of the operation","type":"number"}},"required":["result"],"type":"object"}`},
		{"read", `{"properties":{"id":{"description":"Text Id in storage","type":"integer"}},"required":["id"],"type":"object"}`, `null`},
		{"count", `{"properties":{},"required":[],"type":"object"}`, `null`},
		{"sequentiallyRead", `{"properties":{},"required":[],"type":"object"}`, `{"properties":{"items":{"type":"array"}},"required":["items"],"type":"object"}`},
		{"ticks", `{"properties":{},"required":[],"type":"object"}`,
			`{"properties":{"items":{"items":{"properties":{"n":{"type":"integer"}},"type":"object"},"type":"array"}},"required":["items"],"type":"object"}`},
	}
	for _, s := range schemas {
		tool := tools[s.tool]
		if in := mustJSON(t, tool.InputSchema); in != s.in {
			t.Errorf("%s inputSchema = %s\nwant %s", s.tool, in, s.in)
		}
		if out := mustJSON(t, tool.OutputSchema); out != s.out {
			t.Errorf("%s outputSchema = %s\nwant %s", s.tool, out, s.out)
		}
	}
	if d := tools["add"].Description; d != "Add two numbers: a + b." {
		t.Errorf("add description = %q", d)
	}
	if in := mustJSON(t, tools["read_text"].InputSchema); !strings.Contains(in, `"path"`) || !strings.Contains(in, `"required":["path"]`) {
		t.Errorf("read_text inputSchema = %s", in)
	}
}

// checkCRUD runs the mock's CRUD round trip and the calculator.
func checkCRUD(t *testing.T, cs *mcp.ClientSession) {
	n := ok(t, call(t, cs, "count", nil))["count"].(float64)
	if got := ok(t, call(t, cs, "count", json.RawMessage("null")))["count"]; got != n {
		t.Errorf("count with null arguments = %v", got)
	}
	id := ok(t, call(t, cs, "create", map[string]any{"text": "Hi"}))["id"].(float64)
	if id != n {
		t.Errorf("create id = %v, want %v", id, n)
	}
	if got := ok(t, call(t, cs, "read", map[string]any{"id": id}))["text"]; got != "Hi" {
		t.Errorf("read = %v", got)
	}
	ok(t, call(t, cs, "update", map[string]any{"id": id, "text": "Yo"}))
	if got := ok(t, call(t, cs, "read", map[string]any{"id": id}))["text"]; got != "Yo" {
		t.Errorf("read after update = %v", got)
	}
	if got := ok(t, call(t, cs, "delete", map[string]any{"id": id}))["result"]; got != "Delete successfully." {
		t.Errorf("delete = %v", got)
	}
	if got := ok(t, call(t, cs, "count", nil))["count"]; got != n {
		t.Errorf("count after delete = %v, want %v", got, n)
	}
	if got := ok(t, call(t, cs, "add", map[string]any{"a": 1.5, "b": 2}))["result"]; got != 3.5 {
		t.Errorf("add = %v", got)
	}
}

// checkErrors checks the translation of every kind of failure.
func checkErrors(t *testing.T, cs *mcp.ClientSession) {
	txt, meta := failed(t, call(t, cs, "divide", map[string]any{"a": 1, "b": 0}))
	if txt != "division by zero: b must not be 0" || meta["kind"] != "tool_error" || meta["code"] != 400.0 || meta["plugin"] != "calculator" {
		t.Errorf("tool error: %q %v", txt, meta)
	}
	txt, meta = failed(t, call(t, cs, "run", nil))
	if !strings.Contains(txt, "run failed") || meta["code"] != 500.0 {
		t.Errorf("tool error 500: %q %v", txt, meta)
	}
	txt, meta = failed(t, call(t, cs, "read", map[string]any{"id": "abc"}))
	faults, _ := meta["faults"].([]any)
	if txt != "invalid params: id: must be integer, got string" || meta["kind"] != "invalid_params" || len(faults) != 1 {
		t.Errorf("invalid params: %q %v", txt, meta)
	}
	txt, _ = failed(t, call(t, cs, "add", map[string]any{"a": 1, "b": 2, "A": 3}))
	if !strings.HasPrefix(txt, "invalid params: ") {
		t.Errorf("unknown parameter: %q", txt)
	}
	if txt, _ = failed(t, call(t, cs, "count", json.RawMessage("[1]"))); txt != "invalid params: arguments must be a JSON object, got array" {
		t.Errorf("arguments not an object: %q", txt)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	_, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "nope", Arguments: map[string]any{}})
	var we *jsonrpc.Error
	if !errors.As(err, &we) || we.Code != jsonrpc.CodeInvalidParams || !strings.Contains(we.Message, `"nope"`) {
		t.Errorf("unknown tool: %v", err)
	}
}

// checkProgress calls the mock's streaming function with a progress
// token: one notification per item, and the items collected.
func checkProgress(t *testing.T, r *rig, m mode) {
	checkMockProgress(t, r, m, &mcp.CallToolParams{Name: "sequentiallyRead", Arguments: map[string]any{}})
}

// checkMockProgress makes the call params, which runs the mock's
// streaming function sequentiallyRead (directly, or through call_tool),
// with checkProgressOf, and checks the items collected.
func checkMockProgress(t *testing.T, r *rig, m mode, params *mcp.CallToolParams) {
	t.Helper()
	count := ok(t, call(t, r.connect(t, m, nil), "count", nil))["count"].(float64)
	items := checkProgressOf(t, r, m, params)
	if len(items) != int(count) || mustJSON(t, items[0]) != `{"data":"Hello"}` {
		t.Fatalf("items = %s, want %v items", mustJSON(t, items), count)
	}
}

// checkProgressOf makes the call params, which runs a streaming function
// (directly, or through call_tool), with a progress token and returns
// the items collected: exactly one notification per item, in order,
// progress 1, 2, 3, ... (each value once, increasing) and the item as
// message.
func checkProgressOf(t *testing.T, r *rig, m mode, params *mcp.CallToolParams) []any {
	t.Helper()
	var mu sync.Mutex
	var notes []*mcp.ProgressNotificationParams
	cs := r.connect(t, m, &mcp.ClientOptions{ProgressNotificationHandler: func(_ context.Context, req *mcp.ProgressNotificationClientRequest) {
		mu.Lock()
		defer mu.Unlock()
		notes = append(notes, req.Params)
	}})
	params.SetProgressToken("p1")
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	res, err := cs.CallTool(ctx, params)
	if err != nil {
		t.Fatal(err)
	}
	items, _ := ok(t, res)["items"].([]any)
	// The notifications come before the answer, but the client hands
	// them to the handler on its own goroutine.
	testkit.Eventually(t, 10*time.Second, "one progress notification per item", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(notes) >= len(items)
	})
	mu.Lock()
	defer mu.Unlock()
	if len(notes) != len(items) {
		t.Errorf("%d progress notifications, want %d (one per item)", len(notes), len(items))
	}
	for i, n := range notes[:min(len(notes), len(items))] {
		if n.ProgressToken != "p1" || n.Progress != float64(i+1) || n.Message != mustJSON(t, items[i]) {
			t.Errorf("progress %d of %d = %+v, want progress %d, message %s (each value once, increasing)", i+1, len(notes), n, i+1, mustJSON(t, items[i]))
		}
	}
	return items
}

// checkCancel cancels a call in flight and checks that the plugin saw it
// cancelled.
func checkCancel(t *testing.T, cs *mcp.ClientSession) {
	_, before := sleeps(t, cs)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	errc := make(chan error, 1)
	go func() {
		_, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "sleep", Arguments: map[string]any{"ms": 60000}})
		errc <- err
	}()
	testkit.Eventually(t, 10*time.Second, "the sleep call runs in the plugin", func() bool {
		active, _ := sleeps(t, cs)
		return active >= 1
	})
	cancel()
	if err := <-errc; !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled call: %v", err)
	}
	testkit.Eventually(t, 10*time.Second, "the plugin sees the call cancelled", func() bool {
		active, cancelled := sleeps(t, cs)
		return cancelled > before && active == 0
	})
}

// post posts body to url as an MCP client would, with key when not "",
// and returns the HTTP status.
func post(t *testing.T, url, key, body string) int {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, url, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	if key != "" {
		req.Header.Set("Authorization", "Bearer "+key)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return resp.StatusCode
}

// TestHTTPGuards checks that /mcp needs the API key and caps bodies at
// MaxBodyBytes.
func TestHTTPGuards(t *testing.T) {
	r := newRig(t, nil, mcpapi.Config{}, "./plugins/calculator")
	body := `{"jsonrpc":"2.0","id":1,"method":"tools/list"}`
	for _, p := range []string{mcpapi.Path, "/sessions" + mcpapi.Path} {
		if code := post(t, r.url+p, "", body); code != http.StatusUnauthorized {
			t.Errorf("%s without a key: %d, want 401", p, code)
		}
		if code := post(t, r.url+p, "wrong", body); code != http.StatusUnauthorized {
			t.Errorf("%s with a wrong key: %d, want 401", p, code)
		}
	}
	small := testkit.Serve(t, r.s.Handler(mcpapi.HTTPOptions{MaxBodyBytes: 64}))
	if code := post(t, small, "", `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"add","arguments":{"a":1,"b":2}}}`); code != http.StatusRequestEntityTooLarge {
		t.Errorf("a body over MaxBodyBytes: %d, want 413", code)
	}
	tr := &mcp.StreamableClientTransport{Endpoint: r.url + mcpapi.Path, MaxRetries: -1}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if cs, err := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "1"}, nil).Connect(ctx, tr, nil); err == nil {
		cs.Close()
		t.Error("an SDK client without the key connected")
	}
}

// TestPluginKilledMidCall: a plugin SIGKILLed during a call gives an
// isError result; the next call succeeds on the restarted plugin; the
// restart changes no tool.
func TestPluginKilledMidCall(t *testing.T) {
	r := newRig(t, nil, mcpapi.Config{}, "./testkit/plugins/faulty")
	cs := r.connect(t, modes[0], nil)
	pid := int(ok(t, call(t, cs, "pid", nil))["pid"].(float64))
	changes := mcpapi.Changes(r.s)
	done := make(chan *mcp.CallToolResult, 1)
	go func() { done <- call(t, cs, "sleep", map[string]any{"ms": 60000}) }()
	testkit.Eventually(t, 10*time.Second, "the sleep call runs in the plugin", func() bool {
		active, _ := sleeps(t, cs)
		return active >= 1
	})
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	txt, meta := failed(t, <-done)
	if meta["kind"] != "plugin_exited" || meta["status"] != "signal: killed" || meta["retryable"] != true || !strings.Contains(txt, `plugin "faulty"`) {
		t.Errorf("killed: %q %v", txt, meta)
	}
	if again := int(ok(t, call(t, cs, "pid", nil))["pid"].(float64)); again == pid {
		t.Errorf("pid %d after the kill is the killed one", again)
	}
	if n := mcpapi.Sync(r.s); n != 0 || mcpapi.Changes(r.s) != changes {
		t.Errorf("a restart changed %d tools (%d changes since the kill)", n, mcpapi.Changes(r.s)-changes)
	}
}

// TestHotReload: a binary dropped into the plugins folder is announced
// with tools/list_changed (over subscriptions/listen, on either endpoint,
// and over a session's GET stream) and its tools are listed; removing it
// does the same.
func TestHotReload(t *testing.T) {
	r := newRig(t, func(c *core.Config) { c.Watch = true }, mcpapi.Config{}, "./plugins/calculator")
	listen := []mode{modes[0], modes[2], modes[3]}
	changed := make([]chan struct{}, len(listen))
	sessions := make([]*mcp.ClientSession, len(listen))
	for i, m := range listen {
		ch := make(chan struct{}, 16)
		changed[i] = ch
		sessions[i] = r.connect(t, m, &mcp.ClientOptions{ToolListChangedHandler: func(context.Context, *mcp.ToolListChangedRequest) {
			ch <- struct{}{}
		}})
	}
	file := testkit.InstallPlugin(t, r.dir, "mock", "./plugins/mock")
	for i, m := range listen {
		waitListed(t, m.name, changed[i], sessions[i], "count", true)
	}
	if res := call(t, sessions[0], "count", nil); res.IsError {
		t.Fatalf("count: %s", text(res))
	}
	if err := os.Remove(file); err != nil {
		t.Fatal(err)
	}
	for i, m := range listen {
		waitListed(t, m.name, changed[i], sessions[i], "count", false)
	}
}

// waitListed waits for a list_changed notification after which tool is
// (or is not) listed.
func waitListed(t *testing.T, name string, changed <-chan struct{}, cs *mcp.ClientSession, tool string, want bool) {
	t.Helper()
	deadline := time.After(20 * time.Second)
	for {
		select {
		case <-changed:
		case <-deadline:
			t.Fatalf("%s: no tools/list_changed with %s listed = %v", name, tool, want)
		}
		if listed(t, cs, tool) == want {
			return
		}
	}
}

// listed reports whether tools/list has tool.
func listed(t *testing.T, cs *mcp.ClientSession, tool string) bool {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	res, err := cs.ListTools(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	return slices.ContainsFunc(res.Tools, func(x *mcp.Tool) bool { return x.Name == tool })
}

// TestStreamCapAndCancel: a stream whose items pass MaxResultBytes ends
// with an isError result and the plugin is told to cancel; a stream
// cancelled by the client after some progress ends in the plugin too.
func TestStreamCapAndCancel(t *testing.T) {
	r := newRig(t, nil, mcpapi.Config{MaxResultBytes: 200}, "./testkit/plugins/faulty")
	cs := r.connect(t, modes[0], nil)
	_, before := sleeps(t, cs)
	txt, meta := failed(t, call(t, cs, "ticks", nil))
	if meta["kind"] != "result_rejected" || !strings.Contains(txt, "200 bytes") {
		t.Errorf("capped stream: %q %v", txt, meta)
	}
	testkit.Eventually(t, 10*time.Second, "the plugin sees the capped stream cancelled", func() bool {
		_, cancelled := sleeps(t, cs)
		return cancelled > before
	})

	_, before = sleeps(t, cs)
	progress := make(chan float64, 100)
	cs = r.connect(t, modes[0], &mcp.ClientOptions{ProgressNotificationHandler: func(_ context.Context, req *mcp.ProgressNotificationClientRequest) {
		progress <- req.Params.Progress
	}})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	params := &mcp.CallToolParams{Name: "ticks", Arguments: map[string]any{}}
	params.SetProgressToken(7)
	errc := make(chan error, 1)
	go func() {
		_, err := cs.CallTool(ctx, params)
		errc <- err
	}()
	for want := 1.0; want <= 3; want++ {
		select {
		case p := <-progress:
			if p != want {
				t.Fatalf("progress %v, want %v", p, want)
			}
		case <-time.After(10 * time.Second):
			t.Fatal("no progress")
		}
	}
	cancel()
	if err := <-errc; !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled stream: %v", err)
	}
	testkit.Eventually(t, 10*time.Second, "the plugin sees the stream cancelled", func() bool {
		_, cancelled := sleeps(t, cs)
		return cancelled > before
	})
}
