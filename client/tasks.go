package client

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/opentool-host/opentool-host/protocol/jsonrpc"
)

// Long calls as tasks: the OpenTool task extension of opentool-host
// (docs/using-from-agents.md, "Long calls as tasks"), the OpenTool side
// of the MCP Tasks extension (https://github.com/modelcontextprotocol/ext-tasks).
// CallTask sends a call with "Prefer: respond-async"; a call that runs
// longer than the server's --task-after is answered with a task (HTTP
// 202) that Task.Wait polls at GET {base}/tasks/{id} until it ends, and
// Task.Cancel cancels with DELETE. A server without the extension (or a
// call that ends in time) answers plainly, and the Task is done at once.

// TaskStatus is a task's status (the extension's "Task Status").
type TaskStatus string

// The statuses of a task. TaskCompleted, TaskFailed and TaskCancelled
// are final.
const (
	// TaskWorking: the call runs.
	TaskWorking TaskStatus = "working"
	// TaskInputRequired: the call waits for input (not used by
	// opentool-host's OpenTool API yet).
	TaskInputRequired TaskStatus = "input_required"
	// TaskCompleted: the call returned a result (Task.Result).
	TaskCompleted TaskStatus = "completed"
	// TaskFailed: the call failed; Task.Result returns its *CallError.
	TaskFailed TaskStatus = "failed"
	// TaskCancelled: the call was cancelled before it ended.
	TaskCancelled TaskStatus = "cancelled"
)

// Final reports whether s is a final status.
func (s TaskStatus) Final() bool { return s == TaskCompleted || s == TaskFailed || s == TaskCancelled }

// DefaultPollInterval is how often Task.Wait polls when the server
// suggests no interval.
const DefaultPollInterval = time.Second

// Task is one call run by the server as a task, as last seen: made by
// CallTask, or by Client.Task for an id kept from before (the extension
// asks clients to keep task ids so that polling can resume after a
// restart). A Task is not safe for concurrent use.
type Task struct {
	// ID is the task id (32 hex digits); "" when the server answered the
	// call at once (then Status is final and Result has its outcome).
	ID string
	// Status is the task's status; "" for a Task of Client.Task not yet
	// refreshed.
	Status TaskStatus
	// StatusMessage says why a task failed or was cancelled.
	StatusMessage string
	// CreatedAt and LastUpdatedAt are the server's times of creation and
	// last change.
	CreatedAt, LastUpdatedAt time.Time
	// TTL is how long after CreatedAt the server keeps the task.
	TTL time.Duration
	// PollInterval is the polling interval the server suggests.
	PollInterval time.Duration

	c      *Client
	callID string // the JSON-RPC id sent, for ToolReturn.ID
	ret    ToolReturn
	err    error // the call's error, for TaskFailed
}

// TaskOption adjusts one CallTask.
type TaskOption func(*taskOptions)

type taskOptions struct {
	wait    time.Duration
	setWait bool
}

// TaskWait asks the server to answer with a task once the call has run
// for d (whole seconds, rounded up; 0: at once) instead of its
// --task-after: "Prefer: respond-async, wait=N" (RFC 7240).
func TaskWait(d time.Duration) TaskOption {
	return func(o *taskOptions) { o.wait, o.setWait = d, true }
}

// CallTask calls function fc.Name as Call does, allowing the server to
// answer with a task ("Prefer: respond-async"). The returned Task is
// either a task still running on the server (Status TaskWorking; use
// Wait, Refresh or Cancel) or, when the call ended before the server's
// --task-after or the server runs no tasks, a Task that is already done
// (ID "", Status TaskCompleted or TaskFailed).
//
// Errors are those of the request itself: *UnauthorizedError,
// *NoAccessError, *CallError for a refused request (an invalid body, HTTP
// 429), *ResponseNullError, the context's error. The call's own failure
// is the Task's (Result returns it).
func (c *Client) CallTask(ctx context.Context, fc FunctionCall, opts ...TaskOption) (*Task, error) {
	var o taskOptions
	for _, opt := range opts {
		opt(&o)
	}
	id, req, err := requestBody(fc)
	if err != nil {
		return nil, err
	}
	prefer := "respond-async"
	if o.setWait {
		prefer += ", wait=" + strconv.FormatInt(int64((max(o.wait, 0)+time.Second-1)/time.Second), 10)
	}
	resp, err := c.send(ctx, request{method: http.MethodPost, path: "/call", body: req, accept: "application/json", prefer: prefer, task: true})
	if err != nil {
		return nil, err
	}
	body, err := readBody(resp)
	if err != nil {
		return nil, err
	}
	t := &Task{c: c, callID: id}
	if resp.StatusCode == http.StatusAccepted {
		if err := t.update(body, resp.StatusCode); err != nil {
			return nil, err
		}
		if t.ID == "" {
			return nil, fmt.Errorf("opentool client: HTTP 202 without a task: %s", snippet(body))
		}
		return t, nil
	}
	result, err := decodeResponse(body, resp.StatusCode)
	var ce *CallError
	if errors.As(err, &ce) {
		t.Status, t.StatusMessage, t.err = TaskFailed, ce.Message, ce
		return t, nil
	}
	if err != nil {
		return nil, err
	}
	t.Status, t.ret = TaskCompleted, ToolReturn{ID: id, Result: result}
	return t, nil
}

// Task returns a handle on the task id of this client's API key, to
// Refresh, Wait for or Cancel; its Status is "" until refreshed.
func (c *Client) Task(id string) *Task { return &Task{c: c, ID: id} }

// Done reports whether the task has a final status.
func (t *Task) Done() bool { return t.Status.Final() }

// Result returns the call's outcome once the task is done: its
// ToolReturn (TaskCompleted; its ID is the JSON-RPC id sent), the call's
// *CallError (TaskFailed: the tool's own error, or the host's such as
// -32603 when the replica running the call died), or a
// *TaskCancelledError (TaskCancelled). Before that it returns an error
// saying the task is still running.
func (t *Task) Result() (ToolReturn, error) {
	switch t.Status {
	case TaskCompleted:
		return t.ret, nil
	case TaskFailed:
		if t.err == nil {
			return ToolReturn{}, &CallError{Code: jsonrpc.CodeInternalError, Message: t.StatusMessage, Status: http.StatusOK}
		}
		return ToolReturn{}, t.err
	case TaskCancelled:
		return ToolReturn{}, &TaskCancelledError{ID: t.ID, Message: t.StatusMessage}
	}
	return ToolReturn{}, fmt.Errorf("opentool client: task %s is %s, not done", t.ID, t.statusText())
}

func (t *Task) statusText() string {
	if t.Status == "" {
		return "not refreshed yet"
	}
	return string(t.Status)
}

// Refresh fetches the task's state: GET {base}/tasks/{id}. Errors:
// *TaskNotFoundError (unknown, expired, or another API key's),
// *UnauthorizedError, *NoAccessError, *CallError (the server's store
// failing: HTTP 503), the context's error. A task answered at once (ID "")
// needs no refresh: Refresh returns nil.
func (t *Task) Refresh(ctx context.Context) error {
	return t.do(ctx, http.MethodGet)
}

// Wait polls the task every PollInterval (DefaultPollInterval when the
// server gave none) until it is done or ctx ends, and returns Result.
// Errors: Result's, Refresh's, the context's.
func (t *Task) Wait(ctx context.Context) (ToolReturn, error) {
	if t.Status == "" {
		if err := t.Refresh(ctx); err != nil {
			return ToolReturn{}, err
		}
	}
	for !t.Done() {
		d := t.PollInterval
		if d <= 0 {
			d = DefaultPollInterval
		}
		timer := time.NewTimer(d)
		select {
		case <-ctx.Done():
			timer.Stop()
			return ToolReturn{}, fmt.Errorf("opentool client: waiting for task %s: %w", t.ID, ctx.Err())
		case <-timer.C:
		}
		if err := t.Refresh(ctx); err != nil {
			return ToolReturn{}, err
		}
	}
	return t.Result()
}

// Cancel asks the server to cancel the call: DELETE {base}/tasks/{id}.
// Cancellation is cooperative and eventually consistent: the call is
// cancelled in the plugin at once on the replica running it, else at that
// replica's next lease renewal; Refresh or Wait then shows TaskCancelled
// (or another final status if the call ended first). Cancelling a task
// that is done changes nothing. Errors: as Refresh's.
func (t *Task) Cancel(ctx context.Context) error {
	return t.do(ctx, http.MethodDelete)
}

// do sends method to {base}/tasks/{id} and takes the task's state from
// the answer; nothing for a task answered at once (ID ""). Errors: as
// Refresh's.
func (t *Task) do(ctx context.Context, method string) error {
	if t.ID == "" {
		return nil
	}
	resp, err := t.c.send(ctx, request{method: method, path: "/tasks/" + t.ID, accept: "application/json", task: true, taskID: t.ID})
	if err != nil {
		return err
	}
	body, err := readBody(resp)
	if err != nil {
		return err
	}
	return t.update(body, resp.StatusCode)
}

// taskWire is the "task" member of the extension's bodies.
type taskWire struct {
	ID             string     `json:"id"`
	Status         TaskStatus `json:"status"`
	StatusMessage  string     `json:"statusMessage"`
	CreatedAt      time.Time  `json:"createdAt"`
	LastUpdatedAt  time.Time  `json:"lastUpdatedAt"`
	TTLMs          int64      `json:"ttlMs"`
	PollIntervalMs int64      `json:"pollIntervalMs"`
}

// update reads a task body ({"task":TASK}, with the call's JSON-RPC
// response beside it once completed or failed) into t.
func (t *Task) update(body []byte, status int) error {
	var b struct {
		Task   *taskWire       `json:"task"`
		Result json.RawMessage `json:"result"`
		Error  *jsonrpc.Error  `json:"error"`
		ID     json.RawMessage `json:"id"`
	}
	if err := json.Unmarshal(body, &b); err != nil || b.Task == nil {
		return fmt.Errorf("opentool client: not a task body %s: %v", snippet(body), err)
	}
	w := b.Task
	t.ID, t.Status, t.StatusMessage = w.ID, w.Status, w.StatusMessage
	t.CreatedAt, t.LastUpdatedAt = w.CreatedAt, w.LastUpdatedAt
	t.TTL, t.PollInterval = time.Duration(w.TTLMs)*time.Millisecond, time.Duration(w.PollIntervalMs)*time.Millisecond
	if t.callID == "" && len(b.ID) > 0 {
		var s string
		if json.Unmarshal(b.ID, &s) == nil {
			t.callID = s
		} else if string(b.ID) != "null" {
			t.callID = strings.TrimSpace(string(b.ID))
		}
	}
	switch t.Status {
	case TaskCompleted:
		var result map[string]any
		if err := json.Unmarshal(b.Result, &result); err != nil {
			return fmt.Errorf("opentool client: task %s: the result %s is not a JSON object: %w", t.ID, snippet(b.Result), err)
		}
		t.ret = ToolReturn{ID: t.callID, Result: result}
	case TaskFailed:
		if b.Error != nil {
			t.err = callError(b.Error, status)
		}
	}
	return nil
}

// TaskNotFoundError reports a task the server does not have for this
// client's API key: an unknown id, an expired task (the server's
// --task-ttl), or another key's (HTTP 404 with JSON-RPC error -32602, as
// the extension's "Error Handling" says).
type TaskNotFoundError struct {
	// ID is the task id asked for.
	ID string
	// Message is the server's message.
	Message string
}

// Error implements error.
func (e *TaskNotFoundError) Error() string {
	return fmt.Sprintf("opentool client: task %s not found: %s", e.ID, e.Message)
}

// TaskCancelledError is Result's error for a task that ended cancelled:
// the call has no result.
type TaskCancelledError struct {
	// ID is the task id.
	ID string
	// Message is the task's statusMessage (why it was cancelled).
	Message string
}

// Error implements error.
func (e *TaskCancelledError) Error() string {
	return fmt.Sprintf("opentool client: task %s was cancelled: %s", e.ID, e.Message)
}
