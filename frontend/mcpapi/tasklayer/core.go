package tasklayer

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/opentool-host/opentool-host/host/access"
	"github.com/opentool-host/opentool-host/host/tasks"
	"github.com/opentool-host/opentool-host/host/tasks/mcptasks"
	"github.com/opentool-host/opentool-host/internal/mcpsession"
	"github.com/opentool-host/opentool-host/internal/strictjson"
	"github.com/opentool-host/opentool-host/protocol/mcpmethod"
)

// The core tasks of MCP 2025-11-25 (package mcptasks, core.go) on /mcp
// and stdio, beside the extension (extension.go), for the clients of that
// revision that use them (the TypeScript SDK's
// client.experimental.tasks):
//
//	spec                         here
//	capabilities.tasks           in the initialize result of a session of
//	                             2025-11-25: list, cancel, requests.tools.call
//	tools/call with params.task  (the SDK drops params.task: the front end
//	                             reads it from the HTTP body, or the stdio
//	                             message, AsksCoreTask, and marks it,
//	                             CoreTaskHeader),
//	                             a call of a tool the key may call: answered at
//	                             once with a CreateTaskResult ({"task":Task},
//	                             working); the call runs as a host task
//	                             (tasks.Manager.StartFrom, Origin.FrontEnd
//	                             FrontEndCore), detached from the request. The
//	                             requested ttl is not honoured: --task-ttl is,
//	                             and the Task says it. A call the key cannot
//	                             make is answered plainly (unknown tool)
//	tasks/get                    the Task
//	tasks/result                 blocks until the task ends (woken by
//	                             tasks.Manager.Watch, re-read every
//	                             pollInterval for a task of another replica),
//	                             then: completed, the CallToolResult with
//	                             _meta["io.modelcontextprotocol/related-task"];
//	                             failed, the call's JSON-RPC error; cancelled,
//	                             -32603 with its status message
//	tasks/list                   the key's own core tasks, newest first,
//	                             coreListPage a page, nextCursor the last id
//	tasks/cancel                 the Task; a task already ended: -32602
//	errors                       an unknown, expired, malformed, another
//	                             key's, or an extension task id: -32602;
//	                             tasks/result and tasks/list in the
//	                             extension's dialect (a 2026-07-28 client, or
//	                             _meta opting in): -32601, as the extension
//	                             says (it removed them), answered by the
//	                             transport (CoreOnlyAsked)
//
// A request of tasks/get or tasks/cancel is the extension's when its _meta
// opts in to the extension, or its client speaks 2026-07-28, or it names
// an extension task of the key (answered -32021 without the opt-in, as
// the extension says); else it is the core's. notifications/tasks/status
// goes to the session that created the task (notify.go).

// FrontEndCore is the name of the core dialect in task records
// (tasks.Origin.FrontEnd): the core's tasks/* answer only for tasks
// started by a core tools/call, the extension's only for its own.
const FrontEndCore = "mcp-core"

// CoreTaskHeader is the request header that carries, from the
// transport to the task middleware (mcp.RequestExtra.Header), that a
// tools/call has params.task (an object: AsksCoreTask): the SDK's
// CallToolParamsRaw has no such member. The transport removes a client's
// own first.
const CoreTaskHeader = "Opentool-Core-Task"

// coreListPage is how many tasks one tasks/list page holds.
const coreListPage = 50

// AsksCoreTask reports whether params, a tools/call's (JSON), has
// params.task as an object.
func AsksCoreTask(params []byte) bool {
	return IsTask(strictjson.Member(params, "task"))
}

// IsTask reports whether task, the raw params.task of a tools/call (nil
// when absent), asks for a core task: an object.
func IsTask(task []byte) bool {
	return len(task) > 0 && task[0] == '{'
}

// wantsCoreTask reports whether tools/call req asks for a core task: its
// POST had params.task, its client does not speak the extension's
// revision, and its _meta does not opt in to the extension.
func wantsCoreTask(req *mcp.CallToolRequest) bool {
	extra := req.GetExtra()
	return extra != nil && extra.Header.Get(CoreTaskHeader) != "" &&
		!mcpsession.SpeaksSessionless(req.Session) && !mcptasks.Allows(req.Params.Meta)
}

// coreInitMiddleware adds capabilities.tasks to the initialize result of
// a session of 2025-11-25 (the SDK's ServerCapabilities has no such
// member).
func (l *Layer) coreInitMiddleware(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		res, err := next(ctx, method, req)
		if ir, ok := res.(*mcp.InitializeResult); ok && err == nil && method == mcpmethod.Initialize && ir.ProtocolVersion == mcptasks.CoreRevision {
			return &coreInitResult{InitializeResult: ir}, nil
		}
		return res, err
	}
}

// coreInitResult is an initialize result with capabilities.tasks.
type coreInitResult struct{ *mcp.InitializeResult }

// MarshalJSON implements json.Marshaler: the SDK's result with
// capabilities.tasks set to mcptasks.ServerCapability.
func (r *coreInitResult) MarshalJSON() ([]byte, error) {
	b, err := json.Marshal(r.InitializeResult)
	if err != nil {
		return nil, err
	}
	var m map[string]json.RawMessage
	caps := map[string]json.RawMessage{}
	if err := json.Unmarshal(b, &m); err != nil {
		return nil, err
	}
	if raw, ok := m["capabilities"]; ok {
		if err := json.Unmarshal(raw, &caps); err != nil {
			return nil, err
		}
	}
	caps["tasks"] = mcptasks.ServerCapability
	if m["capabilities"], err = json.Marshal(caps); err != nil {
		return nil, err
	}
	return json.Marshal(m)
}

// callAsCoreTask starts tools/call req as a core task at once and
// answers its CreateTaskResult. Errors: -32603 when the task cannot be
// created (the key's task cap, the store).
func (l *Layer) callAsCoreTask(ctx context.Context, next mcp.MethodHandler, method string, req *mcp.CallToolRequest) (mcp.Result, error) {
	owner := access.GrantFrom(ctx).Name()
	origin := tasks.Origin{FrontEnd: FrontEndCore, Function: req.Params.Name}
	relay := newCoreRelay(owner)
	ctx = context.WithValue(ctx, coreRelayKey{}, relay) // the call's context carries it (StartFrom)
	rec, err := l.cfg.Tasks.StartFrom(ctx, owner, origin, l.taskRun(next, method, req, nil))
	if err != nil {
		l.cfg.Logger.Warn("core MCP task not created", "tool", req.Params.Name, "key", owner, "error", err)
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: fmt.Sprintf("the task was not created: %v", err)}
	}
	l.cfg.Logger.Debug("MCP call started as a core task", "tool", req.Params.Name, "task", rec.ID, "key", owner)
	// Followed after its creation: a task that ended meanwhile (Watch
	// found no session to notify) is notified here, once (sinks).
	l.follow(req.Session, owner, rec.ID)
	relay.id.Store(&rec.ID)
	if now, err := l.cfg.Tasks.Get(ctx, owner, rec.ID); err == nil && now.Status.Terminal() {
		l.notifyCore(now, true)
	}
	return &mcptasks.CreateTaskResult{Task: mcptasks.CoreTask(rec)}, nil
}

// taskAnswer is the result of a tasks/* method whose shape depends on the
// dialect: V marshalled as it is.
type taskAnswer struct {
	mcp.ResultBase
	v any
}

// MarshalJSON implements json.Marshaler.
func (a *taskAnswer) MarshalJSON() ([]byte, error) { return json.Marshal(a.v) }

// answer wraps v and err as a taskAnswer.
func answer[R any](v R, err error) (*taskAnswer, error) {
	if err != nil {
		return nil, err
	}
	return &taskAnswer{v: v}, nil
}

// speaksCore reports whether a tasks/get or tasks/cancel of task id is of
// the core dialect (see above).
func (l *Layer) speaksCore(ctx context.Context, ss *mcp.ServerSession, p *mcptasks.TaskParams) bool {
	if mcptasks.Allows(p.Meta) || ss != nil && mcpsession.SpeaksSessionless(ss) {
		return false
	}
	if !tasks.ValidID(p.TaskID) {
		return true
	}
	rec, err := l.cfg.Tasks.Get(ctx, access.GrantFrom(ctx).Name(), p.TaskID)
	return err != nil || rec.Origin.FrontEnd != FrontEnd
}

// dialectGet serves tasks/get in either dialect.
func (l *Layer) dialectGet(ctx context.Context, ss *mcp.ServerSession, p *mcptasks.TaskParams) (*taskAnswer, error) {
	if p == nil {
		p = &mcptasks.TaskParams{}
	}
	if l.speaksCore(ctx, ss, p) {
		rec, err := l.lookupCoreTask(ctx, mcptasks.MethodGet, p.TaskID)
		return answer(&mcptasks.CoreTaskResult{Task: mcptasks.CoreTask(rec)}, err)
	}
	return answer(l.tasksGet(ctx, ss, p))
}

// dialectCancel serves tasks/cancel in either dialect; the core's answers
// the Task as stored after the cancel was asked for (the call ends
// cooperatively: it may still say working), -32602 for an ended task.
func (l *Layer) dialectCancel(ctx context.Context, ss *mcp.ServerSession, p *mcptasks.TaskParams) (*taskAnswer, error) {
	if p == nil {
		p = &mcptasks.TaskParams{}
	}
	if !l.speaksCore(ctx, ss, p) {
		return answer(l.tasksCancel(ctx, ss, p))
	}
	rec, err := l.lookupCoreTask(ctx, mcptasks.MethodCancel, p.TaskID)
	if err != nil {
		return nil, err
	}
	if rec.Status.Terminal() {
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: fmt.Sprintf("Cannot cancel task: already in terminal status %q", rec.Status)}
	}
	if err := l.cfg.Tasks.Cancel(ctx, rec.Owner, rec.ID); err != nil {
		return nil, l.storeError(mcptasks.MethodCancel, rec.ID, err)
	}
	if again, err := l.cfg.Tasks.Get(ctx, rec.Owner, rec.ID); err == nil {
		rec = again
	}
	return answer(&mcptasks.CoreTaskResult{Task: mcptasks.CoreTask(rec)}, nil)
}

// lookupCoreTask returns core task taskID as the caller of ctx may see
// it, or the JSON-RPC error of method (storeError): -32602 for one it
// cannot see.
func (l *Layer) lookupCoreTask(ctx context.Context, method, taskID string) (tasks.Record, error) {
	if !tasks.ValidID(taskID) {
		return tasks.Record{}, l.storeError(method, taskID, tasks.ErrNotFound)
	}
	rec, err := l.cfg.Tasks.Get(ctx, access.GrantFrom(ctx).Name(), taskID)
	if err == nil && rec.Origin.FrontEnd != FrontEndCore {
		err = tasks.ErrNotFound
	}
	if err != nil {
		return tasks.Record{}, l.storeError(method, taskID, err)
	}
	return rec, nil
}

// coreOnlyRefused reports whether a tasks/result or tasks/list with
// _meta meta is of the extension's dialect (its client speaks 2026-07-28,
// or meta opts in to the extension), which has no such method.
func coreOnlyRefused(ss *mcp.ServerSession, meta map[string]any) bool {
	return mcptasks.Allows(meta) || ss != nil && mcpsession.SpeaksSessionless(ss)
}

// coreOnly is the -32601 answering method, a method of the core tasks
// only, in the extension's dialect (extension: tasks/result and
// tasks/list are removed and MUST be refused with -32601).
func coreOnly(method string) *jsonrpc.Error {
	return &jsonrpc.Error{Code: jsonrpc.CodeMethodNotFound,
		Message: fmt.Sprintf("Method not found: %s is a method of the core tasks of MCP %s, not of the %s extension", method, mcptasks.CoreRevision, mcptasks.Extension)}
}

// CoreOnlyAsked returns the -32601 error for a request of method whose
// protocol version (its MCP-Protocol-Version header or its _meta's,
// "" for none) and params (JSON) say it is of the extension's dialect
// and method one of the core's own (tasks/result, tasks/list); else nil.
// The transports answer it before the SDK reads the request: the SDK's
// connection replaces the message of every -32601 a handler returns by
// its own ("method not found: METHOD"), which would not say why.
func CoreOnlyAsked(method, version string, params []byte) *jsonrpc.Error {
	if method != mcptasks.MethodResult && method != mcptasks.MethodList {
		return nil
	}
	var meta map[string]any
	if raw := strictjson.Member(params, "_meta"); raw != nil {
		_ = json.Unmarshal(raw, &meta)
	}
	if version >= mcpsession.SessionlessRevision || mcptasks.Allows(meta) {
		return coreOnly(method)
	}
	return nil
}

// coreResult serves tasks/result: it waits until the task ends (or the
// request does), then answers its outcome (see above).
func (l *Layer) coreResult(ctx context.Context, ss *mcp.ServerSession, p *mcptasks.TaskParams) (*taskAnswer, error) {
	if p == nil {
		p = &mcptasks.TaskParams{}
	}
	if coreOnlyRefused(ss, p.Meta) {
		return nil, coreOnly(mcptasks.MethodResult)
	}
	rec, err := l.awaitCoreTask(ctx, p.TaskID)
	if err != nil {
		return nil, err
	}
	switch rec.Status {
	case tasks.Completed:
		res, err := withRelatedTask(rec.Result, rec.ID)
		if err != nil {
			return nil, &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: fmt.Sprintf("task %s: its stored result does not decode: %v", rec.ID, err)}
		}
		return &taskAnswer{v: res}, nil
	case tasks.Failed:
		var je jsonrpc.Error
		if json.Unmarshal(rec.Error, &je) != nil || je.Code == 0 {
			je = jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: rec.StatusMessage}
		}
		return nil, &je
	}
	return nil, &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: fmt.Sprintf("task %s was cancelled: %s", rec.ID, rec.StatusMessage)}
}

// awaitCoreTask returns core task id once it has ended: woken by the
// Manager's Watch when it ends here, re-read every poll interval (a task
// run by another replica). Errors: lookupCoreTask's, and the request's
// end (-32603 naming it).
func (l *Layer) awaitCoreTask(ctx context.Context, id string) (tasks.Record, error) {
	ended := make(chan struct{})
	var once sync.Once
	stop := l.cfg.Tasks.Watch(func(rec tasks.Record) {
		if rec.ID == id {
			once.Do(func() { close(ended) })
		}
	})
	defer stop()
	for {
		rec, err := l.lookupCoreTask(ctx, mcptasks.MethodResult, id)
		if err != nil || rec.Status.Terminal() {
			return rec, err
		}
		t := time.NewTimer(max(rec.PollInterval, 10*time.Millisecond))
		select {
		case <-ctx.Done():
			t.Stop()
			return tasks.Record{}, &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: fmt.Sprintf("tasks/result of %s given up: %v", id, context.Cause(ctx))}
		case <-ended:
			t.Stop()
		case <-t.C:
		}
	}
}

// withRelatedTask returns result, a CallToolResult's JSON, with
// _meta[mcptasks.MetaRelatedTask] = {"taskId":id}.
func withRelatedTask(result json.RawMessage, id string) (json.RawMessage, error) {
	var m map[string]json.RawMessage
	if err := json.Unmarshal(result, &m); err != nil {
		return nil, err
	}
	meta := map[string]json.RawMessage{}
	if raw, ok := m["_meta"]; ok && !bytes.Equal(raw, []byte("null")) {
		if err := json.Unmarshal(raw, &meta); err != nil {
			return nil, err
		}
	}
	meta[mcptasks.MetaRelatedTask], _ = json.Marshal(map[string]string{"taskId": id})
	var err error
	if m["_meta"], err = json.Marshal(meta); err != nil {
		return nil, err
	}
	return json.Marshal(m)
}

// coreList serves tasks/list: a page of the key's core tasks after the
// cursor (the last task id of the page before). Errors: -32602 for a
// cursor that names none of them, storeError's.
func (l *Layer) coreList(ctx context.Context, ss *mcp.ServerSession, p *mcptasks.ListParams) (*mcptasks.ListResult, error) {
	if p == nil {
		p = &mcptasks.ListParams{}
	}
	if coreOnlyRefused(ss, p.Meta) {
		return nil, coreOnly(mcptasks.MethodList)
	}
	recs, err := l.cfg.Tasks.List(ctx, access.GrantFrom(ctx).Name(), FrontEndCore)
	if err != nil {
		return nil, l.storeError(mcptasks.MethodList, "", err)
	}
	from := 0
	if p.Cursor != "" {
		i := slices.IndexFunc(recs, func(r tasks.Record) bool { return r.ID == p.Cursor })
		if i < 0 {
			return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: fmt.Sprintf("invalid cursor %q: no such task of this API key (it may have expired)", p.Cursor)}
		}
		from = i + 1
	}
	page := recs[from:min(from+coreListPage, len(recs))]
	out := &mcptasks.ListResult{Tasks: make([]mcptasks.Task, 0, len(page))}
	for _, rec := range page {
		out.Tasks = append(out.Tasks, mcptasks.CoreTask(rec))
	}
	if from+len(page) < len(recs) {
		out.NextCursor = page[len(page)-1].ID
	}
	return out, nil
}
