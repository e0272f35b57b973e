package mcpapi_test

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/opentool-host/opentool-host/frontend/mcpapi"
	"github.com/opentool-host/opentool-host/host/tasks"
)

// What a plugin's function says about tasks (tasklayer, exec.go), against the
// taskfns test plugin in a real host, over raw JSON-RPC on /mcp: its
// execution.taskSupport listed, a required one a task at once or refused,
// a forbidden one never a task, a protocol error failing its task, and
// its requests to the client waiting in the task (input_required) until
// tasks/update answers them.

// taskfnsAfter is the rig's --task-after: far longer than any test, so
// that a task seen is one the function required.
const taskfnsAfter = time.Minute

// newTaskfnsRig serves the taskfns plugin with tasks (taskfnsAfter).
func newTaskfnsRig(t *testing.T) *rig {
	t.Helper()
	tm, err := tasks.NewManager(tasks.Config{After: taskfnsAfter, PollInterval: 100 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(tm.Close)
	return newRig(t, nil, mcpapi.Config{Tasks: tm}, "./testkit/plugins/taskfns")
}

// meta2026 is the _meta of a 2026-07-28 request declaring caps (a JSON
// object) as its client capabilities.
func meta2026(caps string) string {
	return `"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":` + caps + `}`
}

// tasksCaps declares elicitation and the tasks extension.
const tasksCaps = `{"elicitation":{},"extensions":{"io.modelcontextprotocol/tasks":{}}}`

// post2026 sends a 2026-07-28 request of method (name: its Mcp-Name, ""
// for none) with body to r's stateless /mcp.
func post2026(t *testing.T, r *rig, method, name, body string) (int, rpcOut, string) {
	t.Helper()
	headers := newHeaders(method)
	if name != "" {
		headers = append(headers, "Mcp-Name: "+name)
	}
	return mcpRaw(t, r.url+mcpapi.Path, apiKey, body, headers...)
}

// detailed is a tasks/get result with its inputRequests.
type detailed struct {
	wireTask
	InputRequests map[string]struct {
		Method string          `json:"method"`
		Params json.RawMessage `json:"params"`
	} `json:"inputRequests"`
}

// getTask sends tasks/get for id (2026-07-28, the extension declared).
func getTask(t *testing.T, r *rig, id string) detailed {
	t.Helper()
	_, out, raw := post2026(t, r, "tasks/get", id, taskReq(20, "tasks/get", id, meta2026(tasksCaps)))
	var d detailed
	if out.Error != nil || json.Unmarshal(out.Result, &d) != nil {
		t.Fatalf("tasks/get: %s", raw)
	}
	return d
}

// awaitTask polls task id until until(d) holds, and returns it.
func awaitTask(t *testing.T, r *rig, id string, until func(detailed) bool) detailed {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		d := getTask(t, r, id)
		if until(d) {
			return d
		}
		if time.Now().After(deadline) {
			t.Fatalf("task %s: still %s (%v) after 20 s", id, d.Status, d.InputRequests)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// isAck reports whether out is the empty acknowledgement of tasks/update
// ({"resultType":"complete"}, _meta aside).
func isAck(out rpcOut) bool {
	var m map[string]json.RawMessage
	if out.Error != nil || json.Unmarshal(out.Result, &m) != nil {
		return false
	}
	delete(m, "_meta")
	return len(m) == 1 && string(m["resultType"]) == `"complete"`
}

// ended holds for a task in a terminal status.
func ended(d detailed) bool {
	return d.Status == "completed" || d.Status == "failed" || d.Status == "cancelled"
}

// startTask calls tool with args as a 2026-07-28 client with tasksCaps and
// returns the id of the task it must create at once.
func startTask(t *testing.T, r *rig, tool, args string) string {
	t.Helper()
	start := time.Now()
	_, out, raw := post2026(t, r, "tools/call", tool, callReq(10, tool, args, meta2026(tasksCaps)))
	if out.Error != nil {
		t.Fatalf("tools/call %s: %s", tool, raw)
	}
	w := asTask(t, out.Result, "task")
	if took := time.Since(start); took > taskfnsAfter/2 {
		t.Fatalf("tools/call %s: the task took %v: not at once", tool, took)
	}
	return w.TaskID
}

// TestTaskSupportDeclared: tools/list shows each function's
// execution.taskSupport; a required one is a task at once for a client
// that takes tasks and refused for one that does not (2026-07-28: -32021
// naming the extension; 2025-11-25: -32601); a forbidden one is answered
// plainly even when the client takes tasks, and a core task asked of it
// is refused.
func TestTaskSupportDeclared(t *testing.T) {
	r := newTaskfnsRig(t)

	_, out, raw := post2026(t, r, "tools/list", "", `{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{`+meta2026(`{}`)+`}}`)
	var list struct {
		Tools []struct {
			Name      string `json:"name"`
			Execution *struct {
				TaskSupport string `json:"taskSupport"`
			} `json:"execution"`
		} `json:"tools"`
	}
	if out.Error != nil || json.Unmarshal(out.Result, &list) != nil {
		t.Fatalf("tools/list: %s", raw)
	}
	want := map[string]string{"must": "required", "never": "forbidden", "ask": "required", "broken": "required"}
	for _, tl := range list.Tools {
		if ts, ok := want[tl.Name]; ok && (tl.Execution == nil || tl.Execution.TaskSupport != ts) {
			t.Errorf("tools/list: %s without execution.taskSupport %q: %s", tl.Name, ts, raw)
		}
		delete(want, tl.Name)
	}
	if len(want) > 0 {
		t.Errorf("tools/list lacks %v: %s", want, raw)
	}

	status, out, raw := post2026(t, r, "tools/call", "must", callReq(2, "must", `{}`, meta2026(`{}`)))
	var data struct {
		RequiredCapabilities struct {
			Extensions map[string]json.RawMessage `json:"extensions"`
		} `json:"requiredCapabilities"`
	}
	if out.Error == nil || out.Error.Code != -32021 || json.Unmarshal(out.Error.Data, &data) != nil || data.RequiredCapabilities.Extensions["io.modelcontextprotocol/tasks"] == nil {
		t.Errorf("required, 2026-07-28 without the extension: HTTP %d %s, want -32021 requiring the extension", status, raw)
	}
	if _, out, raw := mcpRaw(t, r.url+mcpapi.Path, apiKey, callReq(3, "must", `{}`, ""), v25); out.Error == nil || out.Error.Code != -32601 {
		t.Errorf("required, 2025-11-25 without a task: %s, want -32601", raw)
	}

	id := startTask(t, r, "must", `{}`)
	if d := awaitTask(t, r, id, ended); d.Status != "completed" || !strings.Contains(string(d.Result), `"text":"done"`) {
		t.Errorf("required task: %s %s, want completed with done", d.Status, d.Result)
	}

	if _, out, raw := post2026(t, r, "tools/call", "never", callReq(4, "never", `{}`, meta2026(tasksCaps))); out.Error != nil || strings.Contains(raw, "taskId") || !strings.Contains(raw, `"text":"done"`) {
		t.Errorf("forbidden, the extension declared: %s, want the plain result", raw)
	}
	coreTask := `{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"never","arguments":{},"task":{"ttl":60000}}}`
	if _, out, raw := mcpRaw(t, r.url+mcpapi.Path, apiKey, coreTask, v25); out.Error == nil || out.Error.Code != -32601 {
		t.Errorf("forbidden, a core task asked: %s, want -32601", raw)
	}
}

// TestTaskProtocolError: a function's pluginsdk.ProtocolError ends its
// task failed with that JSON-RPC error, and no result.
func TestTaskProtocolError(t *testing.T) {
	r := newTaskfnsRig(t)
	d := awaitTask(t, r, startTask(t, r, "broken", `{}`), ended)
	var e struct {
		Code    int    `json:"code"`
		Message string `json:"message"`
	}
	if d.Status != "failed" || d.Result != nil || json.Unmarshal(d.Error, &e) != nil || e.Code != -32603 || e.Message != "broken on purpose" {
		t.Errorf("task of broken: %s error %s result %s, want failed with -32603 broken on purpose", d.Status, d.Error, d.Result)
	}
}

// TestTaskInputRequired: a function's elicitation/create during its task
// makes the task input_required with the request under inputRequests;
// tasks/update answers it (a response that is not an object: -32602; an
// unknown key: ignored), the task then completes with the answer. Two
// requests at once wait together, and answering one leaves the other.
func TestTaskInputRequired(t *testing.T) {
	r := newTaskfnsRig(t)
	waiting := func(n int) func(detailed) bool {
		return func(d detailed) bool { return ended(d) || d.Status == "input_required" && len(d.InputRequests) == n }
	}
	update := func(id, responses string) (rpcOut, string) {
		_, out, raw := post2026(t, r, "tasks/update", id, fmt.Sprintf(`{"jsonrpc":"2.0","id":30,"method":"tasks/update","params":{"taskId":%q,"inputResponses":%s,%s}}`, id, responses, meta2026(tasksCaps)))
		return out, raw
	}

	id := startTask(t, r, "ask", `{}`)
	d := awaitTask(t, r, id, waiting(1))
	var key string
	for k, ir := range d.InputRequests {
		key = k
		if ir.Method != "elicitation/create" || !strings.Contains(string(ir.Params), `"message":"Your name?"`) {
			t.Errorf("input request %s: %s %s", k, ir.Method, ir.Params)
		}
	}
	if d.Status != "input_required" {
		t.Fatalf("task of ask: %s, want input_required", d.Status)
	}
	if out, raw := update(id, fmt.Sprintf(`{%q:"yes"}`, key)); out.Error == nil || out.Error.Code != -32602 {
		t.Errorf("tasks/update with a string response: %s, want -32602", raw)
	}
	if out, raw := update(id, `{"nosuchkey":{"action":"accept"}}`); !isAck(out) {
		t.Errorf("tasks/update of an unknown key: %s, want the ack", raw)
	}
	if d := getTask(t, r, id); d.Status != "input_required" {
		t.Errorf("after an unknown key: %s, want input_required still", d.Status)
	}
	if out, raw := update(id, fmt.Sprintf(`{%q:{"action":"accept","content":{"name":"ann"}}}`, key)); !isAck(out) {
		t.Fatalf("tasks/update: %s, want the ack", raw)
	}
	if d := awaitTask(t, r, id, ended); d.Status != "completed" || !strings.Contains(string(d.Result), "hello ann") {
		t.Errorf("task of ask after the answer: %s %s, want completed with hello ann", d.Status, d.Result)
	}

	id = startTask(t, r, "ask", `{"twice":true}`)
	d = awaitTask(t, r, id, waiting(2))
	if d.Status != "input_required" {
		t.Fatalf("task of ask twice: %s, want input_required with two requests", d.Status)
	}
	var keys []string
	for k := range d.InputRequests {
		keys = append(keys, k)
	}
	if out, raw := update(id, fmt.Sprintf(`{%q:{"action":"accept","content":{"name":"bo"}}}`, keys[0])); out.Error != nil {
		t.Fatalf("tasks/update of one: %s", raw)
	}
	if d := getTask(t, r, id); d.Status != "input_required" || len(d.InputRequests) != 1 || d.InputRequests[keys[1]].Method == "" {
		t.Errorf("after one answer: %s %v, want input_required with %s alone", d.Status, d.InputRequests, keys[1])
	}
	if out, raw := update(id, fmt.Sprintf(`{%q:{"action":"accept","content":{"name":"cy"}}}`, keys[1])); out.Error != nil {
		t.Fatalf("tasks/update of the other: %s", raw)
	}
	if d := awaitTask(t, r, id, ended); d.Status != "completed" || !strings.Contains(string(d.Result), "bo") || !strings.Contains(string(d.Result), "cy") {
		t.Errorf("task of ask twice after both answers: %s %s", d.Status, d.Result)
	}
}
