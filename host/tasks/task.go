// Package tasks runs long calls as tasks that outlive the request that
// started them, the state machine of the MCP Tasks extension
// (io.modelcontextprotocol/tasks, https://github.com/modelcontextprotocol/ext-tasks,
// sections "Tasks", "Task Status" and "Error Handling"), kept in a Store
// that several replicas may share (MemoryStore, RedisStore).
//
// A Manager starts a call as a task (Start), and any Manager on the same
// Store answers for it (Get, Cancel): the call runs on the replica that
// started it, which holds a lease on the task and renews it while the
// call runs; a cancel requested on any replica reaches the call when the
// lease is next renewed. A task whose lease runs out while it is still
// working (its replica died) is failed by the next Get, so no task stays
// working forever. A task is visible only to the owner that created it
// (the API key's name); to anyone else it does not exist.
//
// This package knows nothing of a protocol: a front end turns a Record
// into its wire shape (Record.Detailed gives the extension's DetailedTask)
// and its requests into Start, Get and Cancel.
package tasks

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"time"
)

// Status is a task's status (extension section "Task Status").
type Status string

// The statuses of a task. Completed, Failed and Cancelled are terminal.
const (
	// Working: the call runs.
	Working Status = "working"
	// InputRequired: the call waits for input from the client.
	InputRequired Status = "input_required"
	// Completed: the call returned a result (a tool result with isError
	// true included).
	Completed Status = "completed"
	// Failed: the call ended with a JSON-RPC error, or its replica died.
	Failed Status = "failed"
	// Cancelled: the call was cancelled before it completed.
	Cancelled Status = "cancelled"
)

// Terminal reports whether s is a final status.
func (s Status) Terminal() bool { return s == Completed || s == Failed || s == Cancelled }

// Record is one task as stored. Times are UTC.
type Record struct {
	// ID is the task id: 32 hex digits of crypto/rand (128 bits), so that
	// ids cannot be guessed (extension, "Security Considerations").
	ID string `json:"id"`
	// Owner is the name of the API key that created the task ("" when
	// the host has no keys). Only that owner sees the task.
	Owner string `json:"owner"`
	// Status is the task's status.
	Status Status `json:"status"`
	// StatusMessage says why, for failed and cancelled tasks; may be "".
	StatusMessage string `json:"statusMessage,omitempty"`
	// CreatedAt and LastUpdatedAt are when the task was created and last
	// changed status or result.
	CreatedAt     time.Time `json:"createdAt"`
	LastUpdatedAt time.Time `json:"lastUpdatedAt"`
	// TTL is how long after CreatedAt the task is kept.
	TTL time.Duration `json:"ttl"`
	// PollInterval is the polling interval suggested to clients.
	PollInterval time.Duration `json:"pollInterval"`
	// Result is the call's result (a CallToolResult on MCP), for
	// Completed.
	Result json.RawMessage `json:"result,omitempty"`
	// Error is the call's JSON-RPC error object, for Failed.
	Error json.RawMessage `json:"error,omitempty"`
	// Replica names the Manager running the call (Config.Replica).
	Replica string `json:"replica"`
	// LeaseUntil is when the running replica's lease ends unless renewed.
	LeaseUntil time.Time `json:"leaseUntil"`
	// CancelRequested is set by Cancel; the running replica cancels the
	// call when it sees it.
	CancelRequested bool `json:"cancelRequested,omitempty"`
	// Origin is the request that started the task (StartFrom, StartAfter).
	Origin Origin `json:"origin"`
	// InputRequests are the requests of the task's call that wait for
	// the client (Manager.Ask), by key, each a JSON-RPC request object
	// {"method", "params"}; set while the status is InputRequired.
	InputRequests map[string]json.RawMessage `json:"inputRequests,omitempty"`
}

// Origin is the request a task's call came from, kept in its record so
// that the front end answering for the task can give the answer the call
// itself would have given (the OpenTool task extension echoes the
// JSON-RPC id; a front end answers only for its own tasks).
type Origin struct {
	// FrontEnd names the front end that started the task ("opentool",
	// "mcp"); "" for Start.
	FrontEnd string `json:"frontEnd,omitempty"`
	// Function is the function called.
	Function string `json:"function,omitempty"`
	// RequestID is the JSON-RPC id of the request that started the task,
	// as sent (raw JSON); nil when it had none.
	RequestID json.RawMessage `json:"requestId,omitempty"`
}

// ExpiresAt is when the store may drop the record: CreatedAt + TTL.
func (r *Record) ExpiresAt() time.Time { return r.CreatedAt.Add(r.TTL) }

// size is the record's weight against an owner's byte budget: its result
// and error, in bytes.
func (r *Record) size() int64 { return int64(len(r.Result) + len(r.Error)) }

// Detailed is a task as the extension's DetailedTask shows it (tasks/get,
// notifications/tasks; CreateTaskResult adds resultType): taskId, status,
// statusMessage, createdAt and lastUpdatedAt (RFC 3339), ttlMs,
// pollIntervalMs, and result (completed), error (failed) or inputRequests
// (input_required: SEP-2322's InputRequests, by key).
type Detailed struct {
	TaskID         string                     `json:"taskId"`
	Status         Status                     `json:"status"`
	StatusMessage  string                     `json:"statusMessage,omitempty"`
	CreatedAt      string                     `json:"createdAt"`
	LastUpdatedAt  string                     `json:"lastUpdatedAt"`
	TTLMs          int64                      `json:"ttlMs"`
	PollIntervalMs int64                      `json:"pollIntervalMs,omitempty"`
	Result         json.RawMessage            `json:"result,omitempty"`
	Error          json.RawMessage            `json:"error,omitempty"`
	InputRequests  map[string]json.RawMessage `json:"inputRequests,omitempty"`
}

// Detailed returns r in the extension's wire shape.
func (r *Record) Detailed() Detailed {
	d := Detailed{
		TaskID: r.ID, Status: r.Status, StatusMessage: r.StatusMessage,
		CreatedAt: r.CreatedAt.UTC().Format(time.RFC3339Nano), LastUpdatedAt: r.LastUpdatedAt.UTC().Format(time.RFC3339Nano),
		TTLMs: r.TTL.Milliseconds(), PollIntervalMs: r.PollInterval.Milliseconds(),
	}
	switch r.Status {
	case Completed:
		d.Result = r.Result
	case Failed:
		d.Error = r.Error
	case InputRequired:
		d.InputRequests = r.InputRequests
	}
	return d
}

// newID returns a fresh task id (see Record.ID).
func newID() (string, error) {
	var b [16]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", err
	}
	return hex.EncodeToString(b[:]), nil
}

// ValidID reports whether id has the form of a task id (Record.ID: 32
// lower-case hex digits, as newID makes them), so that a front end can
// refuse any other before it asks the store.
func ValidID(id string) bool {
	if len(id) != 32 {
		return false
	}
	for _, c := range id {
		if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f') {
			return false
		}
	}
	return true
}

// ErrNotFound is returned for a task that does not exist, has expired,
// or belongs to another owner (the three look the same).
var ErrNotFound = errors.New("task not found")

// ErrExists is returned by Store.Create for an id already stored.
var ErrExists = errors.New("task id already exists")

// ErrLimit is returned by Manager.Start when the owner already holds
// Config.MaxPerOwner tasks or Config.MaxBytesPerOwner bytes of results.
var ErrLimit = errors.New("too many tasks for this API key")
