package wire

import (
	"errors"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
)

// AsRPCError returns the JSON-RPC error err carries: its *RPCError as it
// is, or the MCP Go SDK's *jsonrpc.Error (a peer's error as it answered)
// with its code, message and data; false for any other error (the SDK
// refusing to send, a session gone), which the caller words itself.
func AsRPCError(err error) (*RPCError, bool) {
	var re *RPCError
	if errors.As(err, &re) {
		return re, true
	}
	var je *jsonrpc.Error
	if errors.As(err, &je) {
		return &RPCError{Code: int(je.Code), Message: je.Message, Data: je.Data}, true
	}
	return nil, false
}
