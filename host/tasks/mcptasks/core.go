package mcptasks

import (
	"encoding/json"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/opentool-host/opentool-host/host/tasks"
	"github.com/opentool-host/opentool-host/protocol/mcpmethod"
)

// The core tasks of MCP 2025-11-25 (basic/utilities/tasks, SEP-1686):
// the dialect before the extension. A server declares
// capabilities.tasks in initialize; a client asks for a task with
// params.task on tools/call, answered with a CreateTaskResult
// ({"task":Task}); it polls tasks/get (the Task), fetches the outcome
// with tasks/result (the CallToolResult, or the call's JSON-RPC error),
// lists with tasks/list and cancels with tasks/cancel (the Task);
// notifications/tasks/status carries a Task whose status changed. The
// shapes here are shared by /mcp (package tasklayer, core.go) and the
// host's MCP client (package mcpadapter, coretasks.go).

// CoreRevision is the MCP revision whose core defines tasks; a session of
// this revision speaks the core dialect, one of 2026-07-28 the extension.
const CoreRevision = "2025-11-25"

// The core dialect's own methods (tasks/get and tasks/cancel are
// MethodGet and MethodCancel, shared with the extension).
const (
	MethodResult     = mcpmethod.TasksResult
	MethodList       = mcpmethod.TasksList
	MethodStatusNote = mcpmethod.TasksStatus
)

// MetaRelatedTask is the _meta key that ties a message to a task
// ({"taskId":ID}): tasks/result's CallToolResult carries it.
const MetaRelatedTask = "io.modelcontextprotocol/related-task"

// ServerCapability is capabilities.tasks of a server that serves core
// tasks for tools/call, lists them and cancels them.
var ServerCapability = json.RawMessage(`{"list":{},"cancel":{},"requests":{"tools":{"call":{}}}}`)

// TaskMetadata is params.task of a request that asks to run as a task:
// TTL is the requested retention in milliseconds from creation (nil:
// the receiver's default; a receiver may give less).
type TaskMetadata struct {
	TTL *int64 `json:"ttl,omitempty"`
}

// Task is a task as the core shows it (tasks/get, tasks/cancel,
// tasks/list, notifications/tasks/status; the task of a
// CreateTaskResult): createdAt and lastUpdatedAt in RFC 3339, TTL in
// milliseconds from creation (null: unlimited), PollInterval in
// milliseconds (absent: none suggested).
type Task struct {
	TaskID        string       `json:"taskId"`
	Status        tasks.Status `json:"status"`
	StatusMessage string       `json:"statusMessage,omitempty"`
	CreatedAt     string       `json:"createdAt"`
	LastUpdatedAt string       `json:"lastUpdatedAt"`
	TTL           *int64       `json:"ttl"`
	PollInterval  int64        `json:"pollInterval,omitempty"`
}

// CoreTask returns rec as the core's Task.
func CoreTask(rec tasks.Record) Task {
	ttl := rec.TTL.Milliseconds()
	return Task{TaskID: rec.ID, Status: rec.Status, StatusMessage: rec.StatusMessage,
		CreatedAt: rec.CreatedAt.UTC().Format(time.RFC3339Nano), LastUpdatedAt: rec.LastUpdatedAt.UTC().Format(time.RFC3339Nano),
		TTL: &ttl, PollInterval: rec.PollInterval.Milliseconds()}
}

// CoreTaskResult is the result of tasks/get and tasks/cancel: a Task.
type CoreTaskResult struct {
	mcp.ResultBase
	Task
}

// CreateTaskResult answers a tools/call that asked for a task.
type CreateTaskResult struct {
	mcp.ResultBase
	// Task is the task created, working.
	Task Task `json:"task"`
}

// ListParams are the params of tasks/list: Cursor is the nextCursor of
// the page before ("" for the first).
type ListParams struct {
	mcp.ParamsBase
	Cursor string `json:"cursor,omitempty"`
}

// ListResult is one page of tasks/list: NextCursor is "" on the last.
type ListResult struct {
	mcp.ResultBase
	Tasks      []Task `json:"tasks"`
	NextCursor string `json:"nextCursor,omitempty"`
}
