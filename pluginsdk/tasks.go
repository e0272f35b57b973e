package pluginsdk

import (
	"fmt"

	"github.com/opentool-host/opentool-host/protocol/opentool"
)

// Tasks (MCP Tasks extension, SEP-2663, and the core tasks of MCP
// 2025-11-25): the host may answer a long call of an MCP client with a
// task handle that the client polls (tasks/get). A function says whether
// its calls may, must or must not be tasks (WithTaskSupport); during a
// call that is a task, a request to the client (Elicit, CreateMessage,
// ListRoots) makes the task input_required, the request shown by
// tasks/get, until the client answers it with tasks/update; and a
// ProtocolError ends the task failed with that JSON-RPC error, where any
// other error (and an isError result) ends it completed with an isError
// result.

// The values of WithTaskSupport (MCP ToolExecution.taskSupport).
const (
	// TaskSupportForbidden: a call is never a task, however long it runs.
	TaskSupportForbidden = opentool.TaskSupportForbidden
	// TaskSupportOptional: a call becomes a task when it outlives the
	// host's --task-after and the client can take one; what a function
	// that says nothing gets.
	TaskSupportOptional = opentool.TaskSupportOptional
	// TaskSupportRequired: a call is always a task, from its start; an
	// MCP client that cannot take one is refused (MCP 2026-07-28: JSON-RPC
	// -32021 naming the tasks extension; 2025-11-25: -32601), and an
	// OpenTool or Open Tool Calling caller gets the result when it ends.
	TaskSupportRequired = opentool.TaskSupportRequired
)

// WithTaskSupport returns a copy of f whose calls may (optional), must
// (required) or must not (forbidden) be tasks: the function's
// "execution": {"taskSupport": ts} in the OpenTool document, which /mcp
// lists as the tool's execution.taskSupport.
//
//	pluginsdk.ResultFunc("export", "Exports the data set.", export).
//		WithTaskSupport(pluginsdk.TaskSupportRequired)
//
// It panics, a programmer error found at start-up, when ts is not one of
// the three values.
func (f Function) WithTaskSupport(ts string) Function {
	switch ts {
	case TaskSupportForbidden, TaskSupportOptional, TaskSupportRequired:
	default:
		panic(fmt.Sprintf("pluginsdk: WithTaskSupport(%q) of %q: want %q, %q or %q", ts, f.def.Name, TaskSupportForbidden, TaskSupportOptional, TaskSupportRequired))
	}
	f.def = *f.def.Clone()
	f.def.Execution = &opentool.Execution{TaskSupport: ts}
	return f
}

// The range of JSON-RPC 2.0's reserved error codes (-32768 to -32000):
// an *Error with a code in it is a protocol error (ProtocolError).
const (
	minProtocolCode = -32768
	maxProtocolCode = -32000
)

// ProtocolError returns an *Error that reaches an MCP caller as the
// JSON-RPC error {code, message} of its tools/call instead of a tool
// result with isError (MCP "Error Handling": a protocol error, not a
// tool execution error); a call that is a task ends failed with it.
// OpenTool callers get it as any *Error. code must be one of JSON-RPC's
// reserved codes, -32768 to -32000 (e.g. -32603, internal error);
// ProtocolError panics on any other, a programmer error.
func ProtocolError(code int, format string, args ...any) *Error {
	if code < minProtocolCode || code > maxProtocolCode {
		panic(fmt.Sprintf("pluginsdk: ProtocolError code %d: want a JSON-RPC reserved code, %d to %d", code, minProtocolCode, maxProtocolCode))
	}
	return Errorf(code, format, args...)
}
