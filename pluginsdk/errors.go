package pluginsdk

import (
	"errors"
	"fmt"
)

// Error codes used by the reference OpenTool SDKs in the "error" member of
// a JSON-RPC response.
const (
	// CodeInvalidArguments is for arguments the function cannot accept.
	CodeInvalidArguments = 400
	// CodeNotFound is for an unknown function name.
	CodeNotFound = 404
	// CodeToolFailure is for a function that failed while running.
	CodeToolFailure = 500
)

// Error is an error a tool returns with a code. It travels to the host
// intact and reaches the caller as the JSON-RPC error {"code","message"}.
type Error struct {
	// Code is the error code, e.g. CodeInvalidArguments (400) or
	// CodeToolFailure (500).
	Code int `json:"code"`
	// Message is the human-readable description.
	Message string `json:"message"`
	// Exited, set only by a plugin served in the host's process
	// (Local), is the exit status ("signal: killed", "exit status 2")
	// of a program the plugin ran for this call alone, which exited
	// during it (a declared MCP server's process of one client session):
	// the host reports the call as the plugin's exit (plugin_exited,
	// retryable) with Message, while the plugin itself keeps running.
	// It never crosses a connection.
	Exited string `json:"-"`
	// Login, set only by a plugin served in the host's process (Local),
	// says the caller must log in to the plugin's server first (a
	// declared server with per-user credentials, package mcpadapter):
	// the URL to open, or the command to run. The host reports the call
	// as needs_login (retryable once logged in) with Message and Login.
	// It never crosses a connection.
	Login string `json:"-"`
}

// Error returns the message with its code, e.g. "tool error 400: b must not be 0".
func (e *Error) Error() string { return fmt.Sprintf("tool error %d: %s", e.Code, e.Message) }

// Errorf returns an *Error with the given code and formatted message.
func Errorf(code int, format string, args ...any) *Error {
	return &Error{Code: code, Message: fmt.Sprintf(format, args...)}
}

// InvalidArguments returns an *Error with code 400 and the formatted message.
func InvalidArguments(format string, args ...any) *Error {
	return Errorf(CodeInvalidArguments, format, args...)
}

// ToolFailure returns an *Error with code 500 and the formatted message.
func ToolFailure(format string, args ...any) *Error {
	return Errorf(CodeToolFailure, format, args...)
}

// FunctionNotFound returns the *Error (code 404) for an unknown function.
func FunctionNotFound(name string) *Error {
	return Errorf(CodeNotFound, "function %q not found", name)
}

// AsError converts any error into an *Error: an *Error anywhere in err's
// chain is returned as is; any other error becomes code 500 with err's text.
// AsError(nil) is nil.
func AsError(err error) *Error {
	if err == nil {
		return nil
	}
	var te *Error
	if errors.As(err, &te) {
		return te
	}
	return &Error{Code: CodeToolFailure, Message: err.Error()}
}
