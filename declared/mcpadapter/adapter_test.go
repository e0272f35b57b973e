package mcpadapter

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/opentool-host/opentool-host/internal/wire"
	"github.com/opentool-host/opentool-host/pluginsdk"
	"github.com/opentool-host/opentool-host/process/launcher"
	"github.com/opentool-host/opentool-host/protocol/decl"
	"github.com/opentool-host/opentool-host/protocol/opentool"
	"github.com/opentool-host/opentool-host/testkit"
)

// These tests run the adapter in-process (New, Run, the Tool methods,
// and go-plugin's in-process gRPC connection) against real server
// processes: the example server examples/mcp-notes and the Go SDK's
// "everything" example. Every wait is bounded.

const bound = 15 * time.Second // the most any one step may take

// notesBin builds the example server once per test binary.
func notesBin(t testing.TB) string { return testkit.Build(t, "./examples/mcp-notes") }

// notesLaunch declares the example server with args.
func notesLaunch(t testing.TB, args ...string) decl.Launch {
	return decl.Launch{Name: "notes", Dir: t.TempDir(), Server: decl.MCPServer{Command: notesBin(t), Args: args}}
}

// running is an Adapter whose Run runs until the test ends.
type running struct {
	*Adapter
	stderr *testkit.SyncBuffer
	done   chan error

	mu       sync.Mutex
	returned bool
	err      error
}

// start runs New(l).Run in the background; cleanup cancels it and waits.
func start(t testing.TB, l decl.Launch, o Options) *running {
	t.Helper()
	r := &running{stderr: &testkit.SyncBuffer{}, done: make(chan error, 1)}
	if o.Starter == nil {
		// The test's environment stands for the plugin's.
		o.Starter = &launcher.Starter{Env: os.Environ(), Stderr: r.stderr}
	}
	r.Adapter = New(l, testkit.Logger(t), o)
	ctx, cancel := context.WithCancel(context.Background())
	go func() { r.done <- r.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		if _, ok := r.result(bound); !ok {
			t.Errorf("Run did not return within %v of its context's end", bound)
		}
	})
	return r
}

// result waits up to d for Run's error; ok is false when Run did not
// return in time.
func (r *running) result(d time.Duration) (err error, ok bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if !r.returned {
		select {
		case r.err = <-r.done:
			r.returned = true
		case <-time.After(d):
		}
	}
	return r.err, r.returned
}

// load calls Load and checks the document passes opentool.Parse.
func load(t testing.TB, a *Adapter) map[string]opentool.Function {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), bound)
	defer cancel()
	doc, err := a.Load(ctx)
	if err != nil {
		t.Fatalf("Load: %v", err)
	}
	raw, _ := json.Marshal(doc)
	if _, err := opentool.Parse(raw); err != nil {
		t.Fatalf("document does not parse: %v\n%s", err, raw)
	}
	fns := map[string]opentool.Function{}
	for _, f := range doc.Functions {
		fns[f.Name] = f
	}
	return fns
}

// call runs CallJSON with bounded time.
func call(t testing.TB, a *Adapter, name, args string) (string, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), bound)
	defer cancel()
	out, err := a.CallJSON(ctx, name, []byte(args))
	return string(out), err
}

// mustCall is call that fails the test on an error.
func mustCall(t testing.TB, a *Adapter, name, args string) string {
	t.Helper()
	out, err := call(t, a, name, args)
	if err != nil {
		t.Fatalf("%s(%s): %v", name, args, err)
	}
	return out
}

// wantToolError checks err is a *pluginsdk.Error with code and a
// message containing msg.
func wantToolError(t testing.TB, err error, code int, msg string) {
	t.Helper()
	var pe *pluginsdk.Error
	if !errors.As(err, &pe) || pe.Code != code || !strings.Contains(pe.Message, msg) {
		t.Fatalf("error = %v, want code %d with %q", err, code, msg)
	}
}

func TestAdapterServesTools(t *testing.T) {
	r := start(t, notesLaunch(t), Options{})
	fns := load(t, r.Adapter)
	for _, name := range []string{"add_note", "list_notes", "get_note", "slow", "stats", "repeat"} {
		if _, ok := fns[name]; !ok {
			t.Fatalf("%s not served: %v", name, fns)
		}
	}
	// The example leaves echo to the popular servers that have one
	// (server-everything), which a user declares beside it (issue 34).
	if f, ok := fns["echo"]; ok {
		t.Errorf("the example serves echo (%q), a name of server-everything", f.Description)
	}
	if f := fns["add_note"]; f.Return == nil || f.Return.Schema.Properties["id"] == nil || !f.Parameters[1].Required || f.Parameters[1].Name != "title" {
		t.Errorf("add_note = %+v", f)
	}
	if d := fns["list_notes"].Description; d != "Lists the notes. (read-only)" {
		t.Errorf("list_notes description = %q", d)
	}
	// structuredContent as the server wrote it (the SDK's servers sort
	// the members).
	if got := mustCall(t, r.Adapter, "add_note", `{"title":"a","body":"b"}`); got != `{"body":"b","id":1,"title":"a"}` {
		t.Errorf("add_note = %s", got)
	}
	if got := mustCall(t, r.Adapter, "list_notes", ``); got != `{"notes":[{"body":"b","id":1,"title":"a"}]}` {
		t.Errorf("list_notes = %s", got)
	}
	if got := mustCall(t, r.Adapter, "repeat", `{"text":"hi"}`); got != `{"content":[{"type":"text","text":"hi"}],"text":"hi"}` {
		t.Errorf("repeat = %s", got)
	}
	_, err := call(t, r.Adapter, "get_note", `{"id":9}`)
	wantToolError(t, err, 500, "no note 9")
	_, err = call(t, r.Adapter, "add_note", `{"title":""}`)
	wantToolError(t, err, 400, "title must not be empty")
	_, err = call(t, r.Adapter, "nope", `{}`)
	wantToolError(t, err, 404, `"nope"`)
	if !strings.Contains(r.stderr.String(), "mcp-notes: serving MCP on stdio") {
		t.Errorf("the server's stderr did not reach Options.Starter.Stderr: %q", r.stderr.String())
	}
}

// TestAdapterOverGoPlugin serves the adapter over go-plugin's in-process
// gRPC connection, as the host sees it: Load, calls, a tool error, Watch.
// TestAdapterOverTheLocalWire: the adapter as the host calls it, in its
// own process (pluginsdk.Local, wire.NewLocalClient).
func TestAdapterOverTheLocalWire(t *testing.T) {
	r := start(t, notesLaunch(t, "--add-tool-after", "300ms"), Options{})
	c := testkit.LocalConn(r.Adapter)
	ctx, cancel := context.WithTimeout(context.Background(), bound)
	defer cancel()
	next, err := c.Watch(ctx) // opened before Load, as the host does
	if err != nil {
		t.Fatal(err)
	}
	if names := wireNames(t, c); names["late"] || !names["add_note"] {
		t.Fatalf("first Load = %v", names)
	}
	// Protocol 3: the server's CallToolResult as it sent it.
	out, err := testkit.WireInvoke(ctx, c, "add_note", []byte(`{"title":"w"}`), false)
	if err != nil || len(out) != 1 || !strings.Contains(string(out[0]), `"structuredContent":{"id":1,"title":"w"}`) {
		t.Fatalf("add_note over the wire = %q, %v", out, err)
	}
	out, err = testkit.WireInvoke(ctx, c, "get_note", []byte(`{"id":5}`), false)
	if err != nil || len(out) != 1 || !strings.Contains(string(out[0]), `"isError":true`) || !strings.Contains(string(out[0]), "no note 5") {
		t.Fatalf("get_note over the wire = %q, %v", out, err)
	}
	// list_changed → Watch event → Load shows the new tool.
	if _, err := next(); err != nil {
		t.Fatalf("watch: %v", err)
	}
	if names := wireNames(t, c); !names["late"] {
		t.Fatalf("Load after list_changed = %v", names)
	}
	out, err = testkit.WireInvoke(ctx, c, "late", []byte(`{"text":"new"}`), false)
	if err != nil || len(out) != 1 || !strings.Contains(string(out[0]), `"text":"new"`) {
		t.Fatalf("late = %q, %v", out, err)
	}
}

// wireNames loads over the wire and returns the function names.
func wireNames(t testing.TB, c *wire.Client) map[string]bool {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), bound)
	defer cancel()
	raw, err := c.Load(ctx)
	if err != nil {
		t.Fatalf("Load over the wire: %v", err)
	}
	doc, err := opentool.Parse(raw)
	if err != nil {
		t.Fatal(err)
	}
	names := map[string]bool{}
	for _, f := range doc.Functions {
		names[f.Name] = true
	}
	return names
}

func TestAdapterListChangedInProcess(t *testing.T) {
	r := start(t, notesLaunch(t, "--add-tool-after", "200ms"), Options{})
	if fns := load(t, r.Adapter); len(fns) != 6 {
		t.Fatalf("first Load: %d functions", len(fns))
	}
	select {
	case <-r.DocumentChanged():
	case <-time.After(bound):
		t.Fatal("no DocumentChanged after the server added a tool")
	}
	if fns := load(t, r.Adapter); len(fns) != 7 || fns["late"].Description != "Added while running." {
		t.Fatalf("Load after list_changed: %v", fns)
	}
}

func TestAdapterPaginationAndRenames(t *testing.T) {
	r := start(t, notesLaunch(t, "--page-size", "2", "--odd-tools"), Options{})
	fns := load(t, r.Adapter)
	if len(fns) != 8 { // 6, the renamed one and all_of (served with its schema as declared)
		t.Fatalf("%d functions over pages of 2: %v", len(fns), fns)
	}
	if f, ok := fns["all_of"]; !ok || !strings.Contains(string(f.InputSchema), `"allOf":[{"type":"string"}]`) {
		t.Fatalf("all_of = %+v", f)
	}
	if got := mustCall(t, r.Adapter, "ns_tool_with_spaces", `{"text":"x"}`); got != `{"content":[{"type":"text","text":"x"}],"text":"x"}` {
		t.Fatalf("renamed tool = %s", got)
	}
}

// TestAdapterSchemasAsDeclared: tools whose schemas OpenTool cannot
// express are served with them as declared (and title, annotations,
// icons, _meta); the one whose input schema is not an object is refused
// and named in the document's refused list (issue 22).
func TestAdapterSchemasAsDeclared(t *testing.T) {
	r := start(t, notesLaunch(t, "--schema-tools"), Options{})
	ctx, cancel := context.WithTimeout(context.Background(), bound)
	defer cancel()
	doc, err := r.Load(ctx)
	if err != nil {
		t.Fatal(err)
	}
	fns := load(t, r.Adapter)
	choose := fns["choose"]
	if string(choose.InputSchema) != `{"additionalProperties":false,"properties":{"flag":{"description":"yes, no, or a word","type":["boolean","string"]}},"required":["flag"],"type":"object"}` {
		t.Errorf("choose inputSchema = %s", choose.InputSchema)
	}
	if len(choose.Parameters) != 1 || choose.Parameters[0].Schema.Type != "boolean" || !choose.Parameters[0].Required {
		t.Errorf("choose parameters = %s", mustJSON(choose.Parameters))
	}
	if c := fns["contact"]; !strings.Contains(string(c.InputSchema), `"$anchor":"addressDef"`) || len(c.Parameters) != 5 {
		t.Errorf("contact = %s", mustJSON(c))
	}
	b := fns["bounded"]
	if b.Title != "Bounded number" || b.Annotations == nil || !*b.Annotations.ReadOnlyHint || *b.Annotations.DestructiveHint || *b.Annotations.OpenWorldHint ||
		len(b.Icons) != 1 || string(b.Meta) != `{"example.com/tier":"free"}` || string(b.Parameters[0].Schema.Extra["maximum"]) != "100" {
		t.Errorf("bounded = %s", mustJSON(b))
	}
	if _, ok := fns["bad_input"]; ok || len(doc.Refused) != 1 || doc.Refused[0].Name != "bad_input" ||
		doc.Refused[0].Reason != `MCP tool "bad_input": inputSchema.type: "string": the arguments of a call are an object` {
		t.Errorf("bad_input served %v; refused %+v", ok, doc.Refused)
	}
}

// mustJSON is v as JSON, for messages.
func mustJSON(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

// stats returns the example server's {"active":N,"cancelled":M}.
func stats(t testing.TB, a *Adapter) string { return mustCall(t, a, "stats", `{}`) }

func TestAdapterCancellationReachesServer(t *testing.T) {
	r := start(t, notesLaunch(t), Options{})
	load(t, r.Adapter)

	// A caller that gives up (CallJSON's ctx).
	ctx, cancel := context.WithCancel(context.Background())
	errc := make(chan error, 1)
	go func() {
		_, err := r.CallJSON(ctx, "slow", []byte(`{"ms":60000}`))
		errc <- err
	}()
	testkit.Eventually(t, bound, "slow call in flight", func() bool { return stats(t, r.Adapter) == `{"active":1,"cancelled":0}` })
	cancel()
	select {
	case err := <-errc:
		wantToolError(t, err, 500, "notifications/cancelled sent")
	case <-time.After(bound):
		t.Fatal("CallJSON did not return after its context ended")
	}
	testkit.Eventually(t, bound, "server saw notifications/cancelled", func() bool { return stats(t, r.Adapter) == `{"active":0,"cancelled":1}` })

	// The host's cancel on its call (wire.Call.Cancel).
	c := testkit.LocalConn(r.Adapter)
	wctx, wcancel := context.WithTimeout(context.Background(), bound)
	defer wcancel()
	inv, err := c.Invoke(wctx, "slow", []byte(`{"ms":60000}`), false)
	if err != nil {
		t.Fatal(err)
	}
	testkit.Eventually(t, bound, "slow call over the wire in flight", func() bool { return stats(t, r.Adapter) == `{"active":1,"cancelled":1}` })
	if err := inv.Cancel(); err != nil {
		t.Fatal(err)
	}
	if _, err := inv.Recv(); err == nil {
		t.Fatal("cancelled call returned a result")
	}
	testkit.Eventually(t, bound, "server saw the second cancel", func() bool { return stats(t, r.Adapter) == `{"active":0,"cancelled":2}` })
}

func TestAdapterConcurrentCalls(t *testing.T) {
	r := start(t, notesLaunch(t), Options{})
	load(t, r.Adapter)
	const n = 64
	var wg sync.WaitGroup
	ids := make(chan string, n)
	for i := range n {
		wg.Go(func() {
			out, err := call(t, r.Adapter, "add_note", fmt.Sprintf(`{"title":"t%d"}`, i))
			if err != nil {
				t.Error(err)
				return
			}
			var note struct{ ID int }
			_ = json.Unmarshal([]byte(out), &note)
			ids <- strconv.Itoa(note.ID)
		})
	}
	wg.Wait()
	close(ids)
	seen := map[string]bool{}
	for id := range ids {
		seen[id] = true
	}
	if len(seen) != n {
		t.Fatalf("%d distinct ids from %d concurrent add_note calls", len(seen), n)
	}
}

func TestAdapterInitializeTimeout(t *testing.T) {
	r := start(t, notesLaunch(t, "--hang-initialize"), Options{InitTimeout: time.Second})
	began := time.Now()
	err, ok := r.result(bound)
	if !ok {
		t.Fatal("Run did not return after InitTimeout")
	}
	if elapsed := time.Since(began); elapsed > 5*time.Second {
		t.Errorf("Run returned after %v with InitTimeout 1s", elapsed)
	}
	if err == nil || err.Error() != `MCP server "notes" did not answer initialize within 1s` {
		t.Fatalf("Run = %v", err)
	}
	_, lerr := r.Load(context.Background())
	wantToolError(t, lerr, 500, err.Error())
	waitNoChild(t, "--hang-initialize")
}

// TestAdapterLoadDeadline: the host's Load deadline comes first; Load
// answers with the reason 0.5 s before it, and the attempt ends.
func TestAdapterLoadDeadline(t *testing.T) {
	r := start(t, notesLaunch(t, "--hang-initialize"), Options{})
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	_, err := r.Load(ctx)
	if ctx.Err() != nil {
		t.Fatal("Load waited until its deadline")
	}
	wantToolError(t, err, 500, `MCP server "notes" did not answer initialize within 1.`)
	rerr, ok := r.result(bound)
	if !ok || rerr == nil || !strings.Contains(err.Error(), rerr.Error()) {
		t.Fatalf("Run = %v (returned: %v), want Load's reason", rerr, ok)
	}
	waitNoChild(t, "--hang-initialize")
}

// waitNoChild waits until no child of this process has arg in its
// command line (Linux /proc; skipped elsewhere).
func waitNoChild(t testing.TB, arg string) {
	t.Helper()
	if _, err := os.Stat("/proc/self/task"); err != nil {
		return
	}
	testkit.Eventually(t, bound, "no server process with "+arg+" left", func() bool {
		for _, pid := range children() {
			b, _ := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
			if bytes.Contains(b, []byte(arg)) {
				return false
			}
		}
		return true
	})
}

// children lists the pids whose parent is this process.
func children() []int {
	files, _ := filepath.Glob(fmt.Sprintf("/proc/%d/task/*/children", os.Getpid()))
	var out []int
	for _, f := range files {
		b, _ := os.ReadFile(f)
		for _, field := range strings.Fields(string(b)) {
			if n, err := strconv.Atoi(field); err == nil {
				out = append(out, n)
			}
		}
	}
	return out
}

func TestAdapterServerExit(t *testing.T) {
	r := start(t, notesLaunch(t, "--exit-after", "1s"), Options{})
	load(t, r.Adapter)
	errc := make(chan error, 1)
	go func() { _, err := call(t, r.Adapter, "slow", `{"ms":60000}`); errc <- err }()
	err, ok := r.result(bound)
	if !ok || err == nil || err.Error() != `MCP server "notes" exited (exit status 3)` {
		t.Fatalf("Run = %v (returned: %v)", err, ok)
	}
	select {
	case err := <-errc:
		wantToolError(t, err, 500, `MCP server "notes" exited during the call of tool "slow" (exit status 3)`)
	case <-time.After(bound):
		t.Fatal("the call in flight did not end when the server exited")
	}
}

func TestAdapterServerKilled(t *testing.T) {
	if _, err := os.Stat("/proc/self/task"); err != nil {
		t.Skip("needs /proc")
	}
	r := start(t, notesLaunch(t, "--page-size", "3"), Options{})
	load(t, r.Adapter)
	var pid int
	for _, c := range children() {
		if b, _ := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", c)); bytes.Contains(b, []byte("--page-size")) {
			pid = c
		}
	}
	if pid == 0 {
		t.Fatal("server process not found")
	}
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	if err, ok := r.result(bound); !ok || err == nil || err.Error() != `MCP server "notes" exited (signal: killed)` {
		t.Fatalf("Run = %v (returned: %v)", err, ok)
	}
}

func TestAdapterConnectFailures(t *testing.T) {
	dir := t.TempDir()
	hostile := testkit.Build(t, "./testkit/plugins/hostilemcp")
	cases := []struct {
		name string
		srv  decl.MCPServer
		want string
		wait time.Duration // longer than bound: reading 64 MiB takes a while under -race
	}{
		{"exits before initialize", decl.MCPServer{Command: "/bin/sh", Args: []string{"-c", "echo oops >&2; exit 7"}}, `MCP server "notes" exited (exit status 7) before it answered initialize`, 0},
		{"bare name not in PATH", decl.MCPServer{Command: "no-such-mcp-server"}, `MCP server "notes": the plugin's program "no-such-mcp-server" is not installed`, 0},
		{"lists 10,001 tools", decl.MCPServer{Command: hostile, Args: []string{"manytools"}}, `MCP server "notes": tools/list: more than 10000 tools, the most the host reads`, 0},
		{"answers initialize with 100 MiB", decl.MCPServer{Command: hostile, Args: []string{"biginit"}}, `MCP server "notes": initialize: a line longer than 64 MiB`, 6 * bound},
		{"relative path missing", decl.MCPServer{Command: "./missing"}, `MCP server "notes": the plugin's program "./missing" does not exist`, 0},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := start(t, decl.Launch{Name: "notes", Dir: dir, Server: tc.srv}, Options{InitTimeout: max(tc.wait, DefaultInitTimeout)})
			err, ok := r.result(max(tc.wait, bound))
			if !ok || err == nil || !strings.HasPrefix(err.Error(), tc.want) {
				t.Fatalf("Run = %v, want %q", err, tc.want)
			}
			_, lerr := r.Load(context.Background())
			wantToolError(t, lerr, 500, tc.want)
		})
	}
}

// TestAdapterEnvironment: the server gets the launcher's allow-list of
// the plugin's environment (base names and what the host granted, never
// go-plugin's variables or what was not granted), plus the declared env,
// in the declared cwd; commands resolve against the declaration's folder
// or the declared PATH.
func TestAdapterEnvironment(t *testing.T) {
	root := t.TempDir()
	plugins, bin := filepath.Join(root, "plugins"), filepath.Join(root, "bin")
	for _, d := range []string{filepath.Join(plugins, "work"), bin} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	testkit.CopyFile(t, notesBin(t), filepath.Join(bin, "mcp-notes"), 0o755)
	t.Setenv(wire.Handshake.MagicCookieKey, wire.Handshake.MagicCookieValue)
	t.Setenv("PLUGIN_PROTOCOL_VERSIONS", "1")
	t.Setenv("NOTES_FROM_HOST", "host")
	t.Setenv("NOTES_NOT_GRANTED", "host")
	t.Setenv("NOTES_OVERRIDDEN", "host")
	env := map[string]string{"NOTES_DECLARED": "yes", "NOTES_OVERRIDDEN": "declared", "PATH": bin}
	cases := []struct{ command, cwd, wantCwd string }{
		{"../bin/mcp-notes", "", plugins},
		{"mcp-notes", "work", filepath.Join(plugins, "work")},
		{filepath.Join(bin, "mcp-notes"), filepath.Join(plugins, "work"), filepath.Join(plugins, "work")},
	}
	for _, tc := range cases {
		l := decl.Launch{Name: "notes", Dir: plugins, Server: decl.MCPServer{Command: tc.command, Args: []string{"--env-tool"}, Env: env, Cwd: tc.cwd}}
		r := start(t, l, Options{Starter: &launcher.Starter{Env: os.Environ(), Granted: []string{"NOTES_FROM_HOST", "NOTES_OVERRIDDEN"}}})
		load(t, r.Adapter)
		for name, want := range map[string]string{
			wire.Handshake.MagicCookieKey:    `"set":false`,
			"PLUGIN_PROTOCOL_VERSIONS":       `"set":false`,
			"NOTES_FROM_HOST":                `"set":true,"value":"host"`,
			"NOTES_NOT_GRANTED":              `"set":false`,
			"NOTES_OVERRIDDEN":               `"set":true,"value":"declared"`,
			"NOTES_DECLARED":                 `"set":true,"value":"yes"`,
			"PATH":                           `"value":"` + bin + `"`,
			"NO_SUCH_VARIABLE_IN_THIS_TEST_": `"cwd":"` + tc.wantCwd + `"`,
		} {
			if got := mustCall(t, r.Adapter, "getenv", `{"name":"`+name+`"}`); !strings.Contains(got, want) {
				t.Errorf("%s: getenv %s = %s, want %s", tc.command, name, got, want)
			}
		}
	}
}

// TestAdapterRemoteServer reaches a streamable-HTTP server on loopback
// with the declared headers.
func TestAdapterRemoteServer(t *testing.T) {
	s := helloServer("remote", "2.0.0")
	h := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s }, nil)
	url := testkit.Serve(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "Bearer k1" {
			http.Error(w, "no key", http.StatusUnauthorized)
			return
		}
		h.ServeHTTP(w, r)
	})) + "/mcp"

	r := start(t, decl.Launch{Name: "remote", Server: decl.MCPServer{URL: url, Headers: map[string]string{"Authorization": "Bearer k1"}}}, Options{})
	ctx, cancel := context.WithTimeout(context.Background(), bound)
	defer cancel()
	doc, err := r.Load(ctx)
	if err != nil || doc.Info.Version != "2.0.0" || len(doc.Functions) != 1 {
		t.Fatalf("Load = %+v, %v", doc, err)
	}
	if got := mustCall(t, r.Adapter, "hello", `{"name":"x"}`); got != `{"greeting":"hello x"}` {
		t.Fatalf("hello = %s", got)
	}

	bad := start(t, decl.Launch{Name: "remote", Server: decl.MCPServer{URL: url}}, Options{})
	if err, ok := bad.result(bound); !ok || err == nil || !strings.Contains(err.Error(), `MCP server "remote": initialize: `) || !strings.Contains(err.Error(), "Unauthorized") {
		t.Fatalf("without the header: Run = %v", err)
	}
}

// TestAdapterEverythingServer runs the Go SDK's own "everything"
// example server: its names with spaces and parentheses are renamed,
// every tool converts, calls go through (ping makes the server call the
// adapter back).
func TestAdapterEverythingServer(t *testing.T) {
	bin := testkit.Build(t, "github.com/modelcontextprotocol/go-sdk/examples/server/everything")
	r := start(t, decl.Launch{Name: "everything", Dir: t.TempDir(), Server: decl.MCPServer{Command: bin}}, Options{})
	fns := load(t, r.Adapter)
	for _, name := range []string{"greet", "greet__structured_", "greet__with_Icons_", "ping", "elicit__form_"} {
		if _, ok := fns[name]; !ok {
			t.Errorf("%s not served: %v", name, fns)
		}
	}
	if got := mustCall(t, r.Adapter, "greet", `{"name":"x"}`); got != `{"content":[{"type":"text","text":"Hi x"}],"text":"Hi x"}` {
		t.Errorf("greet = %s", got)
	}
	if got := mustCall(t, r.Adapter, "greet__structured_", `{"name":"x"}`); got != `{"message":"Hi x"}` {
		t.Errorf("greet (structured) = %s", got)
	}
	if got := mustCall(t, r.Adapter, "ping", `{}`); got != `{"content":[],"text":""}` {
		t.Errorf("ping = %s", got)
	}
}
