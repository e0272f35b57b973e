package mcpadapter

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/opentool-host/opentool-host/host/tasks"
	"github.com/opentool-host/opentool-host/host/tasks/mcptasks"
	"github.com/opentool-host/opentool-host/pluginsdk"
)

// A tool the server marks execution.taskSupport "required" (MCP
// 2025-11-25, Tool) is called as a task of the MCP Tasks extension
// (io.modelcontextprotocol/tasks,
// https://github.com/modelcontextprotocol/ext-tasks; package mcptasks
// has its wire shapes), so that callers of the host call it like any
// other tool and wait for its result:
//
//	step                        the adapter
//	tools/list                  reads execution.taskSupport from the raw result
//	                            (raw.go: the SDK's Tool has no such member);
//	                            "required" on a server that does not declare
//	                            capabilities.extensions["io.modelcontextprotocol/
//	                            tasks"] in initialize: the tool is refused (the
//	                            document's refused list; /health shows the
//	                            plugin degraded, with the reason); "optional",
//	                            "forbidden" or none: plain tools/call
//	tools/call                  with the opt-in in its _meta ("Capability
//	                            Negotiation"): _meta["io.modelcontextprotocol/
//	                            clientCapabilities"] = {"extensions":{"io.
//	                            modelcontextprotocol/tasks":{}}}. The caller's
//	                            own per-request capabilities never reach the
//	                            server (relay.begin): they are its client's, not
//	                            the adapter's. A CallToolResult answer is the
//	                            result; a CreateTaskResult (resultType "task",
//	                            read raw) starts polling
//	tasks/get                   after pollIntervalMs of the last answer (1 s when
//	                            the server gives none; bounded to 10 ms..30 s),
//	                            until the task ends ("Task Polling"): completed:
//	                            its result is the call's result, as a plain
//	                            call's (isError included); failed: its JSON-RPC
//	                            error is the call's (-32602: 400, else 500);
//	                            cancelled: 500 with its statusMessage;
//	                            input_required: tasks/cancel, then 500 (the
//	                            host does not answer inputRequests)
//	the caller cancels          tasks/cancel ("Task Cancellation"; never
//	                            notifications/cancelled, which the section
//	                            forbids for a task), within 5 s, then 500
//	a plain tools/call answered the same call again with the opt-in: the server
//	-32021 naming the extension said it serves it only as a task ("Capability
//	                            Negotiation"), which a tool need not be marked for
//
// Over streamable HTTP, tasks/get and tasks/cancel carry the routing
// headers Mcp-Method and Mcp-Name (the taskId; "Streamable HTTP: Routing
// Headers"). The host's call timeout bounds the whole call, as any
// call's.

// Polling bounds (extension, "Task Polling": clients SHOULD respect
// pollIntervalMs).
const (
	// defaultPollInterval is the interval when the server suggests none.
	defaultPollInterval = time.Second
	// minPollInterval and maxPollInterval bound the server's suggestion:
	// a server cannot make the adapter spin, nor wait for ever.
	minPollInterval = 10 * time.Millisecond
	maxPollInterval = 30 * time.Second
)

// cancelTimeout bounds a tasks/cancel sent after the caller gave up.
const cancelTimeout = 5 * time.Second

// routeKey is the context key of a taskRoute.
type routeKey struct{}

// taskRoute is the routing headers of a tasks/* request over streamable
// HTTP (extension, "Streamable HTTP: Routing Headers"): Mcp-Method is
// method, Mcp-Name the task id. headers sets them.
type taskRoute struct{ method, taskID string }

// addTaskMethods registers the extension's tasks/get and tasks/cancel as
// custom methods of c: the SDK knows nothing of the extension.
func addTaskMethods(c *mcp.Client) {
	for _, err := range []error{
		mcp.AddSendingCustomMethod[*mcptasks.TaskParams, *mcptasks.TaskResult](c, mcptasks.MethodGet),
		mcp.AddSendingCustomMethod[*mcptasks.TaskParams, *mcptasks.AckResult](c, mcptasks.MethodCancel),
		mcp.AddSendingCustomMethod[*mcptasks.TaskParams, *mcp.CallToolResult](c, mcptasks.MethodResult), // core (coretasks.go)
	} {
		if err != nil {
			panic(err) // only for a standard method's name: a bug here
		}
	}
}

// taskRequest sends method (tasks/get or tasks/cancel) for task id with
// the opt-in (the server answers -32021 without it) and the routing
// headers. Errors are the SDK's.
func taskRequest[R mcp.Result](ctx context.Context, cs *mcp.ClientSession, method, id string) (R, error) {
	ctx = context.WithValue(ctx, routeKey{}, taskRoute{method: method, taskID: id})
	p := &mcptasks.TaskParams{ParamsBase: mcp.ParamsBase{Meta: mcptasks.OptIn(nil)}, TaskID: id}
	return mcp.CallCustomMethod[*mcptasks.TaskParams, R](ctx, cs, method, p)
}

// createdTask returns the task of raw, a tools/call result, when it is a
// CreateTaskResult (resultType "task" with a taskId); else nil.
func createdTask(raw json.RawMessage) *mcptasks.TaskResult {
	var t mcptasks.TaskResult
	if json.Unmarshal(raw, &t) != nil || t.ResultType != mcptasks.ResultTypeTask || t.TaskID == "" {
		return nil
	}
	return &t
}

// callAsTask sends tools/call of MCP tool tool with params, opted in to
// the extension, and returns the result: the server's CallToolResult
// when it answers with one, else that of the task it created, polled to
// its end (awaitTask). Errors (*pluginsdk.Error): as CallJSON's; 500 for
// a task that failed (400 for its -32602), was cancelled, asked for
// input, or could not be polled, and when ctx ends (tasks/cancel is sent).
func (a *Adapter) callAsTask(ctx context.Context, tool string, params *mcp.CallToolParams) (*mcp.CallToolResult, error) {
	p := *params
	p.Meta = mcptasks.OptIn(params.Meta)
	var t *mcptasks.TaskResult
	take := func(raw json.RawMessage) string {
		if t = createdTask(raw); t != nil {
			return t.TaskID
		}
		return ""
	}
	res, id, err := a.sendTaskCall(ctx, ctx, tool, &p, take, a.cancelTask)
	switch {
	case err != nil:
		return nil, err
	case id != "":
		return a.awaitTask(ctx, tool, t)
	}
	if b, _ := json.Marshal(res); createdTask(b) != nil { // the SDK kept resultType "task", raw.go missed it
		return nil, pluginsdk.ToolFailure("MCP server %q: tool %q: answered with a task whose handle the adapter could not read", a.launch.Name, tool)
	}
	return res, nil
}

// sendTaskCall sends tools/call params of MCP tool tool with callCtx (ctx
// with what the dialect adds) and returns its result, or the id of the
// task the server answered with instead: take reads a task's id from a
// raw result ("" when it is not a task). A task created as the call
// failed (ctx ended) is cancelled with cancel. Errors (*pluginsdk.Error):
// as CallJSON's, and the caller's end.
func (a *Adapter) sendTaskCall(ctx, callCtx context.Context, tool string, params *mcp.CallToolParams, take func(json.RawMessage) string, cancel func(ctx context.Context, tool, id string)) (*mcp.CallToolResult, string, error) {
	var (
		mu        sync.Mutex
		created   string
		abandoned bool
	)
	sink := func(raw json.RawMessage) {
		id := take(raw)
		if id == "" {
			return
		}
		mu.Lock()
		defer mu.Unlock()
		if abandoned { // the call was given up as the task was created
			go cancel(ctx, tool, id)
			return
		}
		created = id
	}
	res, err := a.taskSession(ctx).CallTool(withRawResult(callCtx, sink), params)
	mu.Lock()
	id := created
	abandoned = err != nil
	mu.Unlock()
	switch {
	case err != nil && id != "": // the task's handle came as the call failed (ctx ended)
		cancel(ctx, tool, id)
		if ctx.Err() != nil {
			return nil, "", a.taskCancelled(ctx, tool, id)
		}
		return nil, "", callError(ctx, a.launch.Name, tool, err)
	case err != nil:
		return nil, "", callError(ctx, a.launch.Name, tool, err)
	}
	return res, id, nil
}

// awaitTask polls task t (tasks/get, after each answer's pollIntervalMs)
// until it ends, and returns its result. When ctx ends first it sends
// tasks/cancel. Errors: as callAsTask's.
func (a *Adapter) awaitTask(ctx context.Context, tool string, t *mcptasks.TaskResult) (*mcp.CallToolResult, error) {
	id := t.TaskID
	for {
		switch t.Status {
		case tasks.Completed:
			var res mcp.CallToolResult
			if err := json.Unmarshal(t.Result, &res); err != nil {
				return nil, pluginsdk.ToolFailure("MCP server %q: tool %q: task %s completed without a CallToolResult: %v", a.launch.Name, tool, id, err)
			}
			return &res, nil
		case tasks.Failed:
			var je jsonrpc.Error
			if err := json.Unmarshal(t.Error, &je); err != nil || je.Code == 0 {
				return nil, pluginsdk.ToolFailure("MCP server %q: tool %q: task %s failed: %s", a.launch.Name, tool, id, t.StatusMessage)
			}
			return nil, callError(ctx, a.launch.Name, tool, &je)
		case tasks.Cancelled:
			return nil, pluginsdk.ToolFailure("MCP server %q: tool %q: the server cancelled task %s: %s", a.launch.Name, tool, id, t.StatusMessage)
		case tasks.InputRequired:
			return nil, a.inputRequired(ctx, tool, id, a.cancelTask)
		}
		if err := a.pollWait(ctx, tool, id, t.PollIntervalMs, nil, a.cancelTask); err != nil {
			return nil, err
		}
		next, err := taskRequest[*mcptasks.TaskResult](ctx, a.taskSession(ctx), mcptasks.MethodGet, id)
		if err := a.getFailed(ctx, tool, id, err, a.cancelTask); err != nil {
			return nil, err
		}
		t = next
	}
}

// inputRequired cancels task id of MCP tool tool, which asked the client
// for input, with cancel (either dialect's) and returns the call's error.
func (a *Adapter) inputRequired(ctx context.Context, tool, id string, cancel func(ctx context.Context, tool, id string)) error {
	cancel(ctx, tool, id)
	return pluginsdk.ToolFailure("MCP server %q: tool %q: task %s asked the client for input (elicitation or sampling), which opentool-host cannot give; the task was cancelled", a.launch.Name, tool, id)
}

// pollWait waits pollInterval(ms) before the next tasks/get of task id,
// or less when wake (nil: none) says the server notified a status; when
// ctx ends first it cancels the task with cancel (either dialect's) and
// returns the caller's error (taskCancelled).
func (a *Adapter) pollWait(ctx context.Context, tool, id string, ms int64, wake <-chan struct{}, cancel func(ctx context.Context, tool, id string)) error {
	wait := time.NewTimer(pollInterval(ms))
	defer wait.Stop()
	select {
	case <-ctx.Done():
		cancel(ctx, tool, id)
		return a.taskCancelled(ctx, tool, id)
	case <-wake:
		return nil
	case <-wait.C:
		return nil
	}
}

// getFailed is the call's error after a tasks/get of task id that
// returned err (nil: none): when ctx ended meanwhile the task is
// cancelled with cancel (either dialect's).
func (a *Adapter) getFailed(ctx context.Context, tool, id string, err error, cancel func(ctx context.Context, tool, id string)) error {
	switch {
	case ctx.Err() != nil:
		cancel(ctx, tool, id)
		return a.taskCancelled(ctx, tool, id)
	case err != nil:
		return pluginsdk.ToolFailure("MCP server %q: tool %q: tasks/get of task %s: %v", a.launch.Name, tool, id, err)
	}
	return nil
}

// pollInterval is the wait before the next tasks/get: the server's
// pollIntervalMs within [minPollInterval, maxPollInterval], or
// defaultPollInterval when it gave none.
func pollInterval(ms int64) time.Duration {
	if ms <= 0 {
		return defaultPollInterval
	}
	return min(max(time.Duration(ms)*time.Millisecond, minPollInterval), maxPollInterval)
}

// cancelTask sends tasks/cancel for task id of MCP tool tool, detached
// from ctx (which has ended: the caller gave up) and bounded by
// cancelTimeout. A failure is logged: cancellation is cooperative
// (extension, "Task Cancellation"), and the server drops the task at its
// TTL anyway.
func (a *Adapter) cancelTask(ctx context.Context, tool, id string) {
	cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), cancelTimeout)
	defer cancel()
	if _, err := taskRequest[*mcptasks.AckResult](cctx, a.taskSession(ctx), mcptasks.MethodCancel, id); err != nil {
		a.log.Warn("tasks/cancel failed", "server", a.launch.Name, "tool", tool, "task", id, "error", err)
	}
}

// taskCancelled is the error of a task call whose ctx ended: tasks/cancel
// was sent for task id.
func (a *Adapter) taskCancelled(ctx context.Context, tool, id string) error {
	return pluginsdk.ToolFailure("MCP server %q: tool %q: %v (tasks/cancel sent for task %s)", a.launch.Name, tool, context.Cause(ctx), id)
}

// taskRefusal is why MCP tool name, marked execution.taskSupport
// "required", is not served by a server that declares neither the
// extension nor core tasks; "" when it is served.
func taskRefusal(name string, info serverInfo) string {
	if info.taskSupport[name] != mcptasks.TaskSupportRequired || info.tasks || info.coreTasks {
		return ""
	}
	return fmt.Sprintf("MCP tool %q: execution.taskSupport is %q but the server declares neither the %s extension (capabilities.extensions in initialize) nor core tasks for tools/call (capabilities.tasks.requests.tools.call, MCP %s), through which alone opentool-host calls a tool as a task",
		name, mcptasks.TaskSupportRequired, mcptasks.Extension, mcptasks.CoreRevision)
}

// taskSessionKey is the context key of the upstream session a task call
// goes to (withTaskSession).
type taskSessionKey struct{}

// withTaskSession returns ctx carrying cs: the upstream session that a
// task call made with ctx, its polls, its result and its cancel go to (the
// client's own session, or the shared one; clients.go).
func withTaskSession(ctx context.Context, cs *mcp.ClientSession) context.Context {
	return context.WithValue(ctx, taskSessionKey{}, cs)
}

// taskSession returns the session withTaskSession put on ctx, else the
// shared session.
func (a *Adapter) taskSession(ctx context.Context) *mcp.ClientSession {
	if cs, ok := ctx.Value(taskSessionKey{}).(*mcp.ClientSession); ok && cs != nil {
		return cs
	}
	cs, err := a.sharedSession(ctx)
	if err != nil {
		return a.sharedNow() // closed: the call fails with the connection's error
	}
	return cs
}
