package opentoolapi

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/opentool-host/opentool-host/host/access"
	"github.com/opentool-host/opentool-host/host/tasks"
	"github.com/opentool-host/opentool-host/protocol/jsonrpc"
)

// The OpenTool task extension: a long call answered with a task handle
// that the client polls, the OpenTool side of the MCP Tasks extension
// (io.modelcontextprotocol/tasks, https://github.com/modelcontextprotocol/ext-tasks),
// kept by package tasks so that replicas sharing a store answer for each
// other's tasks. docs/using-from-agents.md, "Long calls as tasks", is the
// client's description.
//
//   - POST /opentool/call with the request header "Prefer: respond-async"
//     (RFC 7240; "wait=N" beside it replaces --task-after for this call,
//     in seconds) allows a task. A call that ends within --task-after is
//     answered as without the header. One that runs longer gets HTTP 202,
//     "Location: /opentool/tasks/ID", "Preference-Applied: respond-async",
//     "Retry-After: SECONDS" (the poll interval) and the body
//     {"task":TASK}, while it goes on in the plugin.
//   - GET /opentool/tasks/{id} answers HTTP 200 with {"task":TASK}; once
//     the task is completed or failed, the body is the JSON-RPC response
//     the call would have given (its "jsonrpc", "result" or "error", and
//     the request's "id" as sent) with the member "task" added.
//   - DELETE /opentool/tasks/{id} cancels the call in the plugin: HTTP 202
//     with {"task":TASK} as it was before the cancel took effect, or 200
//     when the task had already ended (left as it is).
//
// TASK is {"id","status","statusMessage"?,"createdAt","lastUpdatedAt",
// "ttlMs","pollIntervalMs"} (taskJSON). A task exists only for the API
// key that created it: any other key, an expired task, an id that is not
// one and a task started on another front end all get HTTP 404 with the
// JSON-RPC error -32602 (extension, "Error Handling": invalid or
// nonexistent taskId). A store that fails gets HTTP 503 with -32603.

// FrontEnd is the name of this front end in task records
// (tasks.Origin.FrontEnd) and in core.Caller.
const FrontEnd = "opentool"

// TasksPath is the path of the task routes: TasksPath + "/" + ID.
const TasksPath = BasePath + "/tasks"

// taskJSON is the "task" member of the extension's bodies, the
// extension's Task (section "Tasks") with the OpenTool spelling of its id.
type taskJSON struct {
	// ID is the task id, 32 hex digits.
	ID string `json:"id"`
	// Status is working, completed, failed or cancelled.
	Status tasks.Status `json:"status"`
	// StatusMessage says why a task failed or was cancelled.
	StatusMessage string `json:"statusMessage,omitempty"`
	// CreatedAt and LastUpdatedAt are RFC 3339 times (UTC).
	CreatedAt     string `json:"createdAt"`
	LastUpdatedAt string `json:"lastUpdatedAt"`
	// TTLMs is how long after CreatedAt the task is kept, in ms.
	TTLMs int64 `json:"ttlMs"`
	// PollIntervalMs is the polling interval the host suggests, in ms.
	PollIntervalMs int64 `json:"pollIntervalMs"`
}

func taskOf(rec *tasks.Record) taskJSON {
	d := rec.Detailed()
	return taskJSON{ID: d.TaskID, Status: d.Status, StatusMessage: d.StatusMessage, CreatedAt: d.CreatedAt,
		LastUpdatedAt: d.LastUpdatedAt, TTLMs: d.TTLMs, PollIntervalMs: d.PollIntervalMs}
}

// preferAsync reports whether the request allows a task (a Prefer header
// with respond-async, RFC 7240 section 4.1), and how long the call may
// run before it becomes one: the wait preference's seconds when given
// (section 4.3), else def.
func preferAsync(h http.Header, def time.Duration) (time.Duration, bool) {
	async, after := false, def
	for _, v := range h.Values("Prefer") {
		for _, pref := range strings.Split(v, ",") {
			pref, _, _ = strings.Cut(pref, ";") // parameters: none defined for these two
			name, value, _ := strings.Cut(pref, "=")
			name, value = strings.ToLower(strings.TrimSpace(name)), strings.Trim(strings.TrimSpace(value), `"`)
			switch name {
			case "respond-async":
				async = true
			case "wait":
				if n, err := strconv.ParseInt(value, 10, 32); err == nil && n >= 0 {
					after = time.Duration(n) * time.Second
				}
			}
		}
	}
	return after, async
}

// callAsTask runs a call whose request allows a task (preferAsync):
// tasks.Manager.StartAfter answers it plainly when it ends within after,
// else with HTTP 202 and the task.
func (s *Server) callAsTask(w http.ResponseWriter, r *http.Request, req *jsonrpc.Request, after time.Duration, bp *[]byte) {
	ctx := callContext(r, req)
	owner := access.GrantFrom(ctx).Name()
	origin := tasks.Origin{FrontEnd: FrontEnd, Function: req.Method, RequestID: req.ID}
	result, rec, err := s.cfg.Tasks.StartAfter(ctx, owner, origin, after, s.taskRun(req.Method, req.Params))
	if rec != nil {
		s.cfg.Logger.Debug("call became a task", "function", req.Method, "task", rec.ID, "key", owner)
		h := w.Header()
		h.Set("Location", TasksPath+"/"+rec.ID)
		h.Set("Preference-Applied", "respond-async")
		h.Set("Retry-After", strconv.Itoa(retryAfterSeconds(rec.PollInterval)))
		s.writeJSON(w, http.StatusAccepted, struct {
			Task taskJSON `json:"task"`
		}{taskOf(rec)})
		return
	}
	out := (*bp)[len(*bp):]
	if err != nil {
		var re *tasks.RPCError
		if !errors.As(err, &re) { // the client went away
			return
		}
		s.writeRPC(w, http.StatusOK, jsonrpc.AppendError(out, rpcErrorOf(re), req.ID))
		return
	}
	*bp = jsonrpc.AppendResult(out, result, req.ID)
	s.writeRPC(w, http.StatusOK, *bp)
}

// taskRun is the call of fn with args as a tasks.Run: its result, or its
// JSON-RPC error (rpcError) as a *tasks.RPCError; the context's cause
// when it was cancelled (by the client before the call became a task, by
// a DELETE, or by the key's revocation, which fails the task).
func (s *Server) taskRun(fn string, args []byte) tasks.Run {
	return func(ctx context.Context) (json.RawMessage, error) {
		ctx, stop := access.UntilRevoked(ctx)
		defer stop()
		result, err := s.b.Call(ctx, fn, args)
		if err == nil {
			return result, nil
		}
		je := s.rpcError(ctx, fn, err)
		if je == nil {
			return nil, context.Cause(ctx)
		}
		re := &tasks.RPCError{Code: je.Code, Message: je.Message}
		if je.Data != nil {
			re.Data, _ = json.Marshal(je.Data)
		}
		return nil, re
	}
}

// rpcErrorOf is a task's JSON-RPC error as the response carries it.
func rpcErrorOf(re *tasks.RPCError) *jsonrpc.Error {
	je := &jsonrpc.Error{Code: re.Code, Message: re.Message}
	if len(re.Data) > 0 {
		je.Data = re.Data
	}
	return je
}

// retryAfterSeconds is d as an HTTP Retry-After value: whole seconds,
// rounded up, at least 1.
func retryAfterSeconds(d time.Duration) int {
	return max(1, int((d+time.Second-1)/time.Second))
}

// handleTaskGet serves GET /opentool/tasks/{id} (see the top of this
// file).
func (s *Server) handleTaskGet(w http.ResponseWriter, r *http.Request) {
	rec, ok := s.lookupTask(w, r)
	if !ok {
		return
	}
	if !rec.Status.Terminal() {
		w.Header().Set("Retry-After", strconv.Itoa(retryAfterSeconds(rec.PollInterval)))
	}
	s.writeRPC(w, http.StatusOK, taskBody(&rec))
}

// handleTaskDelete serves DELETE /opentool/tasks/{id}: tasks.Manager.Cancel
// (cooperative and eventually consistent: a call running on another
// replica is cancelled at that replica's next lease renewal).
func (s *Server) handleTaskDelete(w http.ResponseWriter, r *http.Request) {
	rec, ok := s.lookupTask(w, r)
	if !ok {
		return
	}
	status := http.StatusOK
	if !rec.Status.Terminal() {
		if err := s.cfg.Tasks.Cancel(r.Context(), rec.Owner, rec.ID); err != nil {
			s.taskError(w, r, rec.ID, err)
			return
		}
		status = http.StatusAccepted
		s.cfg.Logger.Debug("task cancel requested", "task", rec.ID, "key", rec.Owner)
	}
	s.writeJSON(w, status, struct {
		Task taskJSON `json:"task"`
	}{taskOf(&rec)})
}

// lookupTask returns the request's task as the request's key may see it,
// or writes the error (taskError) and returns false.
func (s *Server) lookupTask(w http.ResponseWriter, r *http.Request) (tasks.Record, bool) {
	id := r.PathValue("id")
	if s.cfg.Tasks == nil {
		s.writeRPC(w, http.StatusNotFound, jsonrpc.AppendError(nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams,
			Message: "invalid params: task " + quote(id) + " not found: this server does not run calls as tasks"}, nil))
		return tasks.Record{}, false
	}
	if !tasks.ValidID(id) {
		s.taskError(w, r, id, tasks.ErrNotFound)
		return tasks.Record{}, false
	}
	rec, err := s.cfg.Tasks.Get(r.Context(), access.GrantFrom(r.Context()).Name(), id)
	if err == nil && rec.Origin.FrontEnd != FrontEnd {
		err = tasks.ErrNotFound // another front end's: its result has another shape
	}
	if err != nil {
		s.taskError(w, r, id, err)
		return tasks.Record{}, false
	}
	return rec, true
}

// taskError writes a task route's error as a JSON-RPC error (id null):
// HTTP 404 and -32602 for a task the key cannot see, HTTP 503 and
// -32603 for a store that failed (logged; Retry-After: 1).
func (s *Server) taskError(w http.ResponseWriter, r *http.Request, id string, err error) {
	if errors.Is(err, tasks.ErrNotFound) {
		s.writeRPC(w, http.StatusNotFound, jsonrpc.AppendError(nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams,
			Message: "invalid params: task " + quote(id) + " not found (no such task for this API key, or it expired)"}, nil))
		return
	}
	if r.Context().Err() != nil {
		return // the client went away
	}
	s.cfg.Logger.Error("task store failed", "task", id, "error", err)
	w.Header().Set("Retry-After", "1")
	s.writeRPC(w, http.StatusServiceUnavailable, jsonrpc.AppendError(nil, &jsonrpc.Error{Code: jsonrpc.CodeInternalError,
		Message: "internal error: the task store failed; try again"}, nil))
}

// taskBody is GET's body for rec: {"task":TASK}, and once completed or
// failed the call's JSON-RPC response with "task" added as its first
// member.
func taskBody(rec *tasks.Record) []byte {
	b, _ := json.Marshal(taskOf(rec)) // plain strings and numbers: never fails
	out := append(append(make([]byte, 0, len(b)+len(rec.Result)+len(rec.Error)+64), `{"task":`...), b...)
	var resp []byte
	switch rec.Status {
	case tasks.Completed:
		resp = jsonrpc.AppendResult(nil, rec.Result, rec.Origin.RequestID)
	case tasks.Failed:
		var re tasks.RPCError
		if err := json.Unmarshal(rec.Error, &re); err != nil || re.Message == "" {
			re = tasks.RPCError{Code: jsonrpc.CodeInternalError, Message: rec.StatusMessage}
		}
		resp = jsonrpc.AppendError(nil, rpcErrorOf(&re), rec.Origin.RequestID)
	default:
		return append(out, '}')
	}
	// resp is {"jsonrpc":...}: splice its members in after "task".
	return append(append(out, ','), resp[1:]...)
}
