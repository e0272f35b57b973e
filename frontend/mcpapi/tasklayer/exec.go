package tasklayer

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/opentool-host/opentool-host/host"
	"github.com/opentool-host/opentool-host/host/tasks"
	"github.com/opentool-host/opentool-host/host/tasks/mcptasks"
	"github.com/opentool-host/opentool-host/internal/mcpsession"
	"github.com/opentool-host/opentool-host/protocol/mcpmethod"
	"github.com/opentool-host/opentool-host/protocol/opentool"
)

// What a plugin's function says about tasks (pluginsdk: WithTaskSupport,
// ProtocolError, a request to the client during a task):
//
//	the function                     here
//	execution.taskSupport            listed by tools/list as the tool's
//	(opentool.Function.Execution)    execution.taskSupport (TaskSupport;
//	                                 package mcpapi, tools.go); left out
//	                                 without tasks, where every call is
//	                                 plain
//	"required"                       a call that opts in to the extension is
//	                                 a task at once (no --task-after wait;
//	                                 -32603 when the task cannot be created);
//	                                 a 2025-11-25 core task as asked; a call
//	                                 that can take neither is refused
//	                                 (needsTask): -32021 with
//	                                 data.requiredCapabilities.extensions
//	                                 naming the extension for a 2026-07-28
//	                                 client (SEP-2575, SEP-2663 "Required
//	                                 Capabilities"), -32601 for an older one
//	                                 (2025-11-25 "Tool-Level Negotiation")
//	"forbidden"                      never a task: answered as it ends; a
//	                                 core task asked of it is refused with
//	                                 -32601 (2025-11-25)
//	"optional", none                 a task when it outlives --task-after
//	a tool error whose code is a     the JSON-RPC error of the tools/call
//	JSON-RPC reserved code           (package mcpapi, call.go); a task ends failed
//	(pluginsdk.ProtocolError)        with it. Any other tool error is a
//	                                 result with isError; a task ends
//	                                 completed with it
//	a request to the client          during a call that is an extension's
//	(elicitation/create,             task: the task is input_required,
//	sampling/createMessage,          tasks/get shows the request under
//	roots/list)                      inputRequests (key "input-N": tasks.
//	                                 Manager.Ask), tasks/update's
//	                                 inputResponses answer it (a response
//	                                 must be a JSON object: -32602), the task
//	                                 is working again once none waits; the
//	                                 client's capabilities are checked as for
//	                                 any request (package mcpapi, canAsk).
//	                                 Before the call is a task, and in a
//	                                 core task, the request goes as without
//	                                 tasks (package mcpapi, exchange.go)
//
// A hostile plugin gains nothing by these: its protocol error answers
// only its own call; its requests in a task wait in the task's record,
// at most tasks.MaxInputRequests at once, each checked as the request it
// says it is (by the front end, before Ask), and only the API key that owns the task
// sees or answers them.

// taskSupport is what function name as served declares of tasks
// (TaskSupport); "" for a tool not served.
func (l *Layer) taskSupport(name string) string {
	fi, ok := l.cfg.Functions.Function(name)
	if !ok {
		return ""
	}
	return TaskSupport(fi)
}

// TaskSupport is what fi declares of tasks as the task layer honours it
// (opentool.Function.TaskSupport: opentool.TaskSupportRequired,
// TaskSupportOptional, TaskSupportForbidden): "" when it says nothing, or
// it is an MCP server's (whose own taskSupport its adapter honours, and
// tools/list shows as the server wrote it).
func TaskSupport(fi host.FunctionInfo) string {
	if len(fi.Function.MCPTool) > 0 {
		return ""
	}
	return fi.Function.TaskSupport()
}

// needsTask is the error of a tools/call of tool name, whose function
// requires a task, from a client that cannot take one (see above).
func needsTask(req *mcp.CallToolRequest, name string) error {
	if mcpsession.SpeaksSessionless(req.Session) {
		err := mcptasks.MissingCapability(mcpmethod.ToolsCall)
		var je *jsonrpc.Error
		if errors.As(err, &je) {
			je.Message = fmt.Sprintf("Missing required client capability: tool %q must run as a task: declare the %s extension in the request's _meta[%q].extensions", name, mcptasks.Extension, mcptasks.MetaClientCapabilities)
		}
		return err
	}
	return &jsonrpc.Error{Code: jsonrpc.CodeMethodNotFound,
		Message: fmt.Sprintf("tool %q must run as a task: call it with params.task (MCP 2025-11-25 tasks) or declare the %s extension", name, mcptasks.Extension)}
}

// forbidsTask is the error of a core task asked of tool name, whose
// function forbids tasks (2025-11-25 "Tool-Level Negotiation").
func forbidsTask(name string) error {
	return &jsonrpc.Error{Code: jsonrpc.CodeMethodNotFound, Message: fmt.Sprintf("tool %q cannot run as a task (its execution.taskSupport is %q): call it without params.task", name, opentool.TaskSupportForbidden)}
}

// callAsRequiredTask starts run, a tools/call whose function requires a
// task, as task a of owner at once and answers its CreateTaskResult.
// Errors: -32603 when the task cannot be created (the key's task cap,
// the store); the call then does not run.
func (l *Layer) callAsRequiredTask(ctx context.Context, a *taskAsk, owner string, origin tasks.Origin, run tasks.Run) (mcp.Result, error) {
	rec, err := l.cfg.Tasks.StartFrom(ctx, owner, origin, run)
	if err != nil {
		a.decide(nil)
		l.cfg.Logger.Warn("MCP task not created", "tool", origin.Function, "key", owner, "error", err)
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: fmt.Sprintf("the task was not created: %v", err)}
	}
	a.decide(&rec)
	l.cfg.Logger.Debug("MCP call started as a task", "tool", origin.Function, "task", rec.ID, "key", owner)
	return &mcptasks.TaskResult{ResultType: mcptasks.ResultTypeTask, Detailed: rec.Detailed()}, nil
}

// taskAsk is the task a tools/call of the extension may become
// (callAsTask), for the plugin's requests to the client during it: once
// the call is a task they wait in it (input_required) instead of going
// to the client as without tasks.
type taskAsk struct {
	required bool          // the call is a task at once: a request waits for the decision
	decided  chan struct{} // closed once id is set
	id       string        // the task's id; "" when the call was answered as is
}

// taskAskKey is the context key of a call's *taskAsk.
type taskAskKey struct{}

// decide records how the call of a went on: as task rec, or answered as
// is (rec nil).
func (a *taskAsk) decide(rec *tasks.Record) {
	if rec != nil {
		a.id = rec.ID
	}
	close(a.decided)
}

// TaskOf returns the id of the task of the extension the call of ctx
// (the context of a tools/call the layer passed on) is, and true; false
// when it is not (yet) one: a call that may become one later asks its
// client as without tasks meanwhile, one that is a task at once waits for
// its id (or ctx's end).
func TaskOf(ctx context.Context) (string, bool) {
	a, _ := ctx.Value(taskAskKey{}).(*taskAsk)
	if a == nil {
		return "", false
	}
	if a.required {
		select {
		case <-a.decided:
		case <-ctx.Done():
			return "", false
		}
	}
	select {
	case <-a.decided:
		return a.id, a.id != ""
	default:
		return "", false
	}
}

// Ask makes the plugin's request method (params: JSON, checked by the
// caller as method's) of task id (TaskOf) wait in the task
// (tasks.Manager.Ask) and returns the client's response (JSON) given by
// tasks/update. Errors, for the plugin: params that do not encode
// (-32602), tasks.ErrInputLimit and the store's (-32603), ctx's end.
func (l *Layer) Ask(ctx context.Context, id, method string, params []byte) ([]byte, error) {
	req := struct {
		Method string          `json:"method"`
		Params json.RawMessage `json:"params,omitempty"`
	}{method, params}
	b, err := json.Marshal(req)
	if err != nil {
		return nil, &host.RPCError{Code: jsonrpc.CodeInvalidParams, Message: err.Error()}
	}
	resp, err := l.cfg.Tasks.Ask(ctx, id, b)
	switch {
	case err == nil:
		return resp, nil
	case ctx.Err() != nil:
		return nil, err
	}
	return nil, &host.RPCError{Code: host.CodeInternalError, Message: err.Error()}
}

// answerTask gives tasks/update's responses to task rec (tasks.Manager.Answer).
// Errors: a response that is not a JSON object (-32602); the task's call
// on another replica, the store failing (-32603).
func (l *Layer) answerTask(ctx context.Context, rec tasks.Record, responses map[string]json.RawMessage) error {
	for k, r := range responses {
		var obj map[string]json.RawMessage
		if json.Unmarshal(r, &obj) != nil || obj == nil {
			return &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: fmt.Sprintf("inputResponses[%q] must be a JSON object (the result of the request it answers)", k)}
		}
	}
	err := l.cfg.Tasks.Answer(ctx, rec, responses)
	switch {
	case err == nil:
		return nil
	case errors.Is(err, tasks.ErrElsewhere):
		return &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: "tasks/update: " + err.Error()}
	}
	return l.storeError(mcptasks.MethodUpdate, rec.ID, err)
}
