// Package rpcerr is the JSON-RPC 2.0 error object (section 5.1) as the
// host's internal protocols carry it: a plugin's request answered
// (internal/wire's RPCError) and a program's inner call answered
// (internal/coderun's CallError). A leaf of the standard library only,
// so that the code runner's small binary shares it without the
// plugins' gRPC protocol.
package rpcerr

import (
	"encoding/json"
	"fmt"
)

// Error is a JSON-RPC 2.0 error object. It is an error.
type Error struct {
	// Code is the JSON-RPC error code.
	Code int `json:"code"`
	// Message describes the error.
	Message string `json:"message"`
	// Data is the error's data, JSON (nil: none).
	Data json.RawMessage `json:"data,omitempty"`
}

// Error implements error: "MESSAGE (JSON-RPC error CODE)".
func (e *Error) Error() string { return fmt.Sprintf("%s (JSON-RPC error %d)", e.Message, e.Code) }
