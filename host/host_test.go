package host_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"os"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/opentool-host/opentool-host/host"
	"github.com/opentool-host/opentool-host/host/core"
	"github.com/opentool-host/opentool-host/host/supervise"
	"github.com/opentool-host/opentool-host/protocol/opentool"
	"github.com/opentool-host/opentool-host/testkit"
)

// startHost starts a host on dir with fast supervision settings and closes
// it when the test ends.
func startHost(t *testing.T, dir string, mod func(*core.Config)) *host.Host {
	t.Helper()
	cfg := core.Config{
		Dir:          dir,
		Logger:       testkit.Logger(t),
		StateDir:     t.TempDir(),
		CallTimeout:  10 * time.Second,
		CancelGrace:  300 * time.Millisecond,
		DrainTimeout: 5 * time.Second,
		SettleTime:   50 * time.Millisecond,
		Restart:      core.RestartPolicy{InitialBackoff: 50 * time.Millisecond, MaxBackoff: 400 * time.Millisecond, MaxFailures: 3},
	}
	if mod != nil {
		mod(&cfg)
	}
	h, err := host.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := h.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := h.Close(ctx); err != nil {
			t.Errorf("close: %v", err)
		}
	})
	return h
}

func call(t *testing.T, h *host.Host, fn, args string) map[string]any {
	t.Helper()
	res, err := h.Call(context.Background(), fn, []byte(args))
	if err != nil {
		t.Fatalf("call %s(%s): %v", fn, args, err)
	}
	var m map[string]any
	if err := json.Unmarshal(res, &m); err != nil {
		t.Fatalf("call %s: result %q is not an object: %v", fn, res, err)
	}
	return m
}

func pluginStatus(h *host.Host, name string) supervise.PluginStatus {
	for _, p := range h.Plugins() {
		if p.Name == name {
			return p
		}
	}
	return supervise.PluginStatus{}
}

func TestMockCRUDAndCalculator(t *testing.T) {
	dir := t.TempDir()
	testkit.InstallPlugin(t, dir, "mock", "./plugins/mock")
	testkit.InstallPlugin(t, dir, "calculator", "./plugins/calculator")
	h := startHost(t, dir, nil)

	if got := call(t, h, "count", ""); got["count"] != 2.0 {
		t.Fatalf("count = %v, want 2", got)
	}
	if got := call(t, h, "create", `{"text":"Third"}`); got["id"] != 2.0 {
		t.Fatalf("create = %v, want id 2", got)
	}
	if got := call(t, h, "read", `{"id":2}`); got["text"] != "Third" {
		t.Fatalf("read = %v", got)
	}
	if got := call(t, h, "update", `{"id":2,"text":"3rd"}`); got["result"] != "Update successfully." {
		t.Fatalf("update = %v", got)
	}
	if got := call(t, h, "read", `{"id":2}`); got["text"] != "3rd" {
		t.Fatalf("read after update = %v", got)
	}
	if got := call(t, h, "delete", `{"id":2}`); got["result"] != "Delete successfully." {
		t.Fatalf("delete = %v", got)
	}
	if got := call(t, h, "count", "{}"); got["count"] != 2.0 {
		t.Fatalf("count after delete = %v", got)
	}
	_, err := h.Call(context.Background(), "run", nil)
	testkit.WantToolError(t, err, 500, "run failed")
	if got := call(t, h, "add", `{"a":1.5,"b":2}`); got["result"] != 3.5 {
		t.Fatalf("add = %v", got)
	}
	_, err = h.Call(context.Background(), "divide", []byte(`{"a":1,"b":0}`))
	testkit.WantToolError(t, err, 400, "")
	_, err = h.Call(context.Background(), "nope", nil)
	if !errors.Is(err, core.ErrFunctionNotFound) {
		t.Fatalf("unknown function: err = %v", err)
	}
	_, err = h.Call(context.Background(), "sequentiallyRead", nil)
	if !errors.Is(err, core.ErrWrongKind) {
		t.Fatalf("streaming function on Call: err = %v", err)
	}

	doc := h.Document("opentool-host", "0.0.0", "http://127.0.0.1:1/opentool")
	if err := opentool.Validate(doc); err != nil {
		t.Fatalf("aggregated document invalid: %v", err)
	}
	if len(doc.Functions) != 11 {
		t.Fatalf("aggregated document has %d functions, want 11", len(doc.Functions))
	}
	if doc.Functions[0].Name != "add" || doc.Functions[4].Name != "count" {
		t.Fatalf("functions not in plugin-name order: %s, %s", doc.Functions[0].Name, doc.Functions[4].Name)
	}
	raw, _ := json.Marshal(doc)
	if strings.Contains(string(raw), "$ref") {
		t.Fatalf("aggregated document still has $refs: %s", raw)
	}
	if _, ok := doc.Schemas["mock.Id"]; !ok {
		t.Fatalf("schemas not keyed PLUGIN.Name: %v", doc.Schemas)
	}
}

func TestBrokenPluginsReportedOthersServe(t *testing.T) {
	dir := t.TempDir()
	testkit.InstallPlugin(t, dir, "calculator", "./plugins/calculator")
	testkit.InstallPlugin(t, dir, "baddoc", "./testkit/plugins/baddoc")
	testkit.InstallPlugin(t, dir, "garbage", "./testkit/plugins/garbage")
	// Not plugins: wrong name, not executable, dotfile.
	if err := os.WriteFile(dir+"/README.txt", []byte("x"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(dir+"/opentool-plugin-noexec", []byte("#!/bin/sh\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	h := startHost(t, dir, func(c *core.Config) { c.StartTimeout = 3 * time.Second })

	if got := call(t, h, "add", `{"a":1,"b":2}`); got["result"] != 3.0 {
		t.Fatalf("add = %v", got)
	}
	bad := pluginStatus(h, "baddoc")
	if bad.State != core.StateFailed || !strings.Contains(bad.LastError, "functions[0].name") || !strings.Contains(bad.LastError, "functions[0].parameters[0].schema") {
		t.Fatalf("baddoc status = %+v, want failed with JSON paths", bad)
	}
	g := pluginStatus(h, "garbage")
	if g.State != core.StateFailed || !strings.Contains(g.LastError, "hello, I am not a plugin handshake") {
		t.Fatalf("garbage status = %+v, want failed quoting its output", g)
	}
	if len(h.Plugins()) != 3 {
		t.Fatalf("plugins = %+v, want calculator, baddoc, garbage only", h.Plugins())
	}
}

func TestNameCollisionFirstStartByName(t *testing.T) {
	dir := t.TempDir()
	testkit.InstallPlugin(t, dir, "calculator", "./plugins/calculator")
	testkit.InstallPlugin(t, dir, "zz-collide", "./testkit/plugins/collide")
	h := startHost(t, dir, nil)
	if got := call(t, h, "add", `{"a":2,"b":2}`); got["result"] != 4.0 {
		t.Fatalf("add served by %v, want calculator", got)
	}
	if got := call(t, h, "collide_only", ""); got["served_by"] != "collide" {
		t.Fatalf("collide_only = %v", got)
	}
	n := 0
	for _, f := range h.Document("t", "1", "").Functions {
		if f.Name == "add" {
			n++
		}
	}
	if n != 1 {
		t.Fatalf("add appears %d times in the document", n)
	}
	wantConflicts(t, h, "zz-collide", supervise.Conflict{Function: "add", Owner: "calculator"})

	// The same in the other order: at the first Start, "aa-collide" sorts
	// first and owns add.
	dir2 := t.TempDir()
	testkit.InstallPlugin(t, dir2, "calculator", "./plugins/calculator")
	testkit.InstallPlugin(t, dir2, "aa-collide", "./testkit/plugins/collide")
	h2 := startHost(t, dir2, nil)
	if got := call(t, h2, "add", ""); got["served_by"] != "collide" {
		t.Fatalf("add served by %v, want aa-collide", got)
	}
	wantConflicts(t, h2, "calculator", supervise.Conflict{Function: "add", Owner: "aa-collide"})
}

// TestDroppedPluginCannotHijack drops, into a running host's watched
// directory, a plugin whose name sorts first and that declares a served
// function: the owner keeps it (the ERROR is logged, /health shows the
// conflict); once the owner is removed the newcomer serves it.
func TestDroppedPluginCannotHijack(t *testing.T) {
	dir := t.TempDir()
	testkit.InstallPlugin(t, dir, "calculator", "./plugins/calculator")
	logs := newLogRecorder(t)
	h := startHost(t, dir, func(c *core.Config) { c.Watch = true; c.Logger = logs.logger })

	testkit.InstallPlugin(t, dir, "aa-collide", "./testkit/plugins/collide")
	logs.waitFor(t, 10*time.Second, "function name conflict", "refused=aa-collide")
	testkit.Eventually(t, 10*time.Second, "aa-collide served", func() bool { return h.Function("collide_only") != nil })
	if got := call(t, h, "add", `{"a":2,"b":2}`); got["result"] != 4.0 {
		t.Fatalf("add = %v: taken over by the dropped plugin", got)
	}
	if st := pluginStatus(h, "aa-collide"); st.State != core.StateReady {
		t.Fatalf("aa-collide status = %+v", st)
	}
	wantConflicts(t, h, "aa-collide", supervise.Conflict{Function: "add", Owner: "calculator"})
	wantConflicts(t, h, "calculator")
	for _, f := range h.Functions() {
		if f.Function.Name == "add" && f.Plugin != "calculator" {
			t.Fatalf("add listed for %s", f.Plugin)
		}
	}

	// The owner goes: the name is released to the remaining declarer.
	if err := os.Remove(dir + "/opentool-plugin-calculator"); err != nil {
		t.Fatal(err)
	}
	testkit.Eventually(t, 10*time.Second, "add served by aa-collide", func() bool {
		res, err := h.Call(context.Background(), "add", nil)
		return err == nil && strings.Contains(string(res), `"served_by":"collide"`)
	})
	wantConflicts(t, h, "aa-collide")
}

// TestPrefixCollisions serves a later duplicate as PLUGIN__NAME.
func TestPrefixCollisions(t *testing.T) {
	dir := t.TempDir()
	testkit.InstallPlugin(t, dir, "calculator", "./plugins/calculator")
	logs := newLogRecorder(t)
	h := startHost(t, dir, func(c *core.Config) { c.PrefixCollisions = true; c.Logger = logs.logger })

	testkit.InstallPlugin(t, dir, "aa-collide", "./testkit/plugins/collide")
	if err := h.Rescan(context.Background()); err != nil {
		t.Fatal(err)
	}
	logs.waitFor(t, time.Second, "[WARN]", "served_as=aa-collide__add")
	if got := call(t, h, "add", `{"a":2,"b":2}`); got["result"] != 4.0 {
		t.Fatalf("add = %v, want calculator's", got)
	}
	got := call(t, h, "aa-collide__add", "")
	if got["served_by"] != "collide" || got["function"] != "add" {
		t.Fatalf("aa-collide__add = %v, want collide's add (the plugin must get the name it declares)", got)
	}
	wantConflicts(t, h, "aa-collide", supervise.Conflict{Function: "add", Owner: "calculator", ServedAs: "aa-collide__add"})
	var names []string
	for _, f := range h.Document("t", "1", "").Functions {
		names = append(names, f.Name)
	}
	if !slices.Contains(names, "aa-collide__add") || !slices.Contains(names, "add") {
		t.Fatalf("document functions %v", names)
	}
	if err := opentool.Validate(h.Document("t", "1", "")); err != nil {
		t.Fatal(err)
	}

	// The owner goes: aa-collide serves add itself, the prefixed name goes.
	if err := os.Remove(dir + "/opentool-plugin-calculator"); err != nil {
		t.Fatal(err)
	}
	if err := h.Rescan(context.Background()); err != nil {
		t.Fatal(err)
	}
	if got := call(t, h, "add", ""); got["served_by"] != "collide" {
		t.Fatalf("add = %v, want aa-collide's", got)
	}
	if h.Function("aa-collide__add") != nil {
		t.Fatal("prefixed name still served once the plugin owns the name")
	}
}

// TestOwnerKeepsNameWhileRestarting kills the owner of "echo": while it
// restarts a later plugin declaring echo does not get it, and a call made
// meanwhile reaches the restarted owner.
func TestOwnerKeepsNameWhileRestarting(t *testing.T) {
	dir := t.TempDir()
	testkit.InstallPlugin(t, dir, "faulty", "./testkit/plugins/faulty")
	h := startHost(t, dir, func(c *core.Config) {
		c.Restart = core.RestartPolicy{InitialBackoff: 300 * time.Millisecond, MaxBackoff: time.Second, MaxFailures: 3}
	})
	testkit.InstallPlugin(t, dir, "aa-echo", "./testkit/plugins/echo")
	if err := h.Rescan(context.Background()); err != nil {
		t.Fatal(err)
	}
	pid := pidOf(t, h)
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	testkit.Eventually(t, 5*time.Second, "faulty restarting", func() bool {
		return pluginStatus(h, "faulty").State == core.StateRestarting
	})
	if err := h.Rescan(context.Background()); err != nil { // a rebuild while the owner is down
		t.Fatal(err)
	}
	if got := call(t, h, "echo", `{"x":"y"}`); got["x"] != "y" {
		t.Fatalf("echo = %v, want faulty's (restarted)", got)
	}
	wantConflicts(t, h, "aa-echo", supervise.Conflict{Function: "echo", Owner: "faulty"})
}

// wantConflicts checks the conflicts /health shows for plugin.
func wantConflicts(t *testing.T, h *host.Host, plugin string, want ...supervise.Conflict) {
	t.Helper()
	got := pluginStatus(h, plugin).Conflicts
	if len(got) != len(want) || (len(want) > 0 && !slices.Equal(got, want)) {
		t.Fatalf("%s conflicts = %+v, want %+v", plugin, got, want)
	}
}

// logRecorder keeps the host's log lines (debug and up) so that a test
// can wait for one; the test log still gets testkit.Logger's.
type logRecorder struct {
	logger hclog.Logger
	mu     sync.Mutex
	lines  []string
	more   chan struct{} // closed and replaced on every line
}

// newLogRecorder returns a recorder whose logger writes to the test log
// and records every line.
func newLogRecorder(t *testing.T) *logRecorder {
	r := &logRecorder{more: make(chan struct{})}
	il := hclog.NewInterceptLogger(&hclog.LoggerOptions{Name: "test", Level: hclog.Debug, Output: io.Discard})
	il.RegisterSink(hclog.NewSinkAdapter(&hclog.LoggerOptions{Level: hclog.Debug, Output: r, Color: hclog.ColorOff}))
	il.RegisterSink(hclog.NewSinkAdapter(&hclog.LoggerOptions{Level: testkit.Logger(t).GetLevel(), Output: writerFunc(func(p []byte) (int, error) {
		defer func() { _ = recover() }() // logging after the test ended
		t.Log(strings.TrimRight(string(p), "\n"))
		return len(p), nil
	}), Color: hclog.ColorOff}))
	r.logger = il
	return r
}

// writerFunc is an io.Writer made of a function.
type writerFunc func([]byte) (int, error)

// Write implements io.Writer.
func (f writerFunc) Write(p []byte) (int, error) { return f(p) }

// Write implements io.Writer: one call is one log line.
func (r *logRecorder) Write(p []byte) (int, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.lines = append(r.lines, string(p))
	close(r.more)
	r.more = make(chan struct{})
	return len(p), nil
}

// all returns the lines so far.
func (r *logRecorder) all() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.lines)
}

// waitFor waits up to timeout for a line holding every one of parts and
// returns it.
func (r *logRecorder) waitFor(t *testing.T, timeout time.Duration, parts ...string) string {
	t.Helper()
	deadline := time.After(timeout)
	seen := 0
	for {
		r.mu.Lock()
		lines, more := r.lines[seen:], r.more
		seen = len(r.lines)
		r.mu.Unlock()
		for _, l := range lines {
			if containsAll(l, parts) {
				return l
			}
		}
		select {
		case <-more:
		case <-deadline:
			t.Fatalf("no log line with %q within %v", parts, timeout)
		}
	}
}

// containsAll reports whether s contains every one of parts.
func containsAll(s string, parts []string) bool {
	for _, p := range parts {
		if !strings.Contains(s, p) {
			return false
		}
	}
	return true
}

func TestConcurrentCallsDoNotSerialise(t *testing.T) {
	dir := t.TempDir()
	testkit.InstallPlugin(t, dir, "faulty", "./testkit/plugins/faulty")
	h := startHost(t, dir, nil)
	// 8 long calls are in flight in the plugin at once (its own count of
	// sleeps running): serialised calls would never get past one. Then
	// they are cancelled and all end.
	ctx, cancel := context.WithCancel(context.Background())
	errc := make(chan error, 8)
	for range 8 {
		go func() {
			_, err := h.Call(ctx, "sleep", []byte(`{"ms":60000}`))
			errc <- err
		}()
	}
	var active float64
	testkit.Eventually(t, 20*time.Second, "8 sleeps in flight at once", func() bool {
		out, err := h.Call(context.Background(), "sleeps", nil)
		var m map[string]float64
		if err != nil || json.Unmarshal(out, &m) != nil {
			return false
		}
		active = m["active"]
		return active == 8
	})
	cancel()
	for range 8 {
		if err := <-errc; err == nil {
			t.Error("a cancelled 60 s sleep returned no error")
		}
	}
}

func pidOf(t *testing.T, h *host.Host) int {
	t.Helper()
	return int(call(t, h, "pid", "")["pid"].(float64))
}

func alive(pid int) bool { return syscall.Kill(pid, 0) == nil }
