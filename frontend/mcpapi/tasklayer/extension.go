package tasklayer

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/opentool-host/opentool-host/frontend/httpguard"
	"github.com/opentool-host/opentool-host/frontend/keyview"
	"github.com/opentool-host/opentool-host/host/access"
	"github.com/opentool-host/opentool-host/host/tasks"
	"github.com/opentool-host/opentool-host/host/tasks/mcptasks"
	"github.com/opentool-host/opentool-host/protocol/mcpmethod"
	"github.com/opentool-host/opentool-host/protocol/opentool"
)

// The MCP Tasks extension (io.modelcontextprotocol/tasks,
// https://github.com/modelcontextprotocol/ext-tasks) on /mcp and stdio: a long tools/call is answered with a task handle that the
// client polls, kept by package tasks so that replicas sharing a task
// store answer for each other's tasks. The SDK knows nothing of tasks:
// the capability is a server extension, tools/call goes through a
// receiving middleware (taskMiddleware, inside the front end's access
// middleware, so the caller's grant is on its context), and tasks/get, tasks/update and
// tasks/cancel are custom methods (mcp.AddReceivingCustomMethod).
//
//	extension section             here
//	Capability Negotiation        initialize and server/discover declare
//	                              capabilities.extensions[mcptasks.Extension];
//	                              a request opts in with
//	                              _meta["io.modelcontextprotocol/clientCapabilities"]
//	                              .extensions[mcptasks.Extension] (mcptasks.Allows), and
//	                              only a request that does gets a task,
//	                              whatever the session declared
//	Task Creation                 a tools/call that opted in and has not ended
//	                              within --task-after (tasks.Manager.StartAfter)
//	                              is answered with a CreateTaskResult
//	                              (resultType "task", taskId, status,
//	                              createdAt, lastUpdatedAt, ttlMs,
//	                              pollIntervalMs) once the task is stored;
//	                              the call goes on in the plugin, detached
//	                              from the request. One that ends sooner is
//	                              answered as without the opt-in; so is a
//	                              call of a tool the key cannot call (the
//	                              usual unknown-tool error)
//	Task Polling                  tasks/get: the DetailedTask, resultType
//	                              "complete"; completed carries the
//	                              CallToolResult tools/call would have
//	                              returned (isError results included),
//	                              failed the JSON-RPC error (-32603 when the
//	                              replica running the call died: its lease ran
//	                              out), cancelled its reason
//	Task Cancellation             tasks/cancel: an empty acknowledgement;
//	                              the call is cancelled in the plugin (at
//	                              once on this replica, at the running
//	                              replica's next lease renewal on another)
//	Task Update Requests          a plugin's request to the client during a
//	                              task makes it input_required with the
//	                              request under inputRequests (exec.go);
//	                              tasks/update: acknowledged, its
//	                              inputResponses go to the requests that
//	                              wait, any other key is ignored, as the
//	                              section says. Once the call is a task its
//	                              request is answered: the plugin's progress
//	                              and log messages are dropped
//	Task Status Notifications     notifications/tasks on a subscriptions/listen
//	                              stream whose params.notifications.taskIds
//	                              names tasks of the key and whose _meta opts
//	                              in (listen.go): acknowledged with the
//	                              agreed ids, one notification (the
//	                              DetailedTask of tasks/get) when each ends
//	                              on this replica; -32021 without the opt-in
//	Error Handling                an unknown, expired, malformed or other
//	                              key's or front end's task id: -32602; a
//	                              store that fails: -32603; tasks/* without
//	                              the opt-in in its _meta: -32021 with
//	                              data.requiredCapabilities
//	Security Considerations       ids are 128 random bits (tasks.Record.ID);
//	                              a task exists only for the API key that
//	                              created it; each tasks/* request passes the
//	                              key and rate checks of every request
//
// A plugin's function may require or forbid a task (exec.go). A tool
// that an MCP server behind the host marks execution.taskSupport
// "required" is called as a task by its adapter (package mcpadapter,
// tasks.go and coretasks.go), so a plain tools/call of it is answered
// too; it is listed with taskSupport as the server wrote it (package
// mcpapi/overlay), so that a 2025-11-25 client may ask for a core
// task (core.go).
// notifications/tasks goes around the SDK, onto the listen stream's
// HTTP writer: the MCP Go SDK v1.8.0 gives a server no way to send a
// notification it does not define (ServerSession sends only its own
// kinds), nor a place for taskIds in subscriptions/listen.

// FrontEnd is the name of this front end in task records
// (tasks.Origin.FrontEnd): tasks/get answers only for tasks started here
// (another front end's result has another shape).
const FrontEnd = "mcp"

// taskMiddleware runs a tools/call that opted in as a task when it
// outlives --task-after; every other request passes as it is.
func (l *Layer) taskMiddleware(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		if method != mcpmethod.ToolsCall {
			return next(ctx, method, req)
		}
		cr, ok := req.(*mcp.CallToolRequest)
		if !ok || cr.Params == nil || !l.callable(ctx, cr.Params.Name) {
			return next(ctx, method, req)
		}
		ts := l.taskSupport(cr.Params.Name) // exec.go
		switch {
		case wantsCoreTask(cr) && ts == opentool.TaskSupportForbidden:
			return nil, forbidsTask(cr.Params.Name)
		case wantsCoreTask(cr):
			return l.callAsCoreTask(ctx, next, method, cr)
		case !mcptasks.Allows(cr.Params.Meta) && ts == opentool.TaskSupportRequired:
			return nil, needsTask(cr, cr.Params.Name)
		case !mcptasks.Allows(cr.Params.Meta), ts == opentool.TaskSupportForbidden:
			return next(ctx, method, req)
		}
		return l.callAsTask(ctx, next, method, cr, ts == opentool.TaskSupportRequired)
	}
}

// callable reports whether the caller of ctx may call tool name as
// served now; a call of any other is answered plainly (unknown tool).
func (l *Layer) callable(ctx context.Context, name string) bool {
	fi, ok := l.cfg.Functions.Function(name)
	return ok && keyview.MayCall(ctx, fi)
}

// callAsTask runs tools/call req through next (the SDK's call path and
// the front end's tool handler) under tasks.Manager.StartAfter: answered as is when it
// ends within --task-after, else with a CreateTaskResult while it goes
// on; a call whose function requires a task (required) is one at once. Until it becomes a task, the request's end (the client gone, its
// notifications/cancelled) cancels it as any call; after, only
// tasks/cancel, the key's revocation or the host's shutdown do.
func (l *Layer) callAsTask(ctx context.Context, next mcp.MethodHandler, method string, req *mcp.CallToolRequest, required bool) (mcp.Result, error) {
	ctx, stop := httpguard.WithRequestCancel(ctx) // a stateless POST's end ends the call until it is a task
	defer stop()
	ta := &taskAsk{required: required, decided: make(chan struct{})}
	ctx = context.WithValue(ctx, taskAskKey{}, ta) // the plugin's requests wait in the task (exec.go)
	owner := access.GrantFrom(ctx).Name()
	name := req.Params.Name
	origin := tasks.Origin{FrontEnd: FrontEnd, Function: name}
	if required {
		return l.callAsRequiredTask(ctx, ta, owner, origin, l.taskRun(next, method, req, nil))
	}
	var (
		plain    mcp.Result // what next returned, for a call answered as is
		plainErr error
	)
	run := l.taskRun(next, method, req, func(res mcp.Result, err error) { plain, plainErr = res, err })
	_, rec, _ := l.cfg.Tasks.StartAfter(ctx, owner, origin, l.cfg.Tasks.After(), run)
	ta.decide(rec)
	if rec == nil {
		return plain, plainErr // run ended: StartAfter waited for it
	}
	l.cfg.Logger.Debug("MCP call became a task", "tool", name, "task", rec.ID, "key", owner)
	return &mcptasks.TaskResult{ResultType: mcptasks.ResultTypeTask, Detailed: rec.Detailed()}, nil
}

// taskRun is tools/call req run through next (the SDK's call path and
// the front end's tool handler) as a task's call (either dialect's): the request's end
// does not end it (httpguard.WithRequestCancel), the key's revocation does. seen,
// when not nil, is given what next returned.
func (l *Layer) taskRun(next mcp.MethodHandler, method string, req *mcp.CallToolRequest, seen func(mcp.Result, error)) tasks.Run {
	return func(ctx context.Context) (json.RawMessage, error) {
		ctx = httpguard.Unbind(ctx)
		ctx, unbind := access.UntilRevoked(ctx)
		defer unbind()
		res, err := next(ctx, method, req)
		if seen != nil {
			seen(res, err)
		}
		switch {
		case ctx.Err() != nil:
			return nil, context.Cause(ctx)
		case err != nil:
			return nil, taskError(err)
		}
		return json.Marshal(res)
	}
}

// taskError is a call's error as the task's JSON-RPC error (extension,
// "Task Execution Errors"): the SDK's own JSON-RPC errors (unknown tool)
// as they are, any other -32603 with its text.
func taskError(err error) error {
	var je *jsonrpc.Error
	if errors.As(err, &je) {
		return &tasks.RPCError{Code: int(je.Code), Message: je.Message, Data: je.Data}
	}
	return &tasks.RPCError{Code: int(jsonrpc.CodeInternalError), Message: err.Error()}
}

// lookupTask returns task taskID as the caller of ctx may see it, or the
// JSON-RPC error to answer method with (taskError): -32021 when meta does
// not declare the extension.
func (l *Layer) lookupTask(ctx context.Context, method string, taskID string, meta map[string]any) (tasks.Record, error) {
	if !mcptasks.Allows(meta) {
		return tasks.Record{}, mcptasks.MissingCapability(method)
	}
	if !tasks.ValidID(taskID) {
		return tasks.Record{}, l.storeError(method, taskID, tasks.ErrNotFound)
	}
	rec, err := l.cfg.Tasks.Get(ctx, access.GrantFrom(ctx).Name(), taskID)
	if err == nil && rec.Origin.FrontEnd != FrontEnd {
		err = tasks.ErrNotFound // another front end's: its result has another shape
	}
	if err != nil {
		return tasks.Record{}, l.storeError(method, taskID, err)
	}
	return rec, nil
}

// storeError is the JSON-RPC error of a task look-up that failed with
// err (extension, "Error Handling"): -32602 for a task the key cannot
// see (absent, expired, another key's or front end's, not an id), -32603
// for a store that failed (logged).
func (l *Layer) storeError(method, taskID string, err error) error {
	if errors.Is(err, tasks.ErrNotFound) {
		return &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams,
			Message: fmt.Sprintf("Failed to retrieve task: Task not found: %q (no such task for this API key, or it expired)", taskID)}
	}
	l.cfg.Logger.Error("task store failed", "method", method, "task", taskID, "error", err)
	return &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: "internal error: the task store failed; try again"}
}

// tasksGet serves tasks/get (extension, "Task Polling").
func (l *Layer) tasksGet(ctx context.Context, _ *mcp.ServerSession, p *mcptasks.TaskParams) (*mcptasks.TaskResult, error) {
	if p == nil {
		p = &mcptasks.TaskParams{}
	}
	rec, err := l.lookupTask(ctx, mcptasks.MethodGet, p.TaskID, p.Meta)
	if err != nil {
		return nil, err
	}
	return &mcptasks.TaskResult{ResultType: mcptasks.ResultTypeComplete, Detailed: rec.Detailed()}, nil
}

// tasksCancel serves tasks/cancel (extension, "Task Cancellation"):
// tasks.Manager.Cancel, cooperative and eventually consistent; an ended
// task is left as it is.
func (l *Layer) tasksCancel(ctx context.Context, _ *mcp.ServerSession, p *mcptasks.TaskParams) (*mcptasks.AckResult, error) {
	if p == nil {
		p = &mcptasks.TaskParams{}
	}
	rec, err := l.lookupTask(ctx, mcptasks.MethodCancel, p.TaskID, p.Meta)
	if err != nil {
		return nil, err
	}
	if !rec.Status.Terminal() {
		if err := l.cfg.Tasks.Cancel(ctx, rec.Owner, rec.ID); err != nil {
			return nil, l.storeError(mcptasks.MethodCancel, rec.ID, err)
		}
		l.cfg.Logger.Debug("MCP task cancel requested", "task", rec.ID, "key", rec.Owner)
	}
	return &mcptasks.AckResult{ResultType: mcptasks.ResultTypeComplete}, nil
}

// tasksUpdate serves tasks/update (extension, "Task Update Requests"):
// the responses go to the requests of the task's call that wait
// (exec.go, answerTask); a response to a key no request waits for is
// ignored; the task must exist for the key.
func (l *Layer) tasksUpdate(ctx context.Context, _ *mcp.ServerSession, p *mcptasks.UpdateTaskParams) (*mcptasks.AckResult, error) {
	if p == nil {
		p = &mcptasks.UpdateTaskParams{}
	}
	rec, err := l.lookupTask(ctx, mcptasks.MethodUpdate, p.TaskID, p.Meta)
	if err != nil {
		return nil, err
	}
	if err := l.answerTask(ctx, rec, p.InputResponses); err != nil {
		return nil, err
	}
	return &mcptasks.AckResult{ResultType: mcptasks.ResultTypeComplete}, nil
}
