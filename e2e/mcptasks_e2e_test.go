package e2e_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"regexp"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/opentool-host/opentool-host/testkit"
)

// The MCP Tasks extension (io.modelcontextprotocol/tasks) on /mcp through
// real host processes, with raw JSON-RPC over HTTP (the SDK client has no
// tasks: it cannot read a CreateTaskResult) and the MCP Go SDK client
// where it can carry the _meta (initialize, CallTool, tasks/get as a
// custom method). The faulty test plugin's sleep honours cancellation;
// its sleeps counts the sleeps in flight and those cancelled (read over
// /opentool/call: sleeps in tasks_e2e_test.go).

// mtOptIn is the request _meta member that declares the extension
// (extension, "Capability Negotiation").
const mtOptIn = `"_meta":{"io.modelcontextprotocol/clientCapabilities":{"extensions":{"io.modelcontextprotocol/tasks":{}}}}`

// mtOut is one JSON-RPC response read from /mcp.
type mtOut struct {
	Result json.RawMessage `json:"result"`
	Error  *struct {
		Code    int             `json:"code"`
		Message string          `json:"message"`
		Data    json.RawMessage `json:"data"`
	} `json:"error"`
}

// mtTask is a CreateTaskResult or GetTaskResult as sent.
type mtTask struct {
	ResultType     string          `json:"resultType"`
	TaskID         string          `json:"taskId"`
	Status         string          `json:"status"`
	StatusMessage  string          `json:"statusMessage"`
	CreatedAt      string          `json:"createdAt"`
	TTLMs          *int64          `json:"ttlMs"`
	PollIntervalMs int64           `json:"pollIntervalMs"`
	Result         json.RawMessage `json:"result"`
	Error          *struct {
		Code    int    `json:"code"`
		Message string `json:"message"`
	} `json:"error"`
}

// mtClient posts JSON-RPC to one host's /mcp as one client: an API key,
// the protocol it speaks, and its session once it has one.
type mtClient struct {
	url, key, version string
	session           string // Mcp-Session-Id, "" for stateless
	newProtocol       bool   // 2026-07-28: the _meta triple and the Mcp-* headers
	hc                *http.Client
}

var mtHTTP = &http.Client{Timeout: 30 * time.Second}

// mtStateless is a stateless client of protocol version.
func mtStateless(base, key, version string) *mtClient {
	return &mtClient{url: base + "/mcp", key: key, version: version, newProtocol: version >= "2026-07-28", hc: mtHTTP}
}

// mtSession opens a session (initialize, notifications/initialized) on
// base with key, protocol 2025-11-25.
func mtSession(t *testing.T, base, key string) *mtClient {
	t.Helper()
	c := &mtClient{url: base + "/mcp", key: key, version: "2025-11-25", hc: mtHTTP}
	h, out, raw := c.post(t, "initialize", "", `{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}`)
	if out.Error != nil || h.Get("Mcp-Session-Id") == "" {
		t.Fatalf("initialize: %s", raw)
	}
	c.session = h.Get("Mcp-Session-Id")
	c.post(t, "notifications/initialized", "", `{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	return c
}

// meta is the _meta member of a request: the opt-in (optIn), for a
// 2026-07-28 client inside the per-request triple; "" for none (a
// 2026-07-28 client still sends its triple, without the extension).
func (c *mtClient) meta(optIn bool) string {
	if !c.newProtocol {
		if optIn {
			return mtOptIn
		}
		return ""
	}
	ext := ""
	if optIn {
		ext = `"extensions":{"io.modelcontextprotocol/tasks":{}}`
	}
	return `"_meta":{"io.modelcontextprotocol/protocolVersion":"` + c.version + `","io.modelcontextprotocol/clientInfo":{"name":"raw","version":"1"},"io.modelcontextprotocol/clientCapabilities":{` + ext + `}}`
}

// post sends body (method, with name the Mcp-Name of a 2026-07-28
// request) and returns the response's headers and its JSON-RPC response
// (from the JSON body or the SSE event that carries it), decoded and as
// sent.
func (c *mtClient) post(t *testing.T, method, name, body string) (http.Header, mtOut, string) {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, c.url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	h := req.Header
	h.Set("Content-Type", "application/json")
	h.Set("Accept", "application/json, text/event-stream")
	h.Set("Authorization", "Bearer "+c.key)
	if method != "initialize" {
		h.Set("Mcp-Protocol-Version", c.version)
	}
	if c.session != "" {
		h.Set("Mcp-Session-Id", c.session)
	}
	if c.newProtocol {
		h.Set("Mcp-Method", method)
		if name != "" {
			h.Set("Mcp-Name", name)
		}
	}
	resp, err := c.hc.Do(req)
	if err != nil {
		t.Fatalf("POST %s %s: %v", c.url, method, err)
	}
	defer resp.Body.Close()
	raw := ""
	if strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		sc := bufio.NewScanner(resp.Body)
		sc.Buffer(make([]byte, 1<<20), 1<<20)
		for sc.Scan() {
			data, ok := strings.CutPrefix(sc.Text(), "data: ")
			var m struct {
				ID     json.RawMessage `json:"id"`
				Method string          `json:"method"`
			}
			if ok && json.Unmarshal([]byte(data), &m) == nil && len(m.ID) > 0 && m.Method == "" {
				raw = data
				break
			}
		}
		_, _ = io.Copy(io.Discard, resp.Body)
	} else {
		b, _ := io.ReadAll(resp.Body)
		raw = strings.TrimSpace(string(b))
	}
	var out mtOut
	if raw != "" && json.Unmarshal([]byte(raw), &out) != nil {
		t.Fatalf("%s: HTTP %d, not a JSON-RPC response: %s", method, resp.StatusCode, raw)
	}
	return resp.Header, out, raw
}

// call sends tools/call sleep(ms) (optIn: with the opt-in) and returns
// the result as sent.
func (c *mtClient) call(t *testing.T, tool, args string, optIn bool) (mtOut, string) {
	t.Helper()
	meta := c.meta(optIn)
	if meta != "" {
		meta = "," + meta
	}
	_, out, raw := c.post(t, "tools/call", tool, fmt.Sprintf(`{"jsonrpc":"2.0","id":"call-%s","method":"tools/call","params":{"name":%q,"arguments":%s%s}}`, tool, tool, args, meta))
	return out, raw
}

// tasks sends tasks/get, tasks/cancel or tasks/update for id (optIn:
// with the opt-in).
func (c *mtClient) tasks(t *testing.T, method, id string, optIn bool) (mtOut, string) {
	t.Helper()
	meta := c.meta(optIn)
	if meta != "" {
		meta = "," + meta
	}
	_, out, raw := c.post(t, method, id, fmt.Sprintf(`{"jsonrpc":"2.0","id":42,"method":%q,"params":{"taskId":%q%s}}`, method, id, meta))
	return out, raw
}

var mtIDRe = regexp.MustCompile(`^[0-9a-f]{32}$`)

// asMTTask decodes a result as a task with resultType and the members
// every task has (--task-ttl's default, the default poll interval).
func asMTTask(t *testing.T, out mtOut, raw, resultType string) mtTask {
	t.Helper()
	var w mtTask
	if out.Error != nil || json.Unmarshal(out.Result, &w) != nil || w.ResultType != resultType || !mtIDRe.MatchString(w.TaskID) ||
		w.CreatedAt == "" || w.TTLMs == nil || *w.TTLMs != 900000 || w.PollIntervalMs != 1000 {
		t.Fatalf("not a task with resultType %q: %s", resultType, raw)
	}
	return w
}

// startMCPTask calls sleep(ms) with the opt-in and wants a
// CreateTaskResult, returned with how long it took.
func startMCPTask(t *testing.T, c *mtClient, ms int) (mtTask, time.Duration) {
	t.Helper()
	start := time.Now()
	out, raw := c.call(t, "sleep", fmt.Sprintf(`{"ms":%d}`, ms), true)
	took := time.Since(start)
	w := asMTTask(t, out, raw, "task")
	if w.Status != "working" {
		t.Fatalf("CreateTaskResult: %s", raw)
	}
	return w, took
}

// pollMCP sends tasks/get for id until the task is no longer working
// (within at most), and returns it and the response as sent.
func pollMCP(t *testing.T, c *mtClient, id string, within time.Duration) (mtTask, string) {
	t.Helper()
	deadline := time.Now().Add(within)
	for {
		out, raw := c.tasks(t, "tasks/get", id, true)
		if w := asMTTask(t, out, raw, "complete"); w.Status != "working" {
			return w, raw
		}
		if time.Now().After(deadline) {
			t.Fatalf("task %s still working after %v", id, within)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// mcpPollLatency sends tasks/get for id n times and returns the median
// and the 99th percentile of the round trips.
func mcpPollLatency(t *testing.T, c *mtClient, id string, n int) (p50, p99 time.Duration) {
	t.Helper()
	d := make([]time.Duration, n)
	for i := range d {
		start := time.Now()
		out, raw := c.tasks(t, "tasks/get", id, true)
		d[i] = time.Since(start)
		if out.Error != nil {
			t.Fatalf("tasks/get: %s", raw)
		}
	}
	sort.Slice(d, func(i, j int) bool { return d[i] < d[j] })
	return d[n/2], d[n*99/100]
}

// sdkTaskParams and sdkTask are tasks/get's params and result for the
// SDK client's custom method.
type sdkTaskParams struct {
	mcp.ParamsBase
	TaskID string `json:"taskId"`
}

type sdkTask struct {
	mcp.ResultBase
	ResultType string          `json:"resultType"`
	TaskID     string          `json:"taskId"`
	Status     string          `json:"status"`
	Result     json.RawMessage `json:"result"`
}

// sdkOptIn is the opt-in as the SDK client's request _meta.
func sdkOptIn() mcp.Meta {
	return mcp.Meta{"io.modelcontextprotocol/clientCapabilities": map[string]any{"extensions": map[string]any{"io.modelcontextprotocol/tasks": map[string]any{}}}}
}

// TestMCPTasksOnOneHost: over sessions (the default), a 3 s sleep whose
// tools/call declares the extension in _meta is answered with a
// CreateTaskResult at --task-after (200 ms) and polled with tasks/get,
// from another session of the same key through the SDK client, to the
// CallToolResult the call gives without tasks; another key cannot see
// or cancel it; tasks/* without the opt-in get -32021; tasks/cancel
// cancels the sleep in the plugin; without the opt-in nothing changes.
func TestMCPTasksOnOneHost(t *testing.T) {
	dir := t.TempDir()
	testkit.InstallPlugin(t, dir, "faulty", "./testkit/plugins/faulty")
	hp := startHostProc(t, dir, taskHostArgs()...)

	alice := mtSession(t, hp.url, taskKeyA)
	bob := mtSession(t, hp.url, taskKeyB)

	out, plain := alice.call(t, "sleep", `{"ms":400}`, false)
	want := `{"content":[{"type":"text","text":"{\"slept_ms\":400}"}],"structuredContent":{"slept_ms":400}}`
	if out.Error != nil || string(out.Result) != want {
		t.Fatalf("sleep 400 without the opt-in: %s, want the result %s", plain, want)
	}
	if out, raw := alice.call(t, "sleep", `{"ms":10}`, true); string(out.Result) != strings.ReplaceAll(want, "400", "10") {
		t.Errorf("a short call with the opt-in: %s", raw)
	}

	created, took := startMCPTask(t, alice, 3000)
	t.Logf("CreateTaskResult after %v (--task-after 200ms)", took.Round(time.Millisecond))
	if took > 1500*time.Millisecond {
		t.Errorf("the CreateTaskResult took %v with --task-after 200ms", took)
	}
	id := created.TaskID
	for _, method := range []string{"tasks/get", "tasks/cancel", "tasks/update"} {
		if out, raw := bob.tasks(t, method, id, true); out.Error == nil || out.Error.Code != -32602 {
			t.Errorf("another key's %s: %s, want -32602", method, raw)
		}
	}
	for _, method := range []string{"tasks/get", "tasks/cancel"} {
		if out, raw := alice.tasks(t, method, id, false); out.Error == nil || out.Error.Code != -32021 ||
			string(out.Error.Data) != `{"requiredCapabilities":{"extensions":{"io.modelcontextprotocol/tasks":{}}}}` {
			t.Errorf("%s without the opt-in: %s, want -32021 naming the extension", method, raw)
		}
	}
	if st, _, body := taskReq(t, http.MethodGet, hp.url+"/opentool/tasks/"+id, taskKeyA, ""); st != http.StatusNotFound {
		t.Errorf("GET /opentool/tasks/{id} of an MCP task: HTTP %d %s, want 404", st, body)
	}
	p50, p99 := mcpPollLatency(t, alice, id, 300)
	t.Logf("tasks/get (working), one host, memory store, over a session: p50 %v, p99 %v over 300 polls", p50, p99)
	pings := make([]time.Duration, 300)
	for i := range pings {
		start := time.Now()
		if _, out, raw := alice.post(t, "ping", "", `{"jsonrpc":"2.0","id":1,"method":"ping"}`); out.Error != nil {
			t.Fatalf("ping: %s", raw)
		}
		pings[i] = time.Since(start)
	}
	sort.Slice(pings, func(i, j int) bool { return pings[i] < pings[j] })
	t.Logf("for comparison, ping over the same session: p50 %v, p99 %v over 300", pings[150], pings[297])

	// Another session of the same key, the SDK client's: the
	// capability in initialize, tasks/get as a custom method.
	c := mcp.NewClient(&mcp.Implementation{Name: "e2e", Version: "1"}, nil)
	if err := mcp.AddSendingCustomMethod[*sdkTaskParams, *sdkTask](c, "tasks/get"); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cs, err := c.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: hp.url + "/mcp", HTTPClient: &http.Client{Transport: bearer(taskKeyA)}, MaxRetries: -1}, &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	if _, ok := cs.InitializeResult().Capabilities.Extensions["io.modelcontextprotocol/tasks"]; !ok {
		t.Errorf("initialize: the capabilities lack the extension: %+v", cs.InitializeResult().Capabilities)
	}
	if res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "sleep", Arguments: map[string]any{"ms": 10}, Meta: sdkOptIn()}); err != nil || res.IsError {
		t.Errorf("the SDK client's CallTool with the opt-in: %v %+v", err, res)
	}
	var done *sdkTask
	for deadline := time.Now().Add(20 * time.Second); ; {
		done, err = mcp.CallCustomMethod[*sdkTaskParams, *sdkTask](ctx, cs, "tasks/get", &sdkTaskParams{ParamsBase: mcp.ParamsBase{Meta: sdkOptIn()}, TaskID: id})
		if err != nil {
			t.Fatalf("tasks/get through the SDK client: %v", err)
		}
		if done.Status != "working" || time.Now().After(deadline) {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	if done.Status != "completed" || done.ResultType != "complete" || string(done.Result) != strings.ReplaceAll(want, "400", "3000") {
		t.Errorf("completed task through the SDK client: %+v, result %s, want %s", done, done.Result, strings.ReplaceAll(want, "400", "3000"))
	}
	if active, cancelled := sleeps(t, hp.url, taskKeyA); active != 0 || cancelled != 0 {
		t.Errorf("sleeps before the cancel: active %v cancelled %v", active, cancelled)
	}

	doomed, _ := startMCPTask(t, alice, 60000)
	testkit.Eventually(t, 10*time.Second, "the sleep runs in the plugin", func() bool {
		active, _ := sleeps(t, hp.url, taskKeyA)
		return active == 1
	})
	if out, raw := alice.tasks(t, "tasks/cancel", doomed.TaskID, true); out.Error != nil || string(out.Result) != `{"resultType":"complete"}` {
		t.Errorf("tasks/cancel: %s", raw)
	}
	ended, raw := pollMCP(t, alice, doomed.TaskID, 10*time.Second)
	if ended.Status != "cancelled" || ended.StatusMessage != "cancelled at the client's request" || ended.Result != nil || ended.Error != nil {
		t.Errorf("cancelled task: %s", raw)
	}
	if active, cancelled := sleeps(t, hp.url, taskKeyA); active != 0 || cancelled != 1 {
		t.Errorf("sleeps after tasks/cancel: active %v cancelled %v, want 0 and 1 (the cancel reached the plugin)", active, cancelled)
	}
}

// TestMCPTasksAcrossReplicas: two host processes with --mcp-stateless
// share one real redis-server; a 2026-07-28 client (the _meta triple,
// Mcp-Method and Mcp-Name) starts a task on A and polls it to completion
// on B; another key sees nothing on B; tasks/cancel on B cancels the
// call on A; A SIGKILLed mid-task leaves its task failed on B (-32603,
// naming A) within the lease.
func TestMCPTasksAcrossReplicas(t *testing.T) {
	url := testkit.StartRedis(t)
	dir := t.TempDir()
	testkit.InstallPlugin(t, dir, "faulty", "./testkit/plugins/faulty")
	const lease = time.Second
	args := taskHostArgs("--mcp-stateless", "--task-store", url, "--task-lease", lease.String())
	a := startHostProc(t, dir, args...)
	b := startHostProc(t, dir, args...)
	const v = "2026-07-28"
	onA, onB, bobOnB := mtStateless(a.url, taskKeyA, v), mtStateless(b.url, taskKeyA, v), mtStateless(b.url, taskKeyB, v)

	created, _ := startMCPTask(t, onA, 2000)
	id := created.TaskID
	if out, raw := bobOnB.tasks(t, "tasks/get", id, true); out.Error == nil || out.Error.Code != -32602 {
		t.Errorf("another key's tasks/get on B: %s, want -32602", raw)
	}
	done, raw := pollMCP(t, onB, id, 20*time.Second)
	if done.Status != "completed" || !strings.Contains(string(done.Result), `"structuredContent":{"slept_ms":2000}`) {
		t.Errorf("completed task polled on B: %s", raw)
	}

	// tasks/cancel on B reaches the call on A at A's next renewal.
	doomed, _ := startMCPTask(t, onA, 60000)
	testkit.Eventually(t, 10*time.Second, "the sleep runs on A", func() bool {
		active, _ := sleeps(t, a.url, taskKeyA)
		return active == 1
	})
	for _, r := range []struct {
		name string
		c    *mtClient
	}{{"B, of a task running on A", onB}, {"A, of its own task", onA}} {
		p50, p99 := mcpPollLatency(t, r.c, doomed.TaskID, 300)
		t.Logf("tasks/get (working) on %s, Redis store, stateless 2026-07-28: p50 %v, p99 %v over 300 polls", r.name, p50, p99)
	}
	cancelAt := time.Now()
	if out, raw := onB.tasks(t, "tasks/cancel", doomed.TaskID, true); out.Error != nil || !strings.Contains(string(out.Result), `"resultType":"complete"`) {
		t.Errorf("tasks/cancel on B: %s", raw)
	}
	ended, raw := pollMCP(t, onB, doomed.TaskID, 10*time.Second)
	t.Logf("tasks/cancel on B of a call on A: cancelled %v later", time.Since(cancelAt).Round(time.Millisecond))
	if ended.Status != "cancelled" {
		t.Errorf("task cancelled on B: %s", raw)
	}
	if active, cancelled := sleeps(t, a.url, taskKeyA); active != 0 || cancelled != 1 {
		t.Errorf("A's sleeps after tasks/cancel on B: active %v cancelled %v, want 0 and 1", active, cancelled)
	}

	// A dies mid-task: the task fails on B within the lease, naming A.
	orphan, _ := startMCPTask(t, onA, 60000)
	testkit.Eventually(t, 10*time.Second, "the sleep runs on A", func() bool {
		active, _ := sleeps(t, a.url, taskKeyA)
		return active == 1
	})
	killed := time.Now()
	if err := a.cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	<-a.done
	failed, raw := pollMCP(t, onB, orphan.TaskID, 10*time.Second)
	after := time.Since(killed)
	t.Logf("A SIGKILLed mid-task: the task was failed on B %v later (--task-lease %v): %s", after.Round(time.Millisecond), lease, failed.StatusMessage)
	pid := fmt.Sprintf("pid %d", a.cmd.Process.Pid)
	if failed.Status != "failed" || !strings.Contains(failed.StatusMessage, pid) || failed.Error == nil || failed.Error.Code != -32603 ||
		!strings.Contains(failed.Error.Message, "stopped renewing its lease") || failed.Result != nil {
		t.Errorf("task of the killed replica (%s): %s", pid, raw)
	}
	if after > lease+time.Second {
		t.Errorf("failed %v after the kill, want within the %v lease (and a poll)", after, lease)
	}
}
