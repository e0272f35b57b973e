package mcpapi

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
	"github.com/opentool-host/opentool-host/protocol/opentool"
)

// What a plugin's function says about tasks, on /mcp with Config.Tasks
// (pluginsdk: WithTaskSupport, ProtocolError, a request to the client
// during a task):
//
//	the function                     here
//	execution.taskSupport            listed by tools/list as the tool's
//	(opentool.Function.Execution)    execution.taskSupport (withExecution);
//	                                 left out without Config.Tasks, where
//	                                 every call is plain
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
//	JSON-RPC reserved code           (protocolError); a task ends failed
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
//	                                 any request (canAsk). Before the call is
//	                                 a task, and in a core task, the request
//	                                 goes as without tasks (exchange.go)
//
// A hostile plugin gains nothing by these: its protocol error answers
// only its own call; its requests in a task wait in the task's record,
// at most tasks.MaxInputRequests at once, each checked as the request it
// says it is (inputRequest), and only the API key that owns the task
// sees or answers them.

// taskSupport is what function name as served declares of tasks
// (opentool.Function.TaskSupport): "" when it says nothing, or it is an
// MCP server's (whose own taskSupport its adapter honours).
func (s *Server) taskSupport(name string) string {
	m := s.served.Load()
	if m == nil {
		return ""
	}
	fi, ok := (*m)[name]
	if !ok || len(fi.Function.MCPTool) > 0 {
		return ""
	}
	return fi.Function.TaskSupport()
}

// needsTask is the error of a tools/call of tool name, whose function
// requires a task, from a client that cannot take one (see above).
func needsTask(req *mcp.CallToolRequest, name string) error {
	if speaksSessionless(req.Session) {
		err := mcptasks.MissingCapability("tools/call")
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

// protocolError is the JSON-RPC error of e when it is a tool's own error
// with a JSON-RPC reserved code (-32768 to -32000, pluginsdk.ProtocolError),
// else nil.
func protocolError(e *host.Error) *jsonrpc.Error {
	if e == nil || e.Kind != host.KindTool || e.Code < -32768 || e.Code > -32000 {
		return nil
	}
	return &jsonrpc.Error{Code: int64(e.Code), Message: e.Message}
}

// withExecution returns defs, the verbatim definitions of page lr, with
// a definition listing execution.taskSupport added for each tool of lr
// whose function declares it (taskSupport), when the host serves tasks.
func (s *Server) withExecution(lr *mcp.ListToolsResult, defs map[string]json.RawMessage) map[string]json.RawMessage {
	if s.cfg.Tasks == nil {
		return defs
	}
	var out map[string]json.RawMessage
	for _, t := range lr.Tools {
		ts := s.taskSupport(t.Name)
		if ts == "" || defs[t.Name] != nil {
			continue
		}
		def, err := toolWithExecution(t, ts)
		if err != nil {
			continue // listed without it
		}
		if out == nil {
			out = make(map[string]json.RawMessage, len(defs)+1)
			for k, v := range defs {
				out[k] = v
			}
		}
		out[t.Name] = def
	}
	if out == nil {
		return defs
	}
	return out
}

// toolWithExecution is t as the SDK writes it with "execution":
// {"taskSupport": ts}.
func toolWithExecution(t *mcp.Tool, ts string) (json.RawMessage, error) {
	ex, _ := json.Marshal(opentool.Execution{TaskSupport: ts}) // a struct of a string: encodes
	return overlay{"execution": ex}.write(t)
}

// callAsRequiredTask starts run, a tools/call whose function requires a
// task, as task a of owner at once and answers its CreateTaskResult.
// Errors: -32603 when the task cannot be created (the key's task cap,
// the store); the call then does not run.
func (s *Server) callAsRequiredTask(ctx context.Context, a *taskAsk, owner string, origin tasks.Origin, run tasks.Run) (mcp.Result, error) {
	rec, err := s.cfg.Tasks.StartFrom(ctx, owner, origin, run)
	if err != nil {
		a.decide(nil)
		s.cfg.Logger.Warn("MCP task not created", "tool", origin.Function, "key", owner, "error", err)
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: fmt.Sprintf("the task was not created: %v", err)}
	}
	a.decide(&rec)
	s.cfg.Logger.Debug("MCP call started as a task", "tool", origin.Function, "task", rec.ID, "key", owner)
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

// taskOf returns the id of the task the call of ctx is, and true; false
// when it is not (yet) a task: a call that may become one later asks as
// without tasks meanwhile, one that is a task at once waits for its id.
func taskOf(ctx context.Context) (string, bool) {
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

// askInTask makes the plugin's request method (params: JSON) of task id
// wait in the task (tasks.Manager.Ask) and returns the client's response
// (JSON) given by tasks/update. Errors, for the plugin: params that are
// not method's (-32602), ErrInputLimit and the store's (-32603), ctx's
// end.
func (s *Server) askInTask(ctx context.Context, id, method string, params []byte) ([]byte, error) {
	if _, err := inputRequest(method, params); err != nil {
		return nil, &host.RPCError{Code: jsonrpc.CodeInvalidParams, Message: err.Error()}
	}
	req := struct {
		Method string          `json:"method"`
		Params json.RawMessage `json:"params,omitempty"`
	}{method, params}
	b, err := json.Marshal(req)
	if err != nil {
		return nil, &host.RPCError{Code: jsonrpc.CodeInvalidParams, Message: err.Error()}
	}
	resp, err := s.cfg.Tasks.Ask(ctx, id, b)
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
func (s *Server) answerTask(ctx context.Context, rec tasks.Record, responses map[string]json.RawMessage) error {
	for k, r := range responses {
		var obj map[string]json.RawMessage
		if json.Unmarshal(r, &obj) != nil || obj == nil {
			return &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: fmt.Sprintf("inputResponses[%q] must be a JSON object (the result of the request it answers)", k)}
		}
	}
	err := s.cfg.Tasks.Answer(ctx, rec, responses)
	switch {
	case err == nil:
		return nil
	case errors.Is(err, tasks.ErrElsewhere):
		return &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: "tasks/update: " + err.Error()}
	}
	return s.storeError(mcptasks.MethodUpdate, rec.ID, err)
}
