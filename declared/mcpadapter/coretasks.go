package mcpadapter

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strconv"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/opentool-host/opentool-host/host/tasks"
	"github.com/opentool-host/opentool-host/host/tasks/mcptasks"
	"github.com/opentool-host/opentool-host/pluginsdk"
	"github.com/opentool-host/opentool-host/protocol/mcpmethod"
)

// A tool marked execution.taskSupport "required" on a server that
// declares the core tasks of MCP 2025-11-25 (capabilities.tasks.requests.
// tools.call in initialize, read raw: the SDK's ServerCapabilities has no
// tasks) and not the extension is called as a core task (package
// mcptasks, core.go); a server that declares the extension is called
// through it (tasks.go):
//
//	step          the adapter
//	initialize    the raw result's capabilities.tasks (coreTasksDeclared)
//	tools/call    with params.task = {} (the SDK's CallToolParams has no
//	              such member: the connection adds it, rawConn.Write and
//	              rawResponses, for a request whose context is
//	              withCoreTask); a CreateTaskResult ({"task":Task}, read
//	              raw) starts polling, a CallToolResult is the result
//	tasks/get     after the Task's pollInterval (pollInterval: 1 s when
//	              absent, bounded to 10 ms..30 s), until the task ends;
//	              input_required: tasks/cancel, then 500 (the host does not
//	              relay the requests a task queues)
//	notifications/ from a command server (stdio; tapTaskStatus): a status
//	tasks/status  of the task awaited wakes the poll at once (an ended
//	              task's result is fetched without waiting out the
//	              interval), and a working one is relayed to the caller
//	              (pluginsdk.Notify with the Task: the host's MCP front end
//	              sends its statusMessage as its own task's status, mcpapi
//	              corenotify.go), the latest only when they come faster
//	              than the caller takes them; for a task of no call, or
//	              from a server over HTTP (the SDK's client reads those
//	              streams), none
//	tasks/result  once it ended: the CallToolResult (completed, failed with
//	              isError), or the JSON-RPC error the call ended with
//	the caller    tasks/cancel, within cancelTimeout, then 500
//	cancels
//
// The host's call timeout bounds the whole call, as any call's.

// coreTaskKey is the context key of a tools/call that asks for a core
// task.
type coreTaskKey struct{}

// withCoreTask returns ctx whose tools/call carries params.task.
func withCoreTask(ctx context.Context) context.Context {
	return context.WithValue(ctx, coreTaskKey{}, true)
}

// wantsCoreTask reports whether a request sent with ctx as method gets
// params.task.
func wantsCoreTask(ctx context.Context, method string) bool {
	on, _ := ctx.Value(coreTaskKey{}).(bool)
	return on && method == mcpmethod.ToolsCall
}

// withTaskParam returns params, a request's params object, with
// "task":{} added; params as they are when they do not decode.
func withTaskParam(params json.RawMessage) json.RawMessage {
	var m map[string]json.RawMessage
	if json.Unmarshal(params, &m) != nil || m == nil {
		return params
	}
	m["task"] = json.RawMessage(`{}`)
	out, err := json.Marshal(m)
	if err != nil {
		return params
	}
	return out
}

// coreTaskRequest adds params.task to r, the body of a streamable HTTP
// POST of one tools/call whose context is withCoreTask.
func coreTaskRequest(r *http.Request) (*http.Request, error) {
	if r.Body == nil || r.Method != http.MethodPost {
		return r, nil
	}
	body, err := io.ReadAll(r.Body)
	_ = r.Body.Close()
	if err != nil {
		return nil, err
	}
	var msg struct {
		Method string          `json:"method"`
		Params json.RawMessage `json:"params"`
	}
	if json.Unmarshal(body, &msg) == nil && wantsCoreTask(r.Context(), msg.Method) {
		var m map[string]json.RawMessage
		if json.Unmarshal(body, &m) == nil {
			m["params"] = withTaskParam(msg.Params)
			if b, err := json.Marshal(m); err == nil {
				body = b
			}
		}
	}
	r = r.Clone(r.Context())
	r.Body, r.ContentLength = io.NopCloser(bytes.NewReader(body)), int64(len(body))
	r.Header.Set("Content-Length", strconv.Itoa(len(body)))
	r.GetBody = func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(body)), nil }
	return r, nil
}

// coreTasksDeclared reports whether raw, an initialize result, declares
// core tasks for tools/call (capabilities.tasks.requests.tools.call).
func coreTasksDeclared(raw json.RawMessage) bool {
	var ir struct {
		Capabilities struct {
			Tasks struct {
				Requests struct {
					Tools struct {
						Call json.RawMessage `json:"call"`
					} `json:"tools"`
				} `json:"requests"`
			} `json:"tasks"`
		} `json:"capabilities"`
	}
	return json.Unmarshal(raw, &ir) == nil && len(ir.Capabilities.Tasks.Requests.Tools.Call) > 0 &&
		ir.Capabilities.Tasks.Requests.Tools.Call[0] == '{'
}

// speaksCoreOnly reports whether the server declares core tasks and not
// the extension: its "required" tools are called as core tasks.
func (a *Adapter) speaksCoreOnly() bool {
	if !a.coreTasks.Load() {
		return false
	}
	ir := a.sharedNow().InitializeResult()
	if ir == nil || ir.Capabilities == nil {
		return true
	}
	_, ext := ir.Capabilities.Extensions[mcptasks.Extension]
	return !ext
}

// createdCoreTask returns the task of raw, a tools/call result, when it
// is a CreateTaskResult ({"task":{"taskId":...}}); else nil.
func createdCoreTask(raw json.RawMessage) *mcptasks.Task {
	var r struct {
		Task *mcptasks.Task `json:"task"`
	}
	if json.Unmarshal(raw, &r) != nil || r.Task == nil || r.Task.TaskID == "" {
		return nil
	}
	return r.Task
}

// callAsCoreTask sends tools/call of MCP tool tool with params and
// params.task, and returns the result: the server's CallToolResult when
// it answers with one, else that of the task it created, polled to its
// end (awaitCoreTask), its statuses told to the caller of c. Errors: as
// callAsTask's.
func (a *Adapter) callAsCoreTask(ctx context.Context, c *relayCall, tool string, params *mcp.CallToolParams) (*mcp.CallToolResult, error) {
	var t *mcptasks.Task
	take := func(raw json.RawMessage) string {
		if t = createdCoreTask(raw); t != nil {
			return t.TaskID
		}
		return ""
	}
	res, id, err := a.sendTaskCall(ctx, withCoreTask(ctx), tool, params, take, a.cancelCoreTask)
	switch {
	case err != nil:
		return nil, err
	case id != "":
		return a.awaitCoreTask(ctx, c, tool, t)
	}
	return res, nil
}

// callTasked calls MCP tool tool, marked execution.taskSupport
// "required", as a task in the dialect the server speaks: the core's
// when it declares only core tasks, else the extension's; c is the
// call's relayCall.
func (a *Adapter) callTasked(ctx context.Context, c *relayCall, tool string, params *mcp.CallToolParams) (*mcp.CallToolResult, error) {
	if a.speaksCoreOnly() {
		return a.callAsCoreTask(ctx, c, tool, params)
	}
	return a.callAsTask(ctx, tool, params)
}

// coreGet sends tasks/get for task id and returns the Task, read raw
// (the extension's TaskResult the SDK decodes into has other names).
func (a *Adapter) coreGet(ctx context.Context, id string) (*mcptasks.Task, error) {
	var got mcptasks.Task
	var decodeErr error
	sink := func(raw json.RawMessage) { decodeErr = json.Unmarshal(raw, &got) }
	p := &mcptasks.TaskParams{TaskID: id}
	if _, err := mcp.CallCustomMethod[*mcptasks.TaskParams, *mcptasks.TaskResult](withRawResult(ctx, sink), a.taskSession(ctx), mcptasks.MethodGet, p); err != nil {
		return nil, err
	}
	if decodeErr != nil || got.TaskID != id {
		return nil, pluginsdk.ToolFailure("MCP server %q: tasks/get of task %s answered no task of that id (%v)", a.launch.Name, id, decodeErr)
	}
	return &got, nil
}

// awaitCoreTask polls task t (tasks/get, after each answer's
// pollInterval, or at once when the server notifies its status) until it
// ends, then fetches its outcome (tasks/result). When ctx ends first it
// sends tasks/cancel. The server's working statuses are told to the
// caller of c. Errors: as callAsTask's.
func (a *Adapter) awaitCoreTask(ctx context.Context, c *relayCall, tool string, t *mcptasks.Task) (*mcp.CallToolResult, error) {
	id := t.TaskID
	w := a.watches.watch(c, id)
	defer a.watches.unwatch(id, w)
	for !t.Status.Terminal() {
		if t.Status == tasks.InputRequired {
			return nil, a.inputRequired(ctx, tool, id, a.cancelCoreTask)
		}
		if err := a.pollWait(ctx, tool, id, t.PollInterval, w.wake, a.cancelCoreTask); err != nil {
			return nil, err
		}
		next, err := a.coreGet(ctx, id)
		if err := a.getFailed(ctx, tool, id, err, a.cancelCoreTask); err != nil {
			return nil, err
		}
		t = next
	}
	if t.Status == tasks.Cancelled {
		return nil, pluginsdk.ToolFailure("MCP server %q: tool %q: the server cancelled task %s: %s", a.launch.Name, tool, id, t.StatusMessage)
	}
	p := &mcptasks.TaskParams{TaskID: id}
	res, err := mcp.CallCustomMethod[*mcptasks.TaskParams, *mcp.CallToolResult](ctx, a.taskSession(ctx), mcptasks.MethodResult, p)
	if err != nil {
		return nil, callError(ctx, a.launch.Name, tool, err)
	}
	return res, nil
}

// cancelCoreTask sends the core tasks/cancel for task id of MCP tool
// tool, detached from ctx and bounded by cancelTimeout; the outcome is
// logged (a failure as a warning: cancellation is cooperative).
func (a *Adapter) cancelCoreTask(ctx context.Context, tool, id string) {
	cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), cancelTimeout)
	defer cancel()
	p := &mcptasks.TaskParams{TaskID: id}
	if _, err := mcp.CallCustomMethod[*mcptasks.TaskParams, *mcptasks.AckResult](cctx, a.taskSession(ctx), mcptasks.MethodCancel, p); err != nil {
		a.log.Warn("tasks/cancel failed", "server", a.launch.Name, "tool", tool, "task", id, "error", err)
		return
	}
	a.log.Debug("core task cancelled on the server", "server", a.launch.Name, "tool", tool, "task", id)
}

// taskWatches are the core tasks the adapter awaits, by the server's
// task id, for the server's notifications/tasks/status.
type taskWatches struct {
	mu sync.Mutex
	by map[string]*taskWatch
}

// taskWatch is one awaited core task.
type taskWatch struct {
	c    *relayCall    // the call's: its caller is told
	wake chan struct{} // a status came (buffer 1): poll now
	kick chan struct{} // a status to relay (buffer 1)
	done chan struct{} // closed when the await ends
	gone chan struct{} // closed when relay has returned

	mu      sync.Mutex
	pending *mcptasks.Task // the latest status not relayed yet
}

// watch registers core task id, awaited by call c, and starts its
// relay; unwatch ends both.
func (ws *taskWatches) watch(c *relayCall, id string) *taskWatch {
	w := &taskWatch{c: c, wake: make(chan struct{}, 1), kick: make(chan struct{}, 1), done: make(chan struct{}), gone: make(chan struct{})}
	ws.mu.Lock()
	if ws.by == nil {
		ws.by = map[string]*taskWatch{}
	}
	ws.by[id] = w
	ws.mu.Unlock()
	go w.relay()
	return w
}

// unwatch ends w, the watch of task id, once a status being relayed has
// been told: the caller hears of it before the call's end.
func (ws *taskWatches) unwatch(id string, w *taskWatch) {
	ws.mu.Lock()
	if ws.by[id] == w {
		delete(ws.by, id)
	}
	ws.mu.Unlock()
	close(w.done)
	<-w.gone
}

// status hands t, a status the server notified, to the watch of its
// task: the poll wakes, a working status is queued for the caller (the
// latest replaces one not yet relayed). It runs on the goroutine reading
// the connection and does not block.
func (ws *taskWatches) status(t *mcptasks.Task) {
	ws.mu.Lock()
	w := ws.by[t.TaskID]
	ws.mu.Unlock()
	if w == nil {
		return
	}
	select {
	case w.wake <- struct{}{}:
	default:
	}
	if t.Status != tasks.Working {
		return // an end is the call's own; input_required ends it (inputRequired)
	}
	w.mu.Lock()
	w.pending = t
	w.mu.Unlock()
	select {
	case w.kick <- struct{}{}:
	default:
	}
}

// relay tells the caller each queued status until the await ends (the
// host drops one that repeats the last: mcpapi, relayStatus).
func (w *taskWatch) relay() {
	defer close(w.gone)
	for {
		select {
		case <-w.done:
			return
		case <-w.kick:
		}
		w.mu.Lock()
		t := w.pending
		w.pending = nil
		w.mu.Unlock()
		if t != nil {
			w.c.notify(mcptasks.MethodStatusNote, t)
		}
	}
}

// tapTaskStatus returns next (a relay's tap) that first takes the
// server's notifications/tasks/status for the awaited tasks (taskWatches).
func (a *Adapter) tapTaskStatus(next func(jsonrpc.Message) bool) func(jsonrpc.Message) bool {
	return func(msg jsonrpc.Message) bool {
		req, ok := msg.(*jsonrpc.Request)
		if !ok || req.IsCall() || req.Method != mcptasks.MethodStatusNote {
			return next(msg)
		}
		var t mcptasks.Task
		if json.Unmarshal(req.Params, &t) == nil && t.TaskID != "" {
			a.watches.status(&t)
		}
		return true
	}
}

// any reports whether a core task is awaited.
func (ws *taskWatches) any() bool {
	ws.mu.Lock()
	defer ws.mu.Unlock()
	return len(ws.by) > 0
}
