package mcpadapter_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/opentool-host/opentool-host/declared"
	"github.com/opentool-host/opentool-host/declared/mcpadapter"
	"github.com/opentool-host/opentool-host/frontend/mcpapi"
	"github.com/opentool-host/opentool-host/frontend/opentoolapi"
	"github.com/opentool-host/opentool-host/frontend/route"
	"github.com/opentool-host/opentool-host/host"
	"github.com/opentool-host/opentool-host/host/access"
	"github.com/opentool-host/opentool-host/host/core"
	"github.com/opentool-host/opentool-host/host/supervise"
	"github.com/opentool-host/opentool-host/host/tasks"
	"github.com/opentool-host/opentool-host/host/tasks/mcptasks"
	"github.com/opentool-host/opentool-host/testkit"
)

// A tasks-required tool through a real host: the task server of
// tasks_fixture_test.go (this test binary, re-executed) declared in
// tk.mcp.json, run by the real adapter (opentool-host adapter, built),
// called by the MCP Go SDK's client on /mcp and over /opentool/call.

// hostBound is the most one step through the host may take.
const hostBound = 30 * time.Second

// taskHost starts a host serving the task server as plugin "tk" on
// /mcp (stateless; serving MCP tasks with tm, none for nil) and the
// OpenTool API, and returns it with its URL.
func taskHost(t *testing.T, tm *tasks.Manager) (*host.Host, string) {
	t.Helper()
	// "shared": the /mcp client (the SDK's, of 2026-07-28) and the
	// OpenTool caller reach one server process, whose state the events
	// tool reads.
	return fixtureHost(t, "ext", "shared", tm)
}

// fixtureHost starts a host serving the test binary as the MCP server
// of FixtureEnv mode, plugin "tk", declared with sessions ("": the
// default), on /mcp (stateless; serving MCP tasks with tm, none for nil)
// and the OpenTool API, and returns it
// with its URL.
func fixtureHost(t *testing.T, mode, sessions string, tm *tasks.Manager) (*host.Host, string) {
	t.Helper()
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	// A copy: the host does not start its own binary (which this test
	// binary is) as an MCP server.
	server := filepath.Join(t.TempDir(), "task-server")
	testkit.CopyFile(t, self, server, 0o755)
	srv := map[string]any{"command": server, "env": map[string]string{mcpadapter.FixtureEnv: mode}}
	if sessions != "" {
		srv["sessions"] = sessions
	}
	return declaredHost(t, "tk", srv, tm, nil, mcpapi.HTTPOptions{})
}

// declaredHost starts a host serving the MCP server declared as srv (a
// mcpServers entry) as plugin name, with mod's settings (nil: none), on
// /mcp (with o; serving MCP tasks with tm, none for nil) and the OpenTool
// API, and returns it with its URL.
func declaredHost(t *testing.T, name string, srv map[string]any, tm *tasks.Manager, mod func(*core.Config), o mcpapi.HTTPOptions) (*host.Host, string) {
	t.Helper()
	return declaredHostBy(t, testkit.StartHost, name, srv, tm, mod, o)
}

// declaredHostBy is declaredHost with the host started by start
// (testkit.StartHost, or testkit.StartHostAsIs for a server that may not
// be ready).
func declaredHostBy(t *testing.T, start func(testing.TB, func(*core.Config), ...string) *host.Host, name string, srv map[string]any, tm *tasks.Manager, mod func(*core.Config), o mcpapi.HTTPOptions) (*host.Host, string) {
	t.Helper()
	dir := t.TempDir()
	decl, _ := json.Marshal(map[string]any{"mcpServers": map[string]any{name: srv}})
	if err := os.WriteFile(filepath.Join(dir, name+".mcp.json"), decl, 0o644); err != nil {
		t.Fatal(err)
	}
	h := start(t, func(c *core.Config) {
		c.Dir, c.CallTimeout, c.Declared = dir, hostBound, declared.Serve
		if mod != nil {
			mod(c)
		}
	})
	guard, err := access.New(access.Config{})
	if err != nil {
		t.Fatal(err)
	}
	mux := http.NewServeMux()
	mux.Handle(mcpapi.Path, mcpapi.New(h, mcpapi.Config{Logger: testkit.Logger(t), Tasks: tm}).Handler(o))
	mux.Handle("/", route.Mux(opentoolapi.New(h, opentoolapi.Config{Version: "test", Logger: testkit.Logger(t)}).Routes()))
	return h, testkit.Serve(t, guard.Middleware(mux))
}

// post sends body to url+path with the headers ("Name: value") and
// returns the status and the body.
func post(t *testing.T, ctx context.Context, url, body string, headers ...string) (int, string, error) {
	t.Helper()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	for _, h := range headers {
		k, v, _ := strings.Cut(h, ": ")
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, "", err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b), err
}

// events calls the server's events tool through cs.
func events(t *testing.T, cs *mcp.ClientSession, event string, n int) []string {
	t.Helper()
	var r struct{ IDs []string }
	sdkCall(t, context.Background(), cs, "events", map[string]any{"event": event, "count": n}, nil, &r)
	if len(r.IDs) < n {
		t.Fatalf("events %s %d = %v", event, n, r.IDs)
	}
	return r.IDs
}

// sdkCall calls tool with args and meta through cs and decodes its
// structuredContent into out.
func sdkCall(t *testing.T, ctx context.Context, cs *mcp.ClientSession, tool string, args map[string]any, meta mcp.Meta, out any) {
	t.Helper()
	ctx, cancel := context.WithTimeout(ctx, hostBound)
	defer cancel()
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: tool, Arguments: args, Meta: meta})
	if err != nil || res.IsError {
		t.Fatalf("tools/call %s: %v %s", tool, err, resultJSON(res))
	}
	b, _ := json.Marshal(res.StructuredContent)
	if err := json.Unmarshal(b, out); err != nil {
		t.Fatalf("%s: structuredContent %s: %v", tool, b, err)
	}
}

// TestTaskRequiredToolThroughHost: the plugin is ready with every tool;
// /mcp lists the required tool without execution; the MCP Go SDK client
// on /mcp and a caller of /opentool/call get its result, polled at the
// server's interval; the /mcp client's opt-in does not reach the
// server; either caller's cancellation reaches the server as
// tasks/cancel of the task it created.
func TestTaskRequiredToolThroughHost(t *testing.T) {
	h, url := taskHost(t, nil)

	// /health: the plugin is ready, every tool served, none refused.
	var st supervise.PluginStatus
	for _, p := range h.Plugins() {
		if p.Name == "tk" {
			st = p
		}
	}
	if st.State != core.StateReady || len(st.Refused) != 0 || !slices.Contains(st.Functions, "add") || !slices.Contains(st.Functions, "hang") {
		t.Fatalf("plugin tk: %+v", st)
	}
	_, health, err := get(t, url+"/health")
	if err != nil || !strings.Contains(health, `"status":"ok"`) {
		t.Fatalf("/health: %s %v", health, err)
	}

	// /mcp lists the tool without execution: the host calls it as a task
	// itself; to its clients it is a plain tool.
	ctx, cancel := context.WithTimeout(context.Background(), hostBound)
	defer cancel()
	code, list, err := post(t, ctx, url+mcpapi.Path, `{"jsonrpc":"2.0","id":1,"method":"tools/list"}`,
		"Accept: application/json, text/event-stream", "Mcp-Protocol-Version: 2025-11-25")
	if err != nil || code != http.StatusOK || !strings.Contains(list, `"name":"add"`) || strings.Contains(list, "execution") || strings.Contains(list, "taskSupport") {
		t.Fatalf("tools/list on /mcp: %d %s %v", code, list, err)
	}

	cs, err := mcp.NewClient(&mcp.Implementation{Name: "t", Version: "1"}, nil).Connect(ctx, &mcp.StreamableClientTransport{Endpoint: url + mcpapi.Path}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()

	// A call on /mcp: the adapter polls the server's task to its result.
	var sum struct {
		Sum      float64 `json:"sum"`
		Polls    int     `json:"polls"`
		MinGapMs int64   `json:"minGapMs"`
	}
	start := time.Now()
	sdkCall(t, ctx, cs, "add", map[string]any{"a": 2, "b": 3, "polls": 3}, nil, &sum)
	if sum.Sum != 5 || sum.Polls != 3 || sum.MinGapMs < 30 {
		t.Fatalf("add on /mcp = %+v", sum)
	}
	t.Logf("add on /mcp, 3 polls of 30 ms: %v", time.Since(start).Round(time.Millisecond))

	// The client's opt-in is its own: it does not reach the server.
	var opt struct{ OptIn bool }
	sdkCall(t, ctx, cs, "either", nil, mcptasks.OptIn(nil), &opt)
	if opt.OptIn {
		t.Fatal("the /mcp client's per-request capabilities reached the MCP server")
	}

	// The /mcp client cancels: the server sees tasks/cancel.
	cctx, ccancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() {
		_, err := cs.CallTool(cctx, &mcp.CallToolParams{Name: "hang", Arguments: map[string]any{}})
		done <- err
	}()
	polled := events(t, cs, "polled", 1)
	ccancel()
	if cancelled := events(t, cs, "cancelled", 1); cancelled[0] != polled[0] {
		t.Fatalf("tasks/cancel for %v, want %v", cancelled, polled)
	}
	if err := <-done; err == nil {
		t.Fatal("the cancelled /mcp call succeeded")
	}

	// /opentool/call: the same, for an OpenTool caller.
	start = time.Now()
	code, body, err := post(t, ctx, url+"/opentool/call", `{"jsonrpc":"2.0","id":1,"method":"add","params":{"a":1,"b":2,"polls":2}}`)
	if err != nil || code != http.StatusOK || !strings.Contains(body, `"result":{"minGapMs":`) || !strings.Contains(body, `"polls":2,"sum":3}`) {
		t.Fatalf("/opentool/call add: %d %s %v", code, body, err)
	}
	t.Logf("add on /opentool/call, 2 polls of 30 ms: %v", time.Since(start).Round(time.Millisecond))

	rctx, rcancel := context.WithCancel(ctx)
	go func() {
		_, _, err := post(t, rctx, url+"/opentool/call", `{"jsonrpc":"2.0","id":2,"method":"hang","params":{}}`)
		done <- err
	}()
	polled = events(t, cs, "polled", 2)
	rcancel()
	if cancelled := events(t, cs, "cancelled", 2); cancelled[1] != polled[1] {
		t.Fatalf("tasks/cancel for %v, want %v", cancelled, polled)
	}
	if err := <-done; err == nil {
		t.Fatal("the cancelled /opentool/call succeeded")
	}
}

// get fetches url and returns the status and the body.
func get(t *testing.T, url string) (int, string, error) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		return 0, "", err
	}
	defer resp.Body.Close()
	var b bytes.Buffer
	_, err = b.ReadFrom(resp.Body)
	return resp.StatusCode, b.String(), err
}

// resultJSON is res as JSON, for messages.
func resultJSON(res *mcp.CallToolResult) string {
	b, _ := json.Marshal(res)
	return string(b)
}

// TestTaskRequiredToolAsCoreTask: a client of the core tasks of MCP
// 2025-11-25 calls, with params.task, a tool that requires a task on a
// server that speaks only the extension: /mcp lists it with
// execution.taskSupport "required" as the server wrote it, answers a
// CreateTaskResult at once, and tasks/result gives the result the
// adapter polled through the extension's tasks/get.
func TestTaskRequiredToolAsCoreTask(t *testing.T) {
	tm, err := tasks.NewManager(tasks.Config{PollInterval: 50 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(tm.Close)
	_, url := taskHost(t, tm)
	ctx, cancel := context.WithTimeout(context.Background(), hostBound)
	defer cancel()
	core := []string{"Accept: application/json, text/event-stream", "Mcp-Protocol-Version: " + mcptasks.CoreRevision}
	code, list, err := post(t, ctx, url+mcpapi.Path, `{"jsonrpc":"2.0","id":1,"method":"tools/list"}`, core...)
	if err != nil || code != http.StatusOK || !strings.Contains(list, `"taskSupport":"required"`) {
		t.Fatalf("tools/list: %d %s %v, want add with taskSupport required", code, list, err)
	}
	code, created, err := post(t, ctx, url+mcpapi.Path, `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"add","arguments":{"a":2,"b":3,"polls":2},"task":{}}}`, core...)
	var ct struct {
		Result struct {
			Task mcptasks.Task `json:"task"`
		} `json:"result"`
	}
	if err != nil || code != http.StatusOK || json.Unmarshal([]byte(sseData(created)), &ct) != nil || ct.Result.Task.TaskID == "" || ct.Result.Task.Status != tasks.Working {
		t.Fatalf("tools/call add with params.task: %d %s %v, want a CreateTaskResult", code, created, err)
	}
	code, result, err := post(t, ctx, url+mcpapi.Path, `{"jsonrpc":"2.0","id":3,"method":"tasks/result","params":{"taskId":"`+ct.Result.Task.TaskID+`"}}`, core...)
	if err != nil || code != http.StatusOK || !strings.Contains(result, `"polls":2,"sum":5}`) {
		t.Fatalf("tasks/result: %d %s %v, want the server's sum after 2 polls", code, result, err)
	}
}

// sseData returns the data of the first event of body, an SSE stream,
// or body itself when it is not one.
func sseData(body string) string {
	for _, line := range strings.Split(body, "\n") {
		if data, ok := strings.CutPrefix(line, "data: "); ok {
			return data
		}
	}
	return body
}
