// Package mcptasks is the wire vocabulary of the MCP Tasks extension
// (io.modelcontextprotocol/tasks,
// https://github.com/modelcontextprotocol/ext-tasks): its identifiers,
// methods, params and results, shared by the host's server side of the
// extension (package mcpapi: /mcp answers a long call with a task) and
// its client side (package mcpadapter: a tool an MCP server marks
// execution.taskSupport "required" is called as a task). Section names
// in quotes are the extension's. The task's own shape is
// tasks.Detailed (the extension's DetailedTask).
package mcptasks

import (
	"encoding/json"
	"errors"
	"fmt"
	"maps"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/opentool-host/opentool-host/host/tasks"
	"github.com/opentool-host/opentool-host/protocol/mcpmethod"
	"github.com/opentool-host/opentool-host/protocol/opentool"
)

// Extension is the extension's identifier ("Extension Identifier"): the
// key of capabilities.extensions in initialize and server/discover, and
// of the client's per-request capabilities (MetaClientCapabilities).
const Extension = "io.modelcontextprotocol/tasks"

// CodeMissingRequiredClientCapability is the JSON-RPC error code a
// server answers with when it needs the extension and the request did
// not declare it: a tools/call it can only serve as a task, or a
// tasks/get, tasks/update or tasks/cancel ("Capability Negotiation",
// "Error Handling"). Its data is
// {"requiredCapabilities":{"extensions":{Extension:{}}}}.
const CodeMissingRequiredClientCapability = -32021

// MetaClientCapabilities is the request _meta key of the client's
// per-request capabilities (SEP-2575; "Capability Negotiation"): a
// request opts in to the extension with
// _meta[MetaClientCapabilities].extensions[Extension] = {}.
const MetaClientCapabilities = mcp.MetaKeyClientCapabilities

// The extension's result discriminators, the resultType member of a
// result ("Polymorphic Results"): a CreateTaskResult is "task"; the
// results of tasks/get, tasks/update and tasks/cancel are "complete".
const (
	ResultTypeTask     = "task"
	ResultTypeComplete = "complete"
)

// The extension's methods ("Task Polling", "Task Update Requests",
// "Task Cancellation").
const (
	MethodGet    = mcpmethod.TasksGet
	MethodUpdate = mcpmethod.TasksUpdate
	MethodCancel = mcpmethod.TasksCancel
)

// The values of a tool's execution.taskSupport (MCP 2025-11-25, Tool,
// ToolExecution): whether a client may (optional), must (required) or
// must not (forbidden, the default) call the tool as a task: the
// OpenTool document's (opentool.Function.Execution).
const (
	TaskSupportForbidden = opentool.TaskSupportForbidden
	TaskSupportOptional  = opentool.TaskSupportOptional
	TaskSupportRequired  = opentool.TaskSupportRequired
)

// TaskParams are the params of tasks/get and tasks/cancel ("Task
// Polling", "Task Cancellation"); the opt-in goes in their _meta.
type TaskParams struct {
	mcp.ParamsBase
	// TaskID is the task asked about: the taskId of the CreateTaskResult.
	TaskID string `json:"taskId"`
}

// UpdateTaskParams are the params of tasks/update ("Task Update
// Requests").
type UpdateTaskParams struct {
	mcp.ParamsBase
	// TaskID is the task asked about.
	TaskID string `json:"taskId"`
	// InputResponses answer the task's inputRequests, by their keys.
	InputResponses map[string]json.RawMessage `json:"inputResponses,omitempty"`
}

// TaskResult is a CreateTaskResult (ResultType ResultTypeTask: the
// extension's Result & Task, answering a tools/call) or a GetTaskResult
// (ResultTypeComplete: Result & DetailedTask, answering tasks/get):
// taskId, status, statusMessage, createdAt and lastUpdatedAt (RFC
// 3339), ttlMs (milliseconds; null, decoded as 0, for unlimited),
// pollIntervalMs (milliseconds; 0 when absent) and, for tasks/get, the
// result (completed: the CallToolResult) or error (failed: the JSON-RPC
// error object).
type TaskResult struct {
	mcp.ResultBase
	// ResultType is ResultTypeTask or ResultTypeComplete.
	ResultType string `json:"resultType"`
	tasks.Detailed
}

// AckResult is the empty acknowledgement of tasks/cancel and
// tasks/update (ResultType ResultTypeComplete).
type AckResult struct {
	mcp.ResultBase
	// ResultType is ResultTypeComplete.
	ResultType string `json:"resultType"`
}

// Allows reports whether a request's _meta declares the extension in
// its per-request client capabilities (MetaClientCapabilities).
func Allows(meta map[string]any) bool {
	caps, _ := meta[MetaClientCapabilities].(map[string]any)
	ext, _ := caps["extensions"].(map[string]any)
	_, ok := ext[Extension].(map[string]any)
	return ok
}

// OptIn returns a copy of meta (nil is empty) whose per-request client
// capabilities are the extension alone: what a client sends on a
// request it is ready to see answered with a task, and on tasks/get and
// tasks/cancel. Any capabilities meta declared are replaced: they were
// another client's.
func OptIn(meta map[string]any) mcp.Meta {
	m := make(mcp.Meta, len(meta)+1)
	maps.Copy(m, meta)
	m[MetaClientCapabilities] = map[string]any{"extensions": map[string]any{Extension: map[string]any{}}}
	return m
}

// MissingCapability is the -32021 error answering method when the
// request did not declare the extension ("Error Handling"), its data
// naming the extension as required.
func MissingCapability(method string) error {
	return &jsonrpc.Error{Code: CodeMissingRequiredClientCapability,
		Message: fmt.Sprintf("Missing required client capability: %s needs the %s extension in the request's _meta[%q].extensions", method, Extension, MetaClientCapabilities),
		Data:    json.RawMessage(`{"requiredCapabilities":{"extensions":{"` + Extension + `":{}}}}`)}
}

// IsMissingCapability reports whether err is a JSON-RPC error -32021
// whose data names the extension among the required capabilities: the
// server would have served the request as a task had the request
// opted in ("Capability Negotiation").
func IsMissingCapability(err error) bool {
	var je *jsonrpc.Error
	if !errors.As(err, &je) || je.Code != CodeMissingRequiredClientCapability {
		return false
	}
	var data struct {
		RequiredCapabilities struct {
			Extensions map[string]json.RawMessage `json:"extensions"`
		} `json:"requiredCapabilities"`
	}
	if json.Unmarshal(je.Data, &data) != nil {
		return false
	}
	_, ok := data.RequiredCapabilities.Extensions[Extension]
	return ok
}
