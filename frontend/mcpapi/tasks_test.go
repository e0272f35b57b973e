package mcpapi_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/opentool-host/opentool-host/frontend/mcpapi"
	"github.com/opentool-host/opentool-host/frontend/opentoolapi"
	"github.com/opentool-host/opentool-host/frontend/route"
	"github.com/opentool-host/opentool-host/host/access"
	"github.com/opentool-host/opentool-host/host/tasks"
	"github.com/opentool-host/opentool-host/host/tasks/mcptasks"
	"github.com/opentool-host/opentool-host/testkit"
)

// The MCP Tasks extension on /mcp (tasklayer, extension.go), in process: a real host
// running the faulty test plugin (sleep honours cancellation, sleeps
// counts the sleeps in flight and those cancelled), one task manager
// shared with the OpenTool front end, two API keys.

// The two keys of the task rig.
const (
	aliceKey = "alice-key"
	bobKey   = "bob-key"
)

// optIn is the request _meta that declares the extension.
const optIn = `"_meta":{"io.modelcontextprotocol/clientCapabilities":{"extensions":{"io.modelcontextprotocol/tasks":{}}}}`

// taskRig serves a host with the extension: /mcp (stateless),
// /sessions/mcp and the OpenTool API, behind aliceKey and bobKey.
type taskRig struct {
	url string
	tm  *tasks.Manager
}

func startTaskRig(t *testing.T, after time.Duration) *taskRig {
	t.Helper()
	guard, err := access.New(access.Config{Keys: []string{aliceKey, bobKey}})
	if err != nil {
		t.Fatal(err)
	}
	return startTaskRigWith(t, after, guard)
}

// startTaskRigWith is startTaskRig behind guard.
func startTaskRigWith(t *testing.T, after time.Duration, guard *access.Guard) *taskRig {
	t.Helper()
	h := testkit.StartHost(t, nil, "./testkit/plugins/faulty")
	tm, err := tasks.NewManager(tasks.Config{After: after, PollInterval: 100 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(tm.Close)
	s := mcpapi.New(h, mcpapi.Config{Logger: testkit.Logger(t), Tasks: tm})
	mux := http.NewServeMux()
	mux.Handle(mcpapi.Path, s.Handler(mcpapi.HTTPOptions{}))
	mux.Handle("/sessions"+mcpapi.Path, s.Handler(mcpapi.HTTPOptions{Sessions: true}))
	mux.Handle("/", route.Mux(opentoolapi.New(h, opentoolapi.Config{Version: "test", Logger: testkit.Logger(t), Tasks: tm}).Routes()))
	return &taskRig{url: testkit.Serve(t, guard.Middleware(mux)), tm: tm}
}

// rpcOut is one JSON-RPC response as read from /mcp.
type rpcOut struct {
	Result json.RawMessage `json:"result"`
	Error  *struct {
		Code    int             `json:"code"`
		Message string          `json:"message"`
		Data    json.RawMessage `json:"data"`
	} `json:"error"`
}

// mcpRaw posts one JSON-RPC message to url with key (and the headers
// "Name: value") and returns the HTTP status and the response to it (the
// one data line of an SSE stream that carries an id, or the JSON body),
// decoded and as sent.
func mcpRaw(t *testing.T, url, key, body string, headers ...string) (int, rpcOut, string) {
	t.Helper()
	resp, err := (&http.Client{Timeout: 30 * time.Second}).Do(mcpPost(t, url, key, body, headers...))
	if err != nil {
		t.Fatalf("POST %s: %v", url, err)
	}
	defer resp.Body.Close()
	raw := responseOf(t, resp)
	var out rpcOut
	if raw != "" {
		if err := json.Unmarshal([]byte(raw), &out); err != nil {
			t.Fatalf("response %q: %v", raw, err)
		}
	}
	return resp.StatusCode, out, raw
}

// mcpPost is a POST of body to url with key, as an MCP client sends it
// (JSON, accepting JSON and event streams), with the headers "Name:
// value".
func mcpPost(t *testing.T, url, key, body string, headers ...string) *http.Request {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Authorization", "Bearer "+key)
	for _, h := range headers {
		k, v, _ := strings.Cut(h, ": ")
		req.Header.Set(k, v)
	}
	return req
}

// responseOf returns the JSON-RPC response in resp's body: the body of
// an application/json answer, or the data of the SSE event that carries
// a response (a message with an id and no method).
func responseOf(t *testing.T, resp *http.Response) string {
	t.Helper()
	if !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		b, _ := io.ReadAll(resp.Body)
		return strings.TrimSpace(string(b))
	}
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		data, ok := strings.CutPrefix(sc.Text(), "data: ")
		if !ok {
			continue
		}
		var m struct {
			ID     json.RawMessage `json:"id"`
			Method string          `json:"method"`
		}
		if json.Unmarshal([]byte(data), &m) == nil && len(m.ID) > 0 && m.Method == "" {
			return data
		}
	}
	return ""
}

// v25 is the protocol header of a stateless 2025-11-25 request.
const v25 = "Mcp-Protocol-Version: 2025-11-25"

// callReq is a tools/call of name with args (JSON), with meta members
// (`"_meta":{...}`) when given.
func callReq(id int, name, args, meta string) string {
	if meta != "" {
		meta = "," + meta
	}
	return fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":%q,"arguments":%s%s}}`, id, name, args, meta)
}

// taskReq is a tasks/* request for task id, with meta when given.
func taskReq(id int, method, taskID, meta string) string {
	if meta != "" {
		meta = "," + meta
	}
	return fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":%q,"params":{"taskId":%q%s}}`, id, method, taskID, meta)
}

// wireTask is a CreateTaskResult or GetTaskResult as sent.
type wireTask struct {
	ResultType     string          `json:"resultType"`
	TaskID         string          `json:"taskId"`
	Status         string          `json:"status"`
	StatusMessage  string          `json:"statusMessage"`
	CreatedAt      string          `json:"createdAt"`
	LastUpdatedAt  string          `json:"lastUpdatedAt"`
	TTLMs          *int64          `json:"ttlMs"`
	PollIntervalMs int64           `json:"pollIntervalMs"`
	Result         json.RawMessage `json:"result"`
	Error          json.RawMessage `json:"error"`
}

var taskIDRe = regexp.MustCompile(`^[0-9a-f]{32}$`)

// asTask decodes a result as a task and checks the members every task
// has.
func asTask(t *testing.T, raw json.RawMessage, resultType string) wireTask {
	t.Helper()
	var w wireTask
	if err := json.Unmarshal(raw, &w); err != nil {
		t.Fatalf("result %s: %v", raw, err)
	}
	if w.ResultType != resultType || !taskIDRe.MatchString(w.TaskID) || w.CreatedAt == "" || w.LastUpdatedAt == "" ||
		w.TTLMs == nil || *w.TTLMs != tasks.DefaultTTL.Milliseconds() || w.PollIntervalMs != 100 {
		t.Fatalf("not a task with resultType %q: %s", resultType, raw)
	}
	return w
}

// pollMCPTask sends tasks/get for id with key until the task is no longer
// working, and returns it.
func pollMCPTask(t *testing.T, url, key, id string) wireTask {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		_, out, raw := mcpRaw(t, url, key, taskReq(9, "tasks/get", id, optIn), v25)
		if out.Error != nil {
			t.Fatalf("tasks/get: %s", raw)
		}
		if w := asTask(t, out.Result, "complete"); w.Status != "working" {
			return w
		}
		if time.Now().After(deadline) {
			t.Fatalf("task %s still working after 20 s", id)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// sleepsOf returns the faulty plugin's sleeps in flight and cancelled.
func sleepsOf(t *testing.T, url string) (active, cancelled float64) {
	t.Helper()
	_, out, raw := mcpRaw(t, url, aliceKey, callReq(1, "sleeps", "{}", ""), v25)
	var r struct {
		StructuredContent map[string]float64 `json:"structuredContent"`
	}
	if err := json.Unmarshal(out.Result, &r); err != nil || r.StructuredContent == nil {
		t.Fatalf("sleeps: %s", raw)
	}
	return r.StructuredContent["active"], r.StructuredContent["cancelled"]
}

// TestTasksExtension drives the extension with raw JSON-RPC (stateless,
// 2025-11-25): the opt-in and nothing else makes a long call a task,
// polled to the CallToolResult the call would have given; tasks/cancel
// reaches the plugin; another key, another front end and a request
// without the opt-in see nothing.
func TestTasksExtension(t *testing.T) {
	r := startTaskRig(t, 150*time.Millisecond)
	u := r.url + mcpapi.Path

	// Without the opt-in nothing changes: the call is answered when it
	// ends, with its result.
	start := time.Now()
	_, out, plainRaw := mcpRaw(t, u, aliceKey, callReq(1, "sleep", `{"ms":400}`, ""), v25)
	if out.Error != nil || time.Since(start) < 400*time.Millisecond || strings.Contains(plainRaw, "taskId") {
		t.Fatalf("sleep 400 without the opt-in: %s", plainRaw)
	}
	plain := string(out.Result)
	// A call that ends within --task-after is answered as is.
	if _, out, raw := mcpRaw(t, u, aliceKey, callReq(2, "sleep", `{"ms":20}`, optIn), v25); out.Error != nil || strings.Contains(raw, "taskId") ||
		string(out.Result) != strings.ReplaceAll(plain, "400", "20") {
		t.Fatalf("a short call with the opt-in: %s, want %s", raw, strings.ReplaceAll(plain, "400", "20"))
	}

	// A longer one is a task after --task-after.
	start = time.Now()
	_, out, raw := mcpRaw(t, u, aliceKey, callReq(3, "sleep", `{"ms":1500}`, optIn), v25)
	took := time.Since(start)
	if out.Error != nil {
		t.Fatalf("sleep 1500 with the opt-in: %s", raw)
	}
	created := asTask(t, out.Result, "task")
	if created.Status != "working" || took > time.Second {
		t.Fatalf("CreateTaskResult after %v: %s", took, raw)
	}
	id := created.TaskID

	for _, c := range []struct{ name, key, body, want string }{
		{"another key's tasks/get", bobKey, taskReq(4, "tasks/get", id, optIn), `"code":-32602`},
		{"another key's tasks/cancel", bobKey, taskReq(4, "tasks/cancel", id, optIn), `"code":-32602`},
		{"another key's tasks/update", bobKey, taskReq(4, "tasks/update", id, optIn), `"code":-32602`},
		{"a malformed id", aliceKey, taskReq(4, "tasks/get", "../"+id, optIn), `"code":-32602`},
		{"tasks/get without the opt-in", aliceKey, taskReq(4, "tasks/get", id, ""), `"code":-32021,`},
		{"tasks/get without the opt-in", aliceKey, taskReq(4, "tasks/get", id, ""),
			`"data":{"requiredCapabilities":{"extensions":{"io.modelcontextprotocol/tasks":{}}}}`},
		{"tasks/cancel without the opt-in", aliceKey, taskReq(4, "tasks/cancel", id, ""), `"code":-32021`},
	} {
		if _, _, raw := mcpRaw(t, u, c.key, c.body, v25); !strings.Contains(raw, c.want) {
			t.Errorf("%s: %s, want %s", c.name, raw, c.want)
		}
	}
	// An MCP task is not an OpenTool one.
	if st, _, _ := httpDo(t, http.MethodGet, r.url+opentoolapi.TasksPath+"/"+id, aliceKey, ""); st != http.StatusNotFound {
		t.Errorf("GET /opentool/tasks/{id} of an MCP task: HTTP %d, want 404", st)
	}
	if _, out, raw := mcpRaw(t, u, aliceKey, taskReq(5, "tasks/update", id, optIn+`,"inputResponses":{"x":{"action":"accept"}}`), v25); out.Error != nil || string(out.Result) != `{"resultType":"complete"}` {
		t.Errorf("tasks/update: %s", raw)
	}

	done := pollMCPTask(t, u, aliceKey, id)
	if done.Status != "completed" || string(done.Result) != strings.ReplaceAll(plain, "400", "1500") || done.Error != nil {
		t.Errorf("completed task: %+v (result %s), want the result %s", done, done.Result, strings.ReplaceAll(plain, "400", "1500"))
	}
	if _, out, raw := mcpRaw(t, u, aliceKey, taskReq(6, "tasks/cancel", id, optIn), v25); out.Error != nil || string(out.Result) != `{"resultType":"complete"}` {
		t.Errorf("tasks/cancel of an ended task: %s", raw)
	}
	if again := pollMCPTask(t, u, aliceKey, id); again.Status != "completed" {
		t.Errorf("a cancel after the end changed the task: %+v", again)
	}

	// tasks/cancel cancels the call in the plugin.
	_, out, raw = mcpRaw(t, u, aliceKey, callReq(7, "sleep", `{"ms":60000}`, optIn), v25)
	if out.Error != nil {
		t.Fatal(raw)
	}
	doomed := asTask(t, out.Result, "task")
	testkit.Eventually(t, 10*time.Second, "the sleep runs in the plugin", func() bool {
		active, _ := sleepsOf(t, r.url+mcpapi.Path)
		return active == 1
	})
	if _, out, raw := mcpRaw(t, u, aliceKey, taskReq(8, "tasks/cancel", doomed.TaskID, optIn), v25); out.Error != nil || string(out.Result) != `{"resultType":"complete"}` {
		t.Fatalf("tasks/cancel: %s", raw)
	}
	ended := pollMCPTask(t, u, aliceKey, doomed.TaskID)
	if ended.Status != "cancelled" || ended.StatusMessage != tasks.ErrCancelled.Error() || ended.Result != nil || ended.Error != nil {
		t.Errorf("cancelled task: %+v", ended)
	}
	if active, cancelled := sleepsOf(t, u); active != 0 || cancelled != 1 {
		t.Errorf("sleeps after tasks/cancel: active %v cancelled %v, want 0 and 1", active, cancelled)
	}

	// An OpenTool task is not an MCP one.
	st, _, body := httpDo(t, http.MethodPost, r.url+"/opentool/call", aliceKey, `{"jsonrpc":"2.0","method":"sleep","params":{"ms":1000},"id":1}`, "Prefer: respond-async")
	var ot struct{ Task struct{ ID string } }
	if st != http.StatusAccepted || json.Unmarshal([]byte(body), &ot) != nil || ot.Task.ID == "" {
		t.Fatalf("OpenTool task: HTTP %d %s", st, body)
	}
	if _, _, raw := mcpRaw(t, u, aliceKey, taskReq(10, "tasks/get", ot.Task.ID, optIn), v25); !strings.Contains(raw, `"code":-32602`) {
		t.Errorf("tasks/get of an OpenTool task: %s, want -32602", raw)
	}
}

// TestTasksAtOnce: with --task-after 0 every call that opts in is a task
// at once, but for a tool the key cannot call, answered as without tasks
// (the SDK's unknown-tool error).
func TestTasksAtOnce(t *testing.T) {
	r := startTaskRig(t, 0)
	u := r.url + mcpapi.Path
	_, out, raw := mcpRaw(t, u, aliceKey, callReq(1, "sleep", `{"ms":1}`, optIn), v25)
	if out.Error != nil {
		t.Fatal(raw)
	}
	w := asTask(t, out.Result, "task")
	if done := pollMCPTask(t, u, aliceKey, w.TaskID); done.Status != "completed" || !strings.Contains(string(done.Result), `"structuredContent":{"slept_ms":1}`) {
		t.Errorf("completed: %+v %s", done, done.Result)
	}
	if _, out, raw := mcpRaw(t, u, aliceKey, callReq(2, "nosuchtool", `{}`, optIn), v25); out.Error == nil || out.Error.Code != -32602 || !strings.Contains(out.Error.Message, "unknown tool") {
		t.Errorf("unknown tool with the opt-in: %s", raw)
	}
}

// TestTasksNewProtocol: a 2026-07-28 client (the per-request _meta
// triple, Mcp-* headers) gets the capability from server/discover, a
// CreateTaskResult for a long call and the task by tasks/get.
func TestTasksNewProtocol(t *testing.T) {
	r := startTaskRig(t, 100*time.Millisecond)
	u := r.url + mcpapi.Path
	const v = "2026-07-28"
	meta := `"_meta":{"io.modelcontextprotocol/protocolVersion":"` + v + `","io.modelcontextprotocol/clientInfo":{"name":"raw","version":"1"},` +
		`"io.modelcontextprotocol/clientCapabilities":{"extensions":{"io.modelcontextprotocol/tasks":{}}}}`
	hdr := func(method, name string) []string {
		h := []string{"Mcp-Protocol-Version: " + v, "Mcp-Method: " + method}
		if name != "" {
			h = append(h, "Mcp-Name: "+name)
		}
		return h
	}
	_, out, raw := mcpRaw(t, u, aliceKey, `{"jsonrpc":"2.0","id":1,"method":"server/discover","params":{`+meta+`}}`, hdr("server/discover", "")...)
	if out.Error != nil || !strings.Contains(raw, `"extensions":{"io.modelcontextprotocol/tasks":{}}`) {
		t.Errorf("server/discover: %s", raw)
	}
	_, out, raw = mcpRaw(t, u, aliceKey, callReq(2, "sleep", `{"ms":600}`, meta), hdr("tools/call", "sleep")...)
	if out.Error != nil {
		t.Fatal(raw)
	}
	w := asTask(t, out.Result, "task")
	deadline := time.Now().Add(20 * time.Second)
	for {
		_, out, raw = mcpRaw(t, u, aliceKey, taskReq(3, "tasks/get", w.TaskID, meta), hdr("tasks/get", w.TaskID)...)
		if out.Error != nil {
			t.Fatal(raw)
		}
		if got := asTask(t, out.Result, "complete"); got.Status != "working" {
			if got.Status != "completed" || !strings.Contains(string(got.Result), `"structuredContent":{"slept_ms":600}`) {
				t.Errorf("tasks/get: %s", raw)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("still working")
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestTasksWithTheSDKClient: the MCP Go SDK's client over a session sees
// the capability in initialize, carries the opt-in in CallTool's _meta
// (a short call: its result as usual) and reads a task with tasks/get as
// a custom method.
func TestTasksWithTheSDKClient(t *testing.T) {
	r := startTaskRig(t, 150*time.Millisecond)
	_, out, raw := mcpRaw(t, r.url+mcpapi.Path, aliceKey, callReq(1, "sleep", `{"ms":300}`, optIn), v25)
	if out.Error != nil {
		t.Fatal(raw)
	}
	w := asTask(t, out.Result, "task")

	c := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "1"}, nil)
	if err := mcp.AddSendingCustomMethod[*sdkTaskParams, *sdkTask](c, "tasks/get"); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	tr := &mcp.StreamableClientTransport{Endpoint: r.url + "/sessions" + mcpapi.Path, HTTPClient: &http.Client{Transport: bearer(aliceKey)}, MaxRetries: -1}
	cs, err := c.Connect(ctx, tr, &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"}) // a session
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	if _, ok := cs.InitializeResult().Capabilities.Extensions[mcptasks.Extension]; !ok {
		t.Errorf("initialize: capabilities %+v lack the extension", cs.InitializeResult().Capabilities)
	}
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "sleep", Arguments: map[string]any{"ms": 10}, Meta: sdkOptIn()})
	if err != nil || res.IsError {
		t.Fatalf("CallTool with the opt-in: %v %+v", err, res)
	}
	if b, _ := json.Marshal(res.StructuredContent); string(b) != `{"slept_ms":10}` {
		t.Errorf("CallTool with the opt-in: structuredContent %s", b)
	}
	for {
		got, err := mcp.CallCustomMethod[*sdkTaskParams, *sdkTask](ctx, cs, "tasks/get", &sdkTaskParams{ParamsBase: mcp.ParamsBase{Meta: sdkOptIn()}, TaskID: w.TaskID})
		if err != nil {
			t.Fatalf("tasks/get through the SDK client: %v", err)
		}
		if got.Status != "working" {
			if got.Status != "completed" || !strings.Contains(string(got.Result), `"slept_ms":300`) {
				t.Errorf("tasks/get through the SDK client: %+v %s", got, got.Result)
			}
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	_, err = mcp.CallCustomMethod[*sdkTaskParams, *sdkTask](ctx, cs, "tasks/get", &sdkTaskParams{TaskID: w.TaskID})
	if err == nil || !strings.Contains(err.Error(), "-32021") && !strings.Contains(err.Error(), "Missing required client capability") {
		t.Errorf("tasks/get without the opt-in through the SDK client: %v", err)
	}
}

// TestTaskOfRevokedKey: removing a key from the keys file cancels its
// running MCP task's call in the plugin (the call outlives its request,
// whose context the revocation would have ended), and fails the task
// saying why.
func TestTaskOfRevokedKey(t *testing.T) {
	file := filepath.Join(t.TempDir(), "keys.json")
	write := func(body string) {
		if err := os.WriteFile(file, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	write(`{"keys":[{"name":"alice","key":"alice-key","allow":["*"]},{"name":"bob","key":"bob-key","allow":["*"]}]}`)
	guard, err := access.New(access.Config{File: file})
	if err != nil {
		t.Fatal(err)
	}
	r := startTaskRigWith(t, 0, guard)
	u := r.url + mcpapi.Path
	_, out, raw := mcpRaw(t, u, aliceKey, callReq(1, "sleep", `{"ms":20000}`, optIn), v25)
	if out.Error != nil {
		t.Fatal(raw)
	}
	w := asTask(t, out.Result, "task")
	sleeps := func() string {
		_, out, _ := mcpRaw(t, u, bobKey, callReq(2, "sleeps", "{}", ""), v25)
		return string(out.Result)
	}
	testkit.Eventually(t, 10*time.Second, "the sleep runs", func() bool { return strings.Contains(sleeps(), `"active":1`) })
	write(`{"keys":[{"name":"bob","key":"bob-key","allow":["*"]}]}`)
	if err := guard.Reload(); err != nil {
		t.Fatal(err)
	}
	testkit.Eventually(t, 10*time.Second, "the revoked key's task cancelled in the plugin", func() bool {
		return strings.Contains(sleeps(), `"structuredContent":{"active":0,"cancelled":1}`)
	})
	testkit.Eventually(t, 10*time.Second, "the task failed", func() bool {
		rec, err := r.tm.Get(context.Background(), "alice", w.TaskID)
		return err == nil && rec.Status == tasks.Failed && rec.StatusMessage == access.ErrRevoked.Error()
	})
}

// sdkTaskParams and sdkTask are a client's tasks/get params and result.
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

// sdkOptIn is the opt-in as a client's _meta.
func sdkOptIn() mcp.Meta {
	return mcp.Meta{"io.modelcontextprotocol/clientCapabilities": map[string]any{"extensions": map[string]any{mcptasks.Extension: map[string]any{}}}}
}

// bearer sends its key with every request.
type bearer string

func (b bearer) RoundTrip(req *http.Request) (*http.Response, error) {
	req = req.Clone(req.Context())
	req.Header.Set("Authorization", "Bearer "+string(b))
	return http.DefaultTransport.RoundTrip(req)
}

// httpDo sends one request with key and returns the status, headers and
// body.
func httpDo(t *testing.T, method, url, key, body string, headers ...string) (int, http.Header, string) {
	t.Helper()
	req, err := http.NewRequest(method, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+key)
	req.Header.Set("Content-Type", "application/json")
	for _, h := range headers {
		k, v, _ := strings.Cut(h, ": ")
		req.Header.Set(k, v)
	}
	resp, err := (&http.Client{Timeout: 30 * time.Second}).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, resp.Header, string(b)
}
