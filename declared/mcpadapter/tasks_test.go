package mcpadapter

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"strings"
	"sync"
	"testing"
	"testing/iotest"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/opentool-host/opentool-host/protocol/decl"
	"github.com/opentool-host/opentool-host/testkit"
)

// Tasks-required tools (tasks.go) against the task server of
// tasks_fixture_test.go: over stdio (the test binary as the server
// process) and in process over streamable HTTP (SSE and JSON answers).

// taskLaunch declares the test binary as the task server over stdio;
// mode is FixtureEnv's value.
func taskLaunch(t *testing.T, mode string) decl.Launch {
	t.Helper()
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	return decl.Launch{Name: "tk", Dir: t.TempDir(), Server: decl.MCPServer{Command: self, Env: map[string]string{FixtureEnv: mode}}}
}

// addResult is the structuredContent of the add tool.
type addResult struct {
	Sum      float64 `json:"sum"`
	Polls    int     `json:"polls"`
	MinGapMs int64   `json:"minGapMs"`
}

// wantAdd calls add(a, b) over polls polls and checks the sum, that the
// task was polled polls times, never sooner than its pollIntervalMs.
func wantAdd(t *testing.T, a *Adapter, polls int) {
	t.Helper()
	start := time.Now()
	out := mustCall(t, a, "add", `{"a":2,"b":3,"polls":`+itoa(polls)+`}`)
	var r addResult
	if err := json.Unmarshal([]byte(out), &r); err != nil || r.Sum != 5 || r.Polls != polls {
		t.Fatalf("add = %s (%v), want sum 5 after %d polls", out, err, polls)
	}
	if r.MinGapMs < fixtureInterval.Milliseconds() {
		t.Errorf("the adapter polled %d ms after the task's creation or the last poll, sooner than pollIntervalMs %v", r.MinGapMs, fixtureInterval)
	}
	t.Logf("add over %d polls of %v: %v", polls, fixtureInterval, time.Since(start).Round(time.Millisecond))
}

func itoa(n int) string { b, _ := json.Marshal(n); return string(b) }

// TestTaskRequiredTools: over stdio, a required tool is called as a
// task (the server answers -32021 to a call without the opt-in), polled
// at the server's interval to its CallToolResult; its failures map as a
// plain call's; an optional tool is called plainly; a -32021 to a plain
// call is retried as a task; the caller's cancellation is tasks/cancel.
func TestTaskRequiredTools(t *testing.T) {
	r := start(t, taskLaunch(t, "ext"), Options{})
	fns := load(t, r.Adapter)
	for _, name := range []string{"add", "hang", "fail", "either", "sometimes", "events"} {
		if _, ok := fns[name]; !ok {
			t.Fatalf("%s not served: %v", name, fns)
		}
	}
	r.Adapter.mu.RLock()
	tasked := r.Adapter.conv.tasked
	refused := r.Adapter.conv.doc.Refused
	r.Adapter.mu.RUnlock()
	if len(tasked) != 3 || !tasked["add"] || !tasked["hang"] || !tasked["fail"] || len(refused) != 0 {
		t.Fatalf("called as tasks: %v; refused: %v", tasked, refused)
	}

	wantAdd(t, r.Adapter, 3)
	wantAdd(t, r.Adapter, 1)

	_, err := call(t, r.Adapter, "fail", `{"how":"rpc"}`)
	wantToolError(t, err, 500, "exploded (JSON-RPC error -32603)")
	_, err = call(t, r.Adapter, "fail", `{"how":"params"}`)
	wantToolError(t, err, 400, "bad params")
	_, err = call(t, r.Adapter, "fail", `{"how":"tool"}`)
	wantToolError(t, err, 500, "tool said no")

	if got := mustCall(t, r.Adapter, "either", `{}`); got != `{"optIn":false}` {
		t.Errorf("either (optional) = %s, want a plain call", got)
	}
	if got := mustCall(t, r.Adapter, "sometimes", `{}`); got != `{"asTask":true}` {
		t.Errorf("sometimes (-32021 to a plain call) = %s", got)
	}

	// Cancellation: the server sees tasks/cancel for the task it created.
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() {
		_, err := r.Adapter.CallJSON(ctx, "hang", []byte(`{}`))
		done <- err
	}()
	created := waitEvent(t, r.Adapter, "polled", 1) // the adapter has the task's handle
	cancel()
	if cancelled := waitEvent(t, r.Adapter, "cancelled", 1); cancelled[0] != created[0] {
		t.Fatalf("tasks/cancel for %v, want %v", cancelled, created)
	}
	select {
	case err := <-done:
		wantToolError(t, err, 500, "tasks/cancel sent for task "+created[0])
	case <-time.After(bound):
		t.Fatal("the cancelled call did not return")
	}
}

// waitEvent calls the events tool: it returns once n hang tasks were
// created or cancelled, with their ids.
func waitEvent(t *testing.T, a *Adapter, event string, n int) []string {
	t.Helper()
	out := mustCall(t, a, "events", `{"event":"`+event+`","count":`+itoa(n)+`}`)
	var r struct{ IDs []string }
	if err := json.Unmarshal([]byte(out), &r); err != nil || len(r.IDs) < n {
		t.Fatalf("events %s %d = %s (%v)", event, n, out, err)
	}
	return r.IDs
}

// TestTaskRequiredToolRefused: a server that marks a tool required but
// does not declare the extension has that tool refused, with the
// reason (the host shows the plugin degraded); its other tools serve.
func TestTaskRequiredToolRefused(t *testing.T) {
	r := start(t, taskLaunch(t, "noext"), Options{})
	fns := load(t, r.Adapter)
	if _, ok := fns["add"]; ok {
		t.Fatal("add served by a server without the extension")
	}
	if got := mustCall(t, r.Adapter, "either", `{}`); got != `{"optIn":false}` {
		t.Errorf("either = %s", got)
	}
	ctx, cancel := context.WithTimeout(context.Background(), bound)
	defer cancel()
	doc, err := r.Adapter.Load(ctx)
	if err != nil {
		t.Fatal(err)
	}
	names := map[string]string{}
	for _, f := range doc.Refused {
		names[f.Name] = f.Reason
	}
	for _, n := range []string{"add", "fail", "hang"} {
		if !strings.Contains(names[n], `execution.taskSupport is "required" but the server declares neither the io.modelcontextprotocol/tasks extension (capabilities.extensions in initialize) nor core tasks`) {
			t.Errorf("refusal of %s: %q", n, names[n])
		}
	}
}

// routes records the routing headers of the tasks/* POSTs.
type routes struct {
	mu   sync.Mutex
	seen []string // "METHOD NAME"
}

func (rt *routes) wrap(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if m := r.Header.Get("Mcp-Method"); strings.HasPrefix(m, "tasks/") {
			rt.mu.Lock()
			rt.seen = append(rt.seen, m+" "+r.Header.Get("Mcp-Name"))
			rt.mu.Unlock()
		}
		next.ServeHTTP(w, r)
	})
}

func (rt *routes) list() []string {
	rt.mu.Lock()
	defer rt.mu.Unlock()
	return append([]string(nil), rt.seen...)
}

// TestTaskRequiredToolOverHTTP: over streamable HTTP, answered as event
// streams or as JSON, the task's handle and the tools' taskSupport are
// read from the responses (raw.go: rawResponses), tasks/get and
// tasks/cancel carry Mcp-Method and Mcp-Name.
func TestTaskRequiredToolOverHTTP(t *testing.T) {
	for _, jsonResponse := range []bool{false, true} {
		t.Run(map[bool]string{false: "sse", true: "json"}[jsonResponse], func(t *testing.T) {
			s := newTaskServer(true)
			rt := &routes{}
			h := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s.srv }, &mcp.StreamableHTTPOptions{JSONResponse: jsonResponse})
			url := testkit.Serve(t, rt.wrap(h))
			r := start(t, decl.Launch{Name: "tk", Dir: t.TempDir(), Server: decl.MCPServer{URL: url}}, Options{})
			load(t, r.Adapter)

			wantAdd(t, r.Adapter, 2)
			want := []string{"tasks/get task-1", "tasks/get task-1"}
			if got := rt.list(); strings.Join(got, ",") != strings.Join(want, ",") {
				t.Fatalf("routing headers = %q, want %q", got, want)
			}

			ctx, cancel := context.WithCancel(context.Background())
			done := make(chan error, 1)
			go func() {
				_, err := r.Adapter.CallJSON(ctx, "hang", nil)
				done <- err
			}()
			wctx, wcancel := context.WithTimeout(context.Background(), bound)
			defer wcancel()
			if _, err := s.wait(wctx, "polled", 1); err != nil {
				t.Fatal(err)
			}
			cancel()
			if ids, err := s.wait(wctx, "cancelled", 1); err != nil || ids[0] != "task-2" {
				t.Fatalf("cancelled %v, %v", ids, err)
			}
			if err := <-done; err == nil {
				t.Fatal("the cancelled call succeeded")
			}
			// (A tasks/get given up as the call was cancelled may reach the
			// server after the tasks/cancel.)
			if got := strings.Join(rt.list(), ","); !strings.Contains(got, "tasks/cancel task-2") {
				t.Errorf("routing headers = %q, want tasks/cancel task-2", got)
			}
		})
	}
}

// TestBodyTee: the first result of a response body reaches the sink
// before the reader sees the end of it, however the bytes come: a JSON
// body, an event stream with notifications and requests first, CRLF
// lines and data split over lines.
func TestBodyTee(t *testing.T) {
	cases := []struct {
		name, body string
		sse        bool
		want       string
	}{
		{"json", `{"jsonrpc":"2.0","id":1,"result":{"a":1}}`, false, `{"a":1}`},
		{"json error", `{"jsonrpc":"2.0","id":1,"error":{"code":1,"message":"x"}}`, false, ``},
		{"sse", "id: 1\nevent: message\ndata: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/progress\",\"params\":{}}\n\n" +
			"data: {\"jsonrpc\":\"2.0\",\"id\":7,\"method\":\"roots/list\"}\n\n" +
			"data: {\"jsonrpc\":\"2.0\",\"id\":1,\n" + "data: \"result\":{\"b\":2}}\n\n" +
			"data: {\"jsonrpc\":\"2.0\",\"id\":2,\"result\":{\"c\":3}}\n\n", true, `{"b":2}`},
		{"sse crlf", "data:{\"id\":1,\"result\":{\"d\":4}}\r\n\r\n", true, `{"d":4}`},
		{"sse unended", "data: {\"id\":1,\"result\":{}}\n", true, ``},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var got []string
			tee := &bodyTee{ReadCloser: io.NopCloser(iotest.OneByteReader(strings.NewReader(c.body))), sse: c.sse,
				sink: func(r json.RawMessage) { got = append(got, string(r)) }}
			b, err := io.ReadAll(tee)
			if err != nil || string(b) != c.body {
				t.Fatalf("read %q, %v", b, err)
			}
			if strings.Join(got, "|") != c.want {
				t.Errorf("sink got %q, want %q", got, c.want)
			}
		})
	}
}

// TestPollInterval: the server's pollIntervalMs, bounded; none is 1 s.
func TestPollInterval(t *testing.T) {
	for ms, want := range map[int64]time.Duration{0: time.Second, -5: time.Second, 1: 10 * time.Millisecond, 250: 250 * time.Millisecond, 3600000: 30 * time.Second} {
		if got := pollInterval(ms); got != want {
			t.Errorf("pollInterval(%d) = %v, want %v", ms, got, want)
		}
	}
}
