package e2e_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/opentool-host/opentool-host/testkit"
)

// The core tasks of MCP 2025-11-25, both ways, with real Node programs:
// npm @modelcontextprotocol/server-everything (its simulate-research-query
// requires a task) behind the host, and the TypeScript SDK's
// client.experimental.tasks in front of it. Both come with the
// conformance suite's npm dependencies (scripts/deps-conformance.sh,
// make deps-conformance), with the Node 22 it pins.

// ctNode returns a Node >= 22 and the conformance suite's node_modules,
// or skips the test saying how to get them.
func ctNode(t *testing.T) (node, modules string) {
	t.Helper()
	modules = filepath.Join(testkit.RepoRoot(t), "conformance", "node_modules")
	for _, pkg := range []string{"@modelcontextprotocol/server-everything", "@modelcontextprotocol/sdk"} {
		if _, err := os.Stat(filepath.Join(modules, filepath.FromSlash(pkg), "package.json")); err != nil {
			t.Skipf("run make deps-conformance: %s is not installed in %s (%v)", pkg, modules, err)
		}
	}
	node = testkit.Node(t, modules, "server-everything")
	return node, modules
}

// TestEverythingResearchQueryAsCoreTask: server-everything's
// simulate-research-query (execution.taskSupport "required", core
// capabilities.tasks, no extension) is served, not refused: the plugin
// is not degraded, and a call through /opentool/call and one through
// /mcp each run it as a task on the server to its report; a caller that
// gives up has the server's task cancelled (tasks/cancel); /mcp lists it
// with execution.taskSupport as the server wrote it. A core-task client
// (the TypeScript SDK) of /mcp calling it as a task gets the server's
// own status notifications (its stages' statusMessage, working) relayed
// as its task's, then the host's completed; a 2026-07-28 client of the
// extension gets the same call as an extension task.
func TestEverythingResearchQueryAsCoreTask(t *testing.T) {
	t.Parallel() // waits on Node servers and clients most of its time: beside the other Node tests
	node, modules := ctNode(t)
	dir := t.TempDir()
	srv := map[string]any{"command": node, "args": []string{filepath.Join(modules, "@modelcontextprotocol", "server-everything", "dist", "index.js"), "stdio"}}
	b, _ := json.Marshal(map[string]any{"mcpServers": map[string]any{"everything": srv}})
	if err := os.WriteFile(filepath.Join(dir, "everything.mcp.json"), b, 0o644); err != nil {
		t.Fatal(err)
	}
	hp := startHostProc(t, dir, "--watch=false")
	if h := msHealth(t, hp.url, "everything"); !strings.HasPrefix(h, "ready:") {
		t.Errorf("everything: %s, want ready (not degraded)", h)
	}
	const tool = "simulate-research-query"
	if fns := msLoad(t, hp.url); !fns[tool] {
		t.Fatalf("/opentool/load lacks %s: %v", tool, fns)
	}

	start := time.Now()
	st, out := rpc(t, hp.url, `{"jsonrpc":"2.0","id":1,"method":"`+tool+`","params":{"topic":"opentool"}}`)
	res, _ := json.Marshal(out["result"])
	if st != http.StatusOK || out["error"] != nil || !strings.Contains(string(res), "opentool") || !strings.Contains(string(res), "Research") {
		t.Fatalf("/opentool/call %s: HTTP %d %v", tool, st, out)
	}
	// Four stages of 1 s each on the server, polled as its task.
	if took := time.Since(start); took < 3*time.Second {
		t.Errorf("/opentool/call %s answered after %v: the task's four 1 s stages did not run", tool, took)
	}

	cs := msClient(t, &mcp.StreamableClientTransport{Endpoint: hp.url + "/mcp"})
	if text, isErr := msCall(t, cs, tool, map[string]any{"topic": "mcp"}); isErr || !strings.Contains(text, "mcp") || !strings.Contains(text, "Research") {
		t.Errorf("/mcp tools/call %s: %q (isError %v)", tool, text, isErr)
	}

	// A caller that gives up: the host cancels the server's task.
	ctx, cancel := context.WithTimeout(context.Background(), 1500*time.Millisecond)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, hp.url+"/opentool/call", strings.NewReader(`{"jsonrpc":"2.0","id":2,"method":"`+tool+`","params":{"topic":"given up"}}`))
	req.Header.Set("Content-Type", "application/json")
	if resp, err := http.DefaultClient.Do(req); err == nil {
		resp.Body.Close()
		t.Fatalf("/opentool/call %s answered HTTP %d within 1.5 s; want the caller to give up first", tool, resp.StatusCode)
	}
	testkit.Eventually(t, 10*time.Second, "the host's tasks/cancel of the given-up task", func() bool {
		return strings.Contains(hp.logs.String(), `core task cancelled on the server: server=everything tool=`+tool)
	})

	_, _, listed := mtSession(t, hp.url, "").post(t, "tools/list", "", `{"jsonrpc":"2.0","id":1,"method":"tools/list"}`)
	if !strings.Contains(listed, `"taskSupport":"required"`) {
		t.Errorf("/mcp tools/list: %s lacks execution.taskSupport \"required\" as the server wrote it", listed)
	}

	// A core task of the host over a core task of the server: the
	// server's notifications/tasks/status reach the client as its own.
	co, _ := coreClient(t, node, modules, hp.url+"/mcp", "-", tool, `{"topic":"relayed"}`, true)
	if !strings.Contains(string(co.Result), "relayed") {
		t.Errorf("core task %s: result %s", tool, co.Result)
	}
	var relayed []string
	for _, n := range co.Notes {
		if n.Status == "working" {
			relayed = append(relayed, n.StatusMessage)
		}
	}
	// The last stage's message comes 3 s after the task's creation, when
	// the host awaits it (the first may come before).
	if !slices.Contains(relayed, "Generating report...") {
		t.Errorf("relayed statusMessages %q, want the server's last stage, \"Generating report...\"", relayed)
	}

	// The extension's dialect over the server's core tasks: a 2026-07-28
	// client that opts in gets a task (the research outlives
	// --task-after), polled with tasks/get to the server's report.
	v2 := mtStateless(hp.url, "", "2026-07-28")
	eo, raw := v2.call(t, tool, `{"topic":"extension"}`, true)
	w := asMTTask(t, eo, raw, "task")
	if done, raw := pollMCP(t, v2, w.TaskID, 30*time.Second); done.Status != "completed" || !strings.Contains(string(done.Result), "extension") {
		t.Errorf("the extension's task of %s: %s, want completed with the report", tool, raw)
	}
}

// coreClientOut is what e2e/testdata/coretasks-client.mjs prints.
type coreClientOut struct {
	ProtocolVersion string          `json:"protocolVersion"`
	TasksCapability json.RawMessage `json:"tasksCapability"`
	Messages        []struct {
		Type, Status, TaskID string
	} `json:"messages"`
	Result json.RawMessage `json:"result"`
	Listed []string        `json:"listed"`
	Notes  []struct {
		Status, TaskID, StatusMessage string
	} `json:"notes"`
}

// coreClient runs e2e/testdata/coretasks-client.mjs against target (the
// host's /mcp URL, or stdio: and the argv of an opentool-host mcp) with
// API key key ("-": none), calling tool with args (JSON) as a core task,
// and checks what it saw: capabilities.tasks, the task created working,
// polled to completed, its CallToolResult from tasks/result with
// related-task, tasks/list showing it, and notifications/tasks/status
// for it, the last saying it completed (with noted; without, none: the
// client does not wait for them). It returns what the client printed
// and the task's id.
func coreClient(t *testing.T, node, modules, target, key, tool, args string, noted bool) (coreClientOut, string) {
	t.Helper()
	script := filepath.Join(testkit.RepoRoot(t), "e2e", "testdata", "coretasks-client.mjs")
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, node, script, filepath.Join(modules, "@modelcontextprotocol", "sdk"), target, key, tool, args)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if !noted {
		cmd.Env = append(os.Environ(), "NOTES_WAIT_MS=0")
	}
	stdout, err := cmd.Output()
	if err != nil {
		t.Fatalf("TypeScript client: %v\nstdout: %s\nstderr: %s", err, stdout, stderr.String())
	}
	var out coreClientOut
	if err := json.Unmarshal(stdout, &out); err != nil {
		t.Fatalf("TypeScript client printed %s: %v", stdout, err)
	}
	t.Logf("TypeScript client: %s", stdout)
	if string(out.TasksCapability) != `{"list":{},"cancel":{},"requests":{"tools":{"call":{}}}}` {
		t.Errorf("initialize: capabilities.tasks = %s", out.TasksCapability)
	}
	types := []string{}
	for _, m := range out.Messages {
		types = append(types, m.Type+":"+m.Status)
	}
	if len(out.Messages) < 3 || types[0] != "taskCreated:working" || !slices.Contains(types, "taskStatus:working") ||
		!slices.Contains(types, "taskStatus:completed") || types[len(types)-1] != "result:" {
		t.Fatalf("callToolStream messages %v, want taskCreated, taskStatus working ... completed, result", types)
	}
	id := out.Messages[0].TaskID
	var res struct {
		Meta map[string]any `json:"_meta"`
	}
	if err := json.Unmarshal(out.Result, &res); err != nil {
		t.Errorf("result %s: %v", out.Result, err)
	}
	if rt, _ := res.Meta["io.modelcontextprotocol/related-task"].(map[string]any); rt["taskId"] != id {
		t.Errorf("result _meta %v lacks related-task %s", res.Meta, id)
	}
	if !slices.Contains(out.Listed, id) {
		t.Errorf("tasks/list %v lacks %s", out.Listed, id)
	}
	for _, n := range out.Notes {
		if n.TaskID != id {
			t.Errorf("notifications/tasks/status %+v of another task than %s", n, id)
		}
	}
	switch {
	case !noted && len(out.Notes) > 0:
		t.Errorf("notifications/tasks/status %+v, want none", out.Notes)
	case noted && (len(out.Notes) == 0 || out.Notes[len(out.Notes)-1].Status != "completed"):
		t.Errorf("notifications/tasks/status %+v, want the last to say %s completed", out.Notes, id)
	}
	return out, id
}

// checkSlept checks that out, what coreClient printed for the faulty
// plugin's sleep of 1500 ms, has its result and one status
// notification: the sleep's task only completes.
func checkSlept(t *testing.T, out coreClientOut) {
	t.Helper()
	var res struct {
		StructuredContent map[string]any `json:"structuredContent"`
	}
	if err := json.Unmarshal(out.Result, &res); err != nil || res.StructuredContent["slept_ms"] != 1500.0 {
		t.Errorf("result %s, want the sleep's {\"slept_ms\":1500}", out.Result)
	}
	if len(out.Notes) > 1 {
		t.Errorf("notifications/tasks/status %+v, want at most one", out.Notes)
	}
}

// TestCoreTasksTypeScriptClient: the TypeScript SDK's
// client.experimental.tasks.callToolStream, asking for a task, calls the
// faulty plugin's 1.5 s sleep through /mcp: the host declares
// capabilities.tasks, answers a CreateTaskResult, the client polls
// tasks/get (working, then completed) and gets the CallToolResult from
// tasks/result, and its session's GET stream gets
// notifications/tasks/status when the task completes; tasks/list shows
// the task to its key, 50 a page, and another key none; another key's
// tasks/get, tasks/result and tasks/cancel of it are -32602, and so is
// the extension's tasks/get.
func TestCoreTasksTypeScriptClient(t *testing.T) {
	t.Parallel() // waits on Node servers and clients most of its time: beside the other Node tests
	node, modules := ctNode(t)
	dir := t.TempDir()
	testkit.InstallPlugin(t, dir, "faulty", "./testkit/plugins/faulty")
	hp := startHostProc(t, dir, taskHostArgs()...)
	out, id := coreClient(t, node, modules, hp.url+"/mcp", taskKeyA, "sleep", `{"ms":1500}`, true)
	checkSlept(t, out)

	bob := mtSession(t, hp.url, taskKeyB)
	for _, method := range []string{"tasks/get", "tasks/result", "tasks/cancel"} {
		if o, raw := bob.tasks(t, method, id, false); o.Error == nil || o.Error.Code != -32602 {
			t.Errorf("another key's %s: %s, want -32602", method, raw)
		}
	}
	alice := mtSession(t, hp.url, taskKeyA)
	if o, raw := alice.tasks(t, "tasks/get", id, false); o.Error != nil || !strings.Contains(string(o.Result), `"status":"completed"`) || !strings.Contains(string(o.Result), `"ttl":`) {
		t.Errorf("tasks/get of the key's own core task: %s", raw)
	}
	if o, raw := alice.tasks(t, "tasks/cancel", id, false); o.Error == nil || o.Error.Code != -32602 {
		t.Errorf("tasks/cancel of a completed task: %s, want -32602", raw)
	}
	// Each dialect sees only its own tasks.
	if o, raw := alice.tasks(t, "tasks/get", id, true); o.Error == nil || o.Error.Code != -32602 {
		t.Errorf("the extension's tasks/get of a core task: %s, want -32602", raw)
	}

	// The extension has no tasks/result nor tasks/list: -32601 in its dialect.
	v2 := mtStateless(hp.url, taskKeyA, "2026-07-28")
	for _, c := range []struct {
		who    *mtClient
		method string
		optIn  bool
	}{{alice, "tasks/result", true}, {alice, "tasks/list", true}, {v2, "tasks/result", true}, {v2, "tasks/list", false}} {
		if o, raw := c.who.tasks(t, c.method, id, c.optIn); o.Error == nil || o.Error.Code != -32601 {
			t.Errorf("%s %s (opt-in %v): %s, want -32601", c.who.version, c.method, c.optIn, raw)
		}
	}

	// tasks/list pages by 50, newest first, with nextCursor.
	for i := range 51 {
		body := fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"sleep","arguments":{"ms":0},"task":{}}}`, 100+i)
		if _, o, raw := alice.post(t, "tools/call", "sleep", body); o.Error != nil || !strings.Contains(string(o.Result), `{"task":{"taskId":"`) {
			t.Fatalf("tools/call with params.task: %s, want a CreateTaskResult", raw)
		}
	}
	var page struct {
		Tasks []struct {
			TaskID string `json:"taskId"`
		} `json:"tasks"`
		NextCursor string `json:"nextCursor"`
	}
	_, o, raw := alice.post(t, "tasks/list", "", `{"jsonrpc":"2.0","id":1,"method":"tasks/list","params":{}}`)
	if err := json.Unmarshal(o.Result, &page); err != nil || len(page.Tasks) != 50 || page.NextCursor == "" || page.Tasks[0].TaskID == id {
		t.Fatalf("tasks/list: %s, want 50 tasks, the newest first, and nextCursor", raw)
	}
	_, o, raw = alice.post(t, "tasks/list", "", `{"jsonrpc":"2.0","id":2,"method":"tasks/list","params":{"cursor":"`+page.NextCursor+`"}}`)
	page.NextCursor = ""
	if err := json.Unmarshal(o.Result, &page); err != nil || len(page.Tasks) != 2 || page.NextCursor != "" || page.Tasks[1].TaskID != id {
		t.Errorf("tasks/list page 2: %s, want the last 2, the TypeScript client's last", raw)
	}
	if _, o, raw := bob.post(t, "tasks/list", "", `{"jsonrpc":"2.0","id":3,"method":"tasks/list","params":{}}`); string(o.Result) != `{"tasks":[]}` {
		t.Errorf("another key's tasks/list: %s, want none", raw)
	}
}

// TestCoreTasksOverStdio: the same TypeScript client speaks to a real
// `opentool-host mcp` over stdio, which serves core tasks as /mcp does:
// capabilities.tasks, params.task answered with a CreateTaskResult,
// tasks/get, tasks/result, tasks/list, and notifications/tasks/status on
// stdout when the task completes.
func TestCoreTasksOverStdio(t *testing.T) {
	t.Parallel() // waits on Node servers and clients most of its time: beside the other Node tests
	node, modules := ctNode(t)
	dir := t.TempDir()
	testkit.InstallPlugin(t, dir, "faulty", "./testkit/plugins/faulty")
	bin := testkit.Build(t, "./cmd/opentool-host")
	argv, _ := json.Marshal([]string{bin, "mcp", "--dir", dir, "--watch=false", "--state-dir", t.TempDir(), "--log-level", "debug"})
	out, _ := coreClient(t, node, modules, "stdio:"+string(argv), "-", "sleep", `{"ms":1500}`, true)
	checkSlept(t, out)
}

// TestCoreTasksStateless: with --mcp-stateless a 2025-11-25 client has
// core tasks all the same (they belong to its API key, not to a
// session): capabilities.tasks, params.task, tasks/get, tasks/result,
// tasks/list; notifications/tasks/status has no stream to go on, and
// the extension's dialect (a 2026-07-28 client) still refuses the core's
// own methods with -32601.
func TestCoreTasksStateless(t *testing.T) {
	t.Parallel() // waits on Node servers and clients most of its time: beside the other Node tests
	node, modules := ctNode(t)
	dir := t.TempDir()
	testkit.InstallPlugin(t, dir, "faulty", "./testkit/plugins/faulty")
	hp := startHostProc(t, dir, taskHostArgs("--mcp-stateless")...)
	out, id := coreClient(t, node, modules, hp.url+"/mcp", taskKeyA, "sleep", `{"ms":1500}`, false)
	checkSlept(t, out)
	v2 := mtStateless(hp.url, taskKeyA, "2026-07-28")
	for _, method := range []string{"tasks/result", "tasks/list"} {
		if o, raw := v2.tasks(t, method, id, true); o.Error == nil || o.Error.Code != -32601 || !strings.Contains(o.Error.Message, "core tasks of MCP 2025-11-25") {
			t.Errorf("2026-07-28 %s: %s, want -32601 naming the core tasks", method, raw)
		}
	}
}
