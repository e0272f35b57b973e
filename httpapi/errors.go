package httpapi

import (
	"errors"
	"strconv"

	"github.com/opentool-host/opentool-host/argcheck"
	"github.com/opentool-host/opentool-host/host"
	"github.com/opentool-host/opentool-host/jsonrpc"
	"github.com/opentool-host/opentool-host/pluginsdk"
)

// rpcError maps an error from Backend.Call to the JSON-RPC error sent to
// the client, or nil when the client went away (nothing to send):
//   - *argcheck.Error (arguments that fail the function's parameters,
//     checked by the host before the plugin runs) → -32602 "invalid
//     params: FAULT; FAULT" with data {"faults": [{"path","message"}]};
//   - the tool's own *pluginsdk.Error keeps its code and message;
//   - host.ErrFunctionNotFound → -32601 naming the function;
//   - host.ErrWrongKind → -32600;
//   - every other host failure (plugin exited, failed, busy, timed out)
//     → -32603 with data {"plugin", "stderr"} where known.
func (s *Server) rpcError(fn string, err error) *jsonrpc.Error {
	var ae *argcheck.Error
	if errors.As(err, &ae) {
		return &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: "invalid params: " + ae.Summary(), Data: map[string]any{"faults": ae.Faults}}
	}
	var te *pluginsdk.Error
	if errors.As(err, &te) {
		return &jsonrpc.Error{Code: te.Code, Message: te.Message}
	}
	switch {
	case errors.Is(err, host.ErrFunctionNotFound):
		return &jsonrpc.Error{Code: jsonrpc.CodeMethodNotFound, Message: "method not found: function " + strconv.Quote(fn) + " is not served"}
	case errors.Is(err, host.ErrWrongKind):
		return &jsonrpc.Error{Code: jsonrpc.CodeInvalidRequest, Message: "invalid request: " + err.Error()}
	case errors.Is(err, host.ErrCanceled):
		return nil
	}
	je := &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: err.Error()}
	var ee *host.ExitError
	var pe *host.PluginError
	switch {
	case errors.As(err, &ee):
		je.Data = map[string]any{"plugin": ee.Plugin, "pid": ee.PID, "status": ee.Status, "stderr": ee.Stderr}
	case errors.As(err, &pe):
		je.Data = map[string]any{"plugin": pe.Plugin}
	}
	s.cfg.Logger.Warn("call failed", "function", fn, "error", err)
	return je
}

func quote(s string) string { return strconv.Quote(s) }

func itoa(n int64) string { return strconv.FormatInt(n, 10) }
