package mcpapi

import (
	"context"
	"encoding/json"
	"errors"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/opentool-host/opentool-host/host"
)

// A call's messages (plugin protocol 3, host.Exchange): what a plugin
// says to the MCP client while its tool runs reaches that client, on the
// request's own stream, as if the plugin were the server:
//
//	plugin sends                      the client receives
//	notifications/progress            notifications/progress with the client's
//	                                  own progressToken (MCP "Utilities:
//	                                  Progress"); none when the client sent no
//	                                  token
//	notifications/message             notifications/message when its level is
//	                                  at or above the session's logging/setLevel
//	                                  (MCP "Server Utilities: Logging"; no level
//	                                  set: none, as the SDK's own servers do; a
//	                                  stateless request: info and above)
//	sampling/createMessage,           the same request to the client, whose
//	elicitation/create, roots/list    answer (or error) goes back to the plugin
//	                                  (MCP "Client Features"); a client without
//	                                  the capability, or a stateless /mcp
//	                                  request, is not asked: the plugin gets
//	                                  JSON-RPC error -32601 saying why (canAsk)
//
// The client's request _meta (progressToken, trace context, its own keys)
// goes to the plugin with the call.

// exchange returns the host.Exchange of tools/call req, whose handler
// runs with ctx. stream is true for a streaming function, whose progress
// the handler reports itself (one notification per item): the plugin's
// own progress is then dropped.
func (s *Server) exchange(ctx context.Context, req *mcp.CallToolRequest, stream bool) *host.Exchange {
	x := &host.Exchange{}
	if meta := req.Params.GetMeta(); len(meta) > 0 {
		x.Meta, _ = json.Marshal(meta) // decoded JSON: encodes
	}
	ss := req.Session
	if ss == nil {
		return x
	}
	token := req.Params.GetProgressToken()
	if token != nil {
		// The items of a streaming function collected into one result
		// (tools/call of it, or call_tool naming it): one progress
		// notification each. Progress is advisory: a client that went
		// away ends the call through ctx, not through this error.
		x.Item = func(n int, item []byte) {
			_ = ss.NotifyProgress(ctx, &mcp.ProgressNotificationParams{ProgressToken: token, Progress: float64(n), Message: progressMessage(n, item)})
		}
	}
	x.Notify = func(method string, params []byte) {
		switch method {
		case "notifications/progress":
			var p mcp.ProgressNotificationParams
			if token == nil || stream || json.Unmarshal(params, &p) != nil {
				return
			}
			p.ProgressToken = token
			_ = ss.NotifyProgress(ctx, &p) // advisory: a client gone ends the call through ctx
		case "notifications/message":
			var p mcp.LoggingMessageParams
			if json.Unmarshal(params, &p) != nil {
				return
			}
			_ = ss.Log(ctx, &p)
		}
	}
	stateless := ss.ID() == "" && req.Extra != nil && req.Extra.Header != nil
	x.Request = func(rctx context.Context, method string, params []byte) ([]byte, error) {
		if err := canAsk(ss, method, stateless); err != nil {
			return nil, err
		}
		res, err := ask(rctx, ss, method, params)
		if err != nil {
			return nil, rpcError(method, err)
		}
		return json.Marshal(res)
	}
	return x
}

// canAsk reports why the client of ss cannot be asked method, nil when
// it can: a stateless /mcp request has no session to carry a request and
// its answer; a client without the capability (MCP "Lifecycle",
// capability negotiation) must not be asked. Errors: a *host.RPCError
// with code -32601 saying which.
func canAsk(ss *mcp.ServerSession, method string, stateless bool) error {
	if stateless {
		return &host.RPCError{Code: host.CodeMethodNotFound, Message: method + " cannot reach the MCP client that made this call: its request has no session (a request of MCP 2026-07-28, which has none, or /mcp served with --mcp-stateless; a session of an older revision carries such requests)"}
	}
	var caps *mcp.ClientCapabilities
	if ip := ss.InitializeParams(); ip != nil {
		caps = ip.Capabilities
	}
	capability, declared := "", false
	switch method {
	case "sampling/createMessage":
		capability, declared = "sampling", caps != nil && caps.Sampling != nil
	case "elicitation/create":
		capability, declared = "elicitation", caps != nil && caps.Elicitation != nil
	case "roots/list":
		// The SDK cannot tell "roots": {} from no roots capability (its
		// Roots is a struct): the client is asked, and one without roots
		// answers with its error.
		return nil
	default:
		return &host.RPCError{Code: host.CodeMethodNotFound, Message: method + " is not a request a server may send a client"}
	}
	if !declared {
		return &host.RPCError{Code: host.CodeMethodNotFound, Message: method + ": the MCP client that made this call did not declare the " + capability + " capability"}
	}
	return nil
}

// ask sends request method with params (JSON) to the client of ss with
// ctx, the call's (it carries the tools/call request's id, so that over
// streamable HTTP the request travels on that request's stream).
func ask(ctx context.Context, ss *mcp.ServerSession, method string, params []byte) (any, error) {
	switch method {
	case "sampling/createMessage":
		var p mcp.CreateMessageWithToolsParams
		if err := json.Unmarshal(params, &p); err != nil {
			return nil, &host.RPCError{Code: jsonrpc.CodeInvalidParams, Message: method + ": " + err.Error()}
		}
		return ss.CreateMessageWithTools(ctx, &p)
	case "elicitation/create":
		var p mcp.ElicitParams
		if err := json.Unmarshal(params, &p); err != nil {
			return nil, &host.RPCError{Code: jsonrpc.CodeInvalidParams, Message: method + ": " + err.Error()}
		}
		return ss.Elicit(ctx, &p)
	default: // roots/list (canAsk let nothing else through)
		var p mcp.ListRootsParams
		if len(params) > 0 {
			if err := json.Unmarshal(params, &p); err != nil {
				return nil, &host.RPCError{Code: jsonrpc.CodeInvalidParams, Message: method + ": " + err.Error()}
			}
		}
		return ss.ListRoots(ctx, &p)
	}
}

// rpcError is the error the plugin gets for a request to the client that
// failed with err: the client's JSON-RPC error as it is, anything else
// (the SDK refusing to send it, the session gone) -32603 with its text.
func rpcError(method string, err error) error {
	var we *host.RPCError
	if errors.As(err, &we) {
		return we
	}
	var je *jsonrpc.Error
	if errors.As(err, &je) {
		return &host.RPCError{Code: int(je.Code), Message: je.Message, Data: je.Data}
	}
	return &host.RPCError{Code: host.CodeInternalError, Message: method + ": " + err.Error()}
}
