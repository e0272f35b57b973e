package opentoolapi

import (
	"context"
	"net/http"
	"strconv"

	"github.com/opentool-host/opentool-host/frontend/httpguard"
	"github.com/opentool-host/opentool-host/host/core"
	"github.com/opentool-host/opentool-host/protocol/jsonrpc"
)

// rpcError translates an error of Backend.Call or Backend.StreamCall made
// with ctx into the JSON-RPC error sent to the client, or nil when ctx
// ended (the client went away, a task was cancelled: nothing to send). Every call error is a *core.Error; its Kind decides:
//   - KindInvalidParams → -32602 "invalid params: FAULT; FAULT" with data
//     {"faults": [{"path","message"}]};
//   - KindTool → the tool's own code and message;
//   - KindNotFound → -32601 naming the function (the one call_tool
//     named, for a call through it: the answer of calling it by name);
//   - KindWrongKind → -32600;
//   - KindCanceled while the client is gone → nil;
//   - every other kind (plugin exited, failed, stopped, busy, timed out,
//     result rejected, transport) → -32603 with the error's message and
//     data {"kind", "plugin"} (and "status" for an exit; "login", the
//     link to log in at or the command to run, for needs_login, which
//     is retryable once the caller has logged in). A plugin's
//     stderr is never sent; the host logs it.
func (s *Server) rpcError(ctx context.Context, fn string, err error) *jsonrpc.Error {
	e := core.AsError(err)
	if e == nil {
		if ctx.Err() != nil {
			return nil
		}
		s.cfg.Logger.Error("call failed", "function", fn, "error", err)
		return &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: "internal error"}
	}
	switch e.Kind {
	case core.KindInvalidParams:
		return &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: e.Message, Data: map[string]any{"faults": e.Faults}}
	case core.KindTool:
		return &jsonrpc.Error{Code: e.Code, Message: e.Message}
	case core.KindNotFound:
		if e.Function != "" {
			fn = e.Function // the function call_tool named
		}
		return &jsonrpc.Error{Code: jsonrpc.CodeMethodNotFound, Message: "method not found: function " + strconv.Quote(fn) + " is not served" + e.DidYouMean()}
	case core.KindWrongKind:
		return &jsonrpc.Error{Code: jsonrpc.CodeInvalidRequest, Message: "invalid request: " + e.Message}
	case core.KindCanceled:
		if ctx.Err() != nil {
			return nil
		}
	}
	data := map[string]any{"kind": e.Kind}
	if e.Plugin != "" {
		data["plugin"] = e.Plugin
	}
	if e.Status != "" {
		data["status"] = e.Status
	}
	if e.Login != "" {
		data["login"] = e.Login
	}
	s.cfg.Logger.Warn("call failed", "function", fn, "kind", e.Kind, "error", e, "cause", e.Err)
	return &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: e.CallerText(), Data: data}
}

func quote(s string) string { return strconv.Quote(s) }

// WriteRefusal writes a request the front door refused before any front
// end read it (RequestGuard: 403, 415) as the OpenTool API answers an
// invalid request: HTTP status with
// {"jsonrpc":"2.0","result":{},"error":{"code":-32600,"message":MSG},"id":null}.
func WriteRefusal(w http.ResponseWriter, status int, msg string) {
	body := jsonrpc.AppendError(nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidRequest, Message: "invalid request: " + msg}, nil)
	httpguard.Write(w, status, httpguard.JSON, body, httpguard.DefaultWriteTimeout)
}
