package mcpapi

import (
	"context"
	"encoding/json"
	"errors"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/opentool-host/opentool-host/frontend/mcpapi/rounds"
	"github.com/opentool-host/opentool-host/frontend/mcpapi/tasklayer"
	"github.com/opentool-host/opentool-host/host"
	"github.com/opentool-host/opentool-host/host/core"
	"github.com/opentool-host/opentool-host/host/tasks/mcptasks"
	"github.com/opentool-host/opentool-host/internal/mcpsession"
	"github.com/opentool-host/opentool-host/internal/wire"
	"github.com/opentool-host/opentool-host/protocol/mcpmethod"
)

// A call's messages (plugin protocol 3, core.Exchange): what a plugin
// says to the MCP client while its tool runs reaches that client, on the
// request's own stream, as if the plugin were the server:
//
//	plugin sends                      the client receives
//	notifications/progress            notifications/progress with the client's
//	                                  own progressToken (MCP "Utilities:
//	                                  Progress"); none when the client sent no
//	                                  token
//	notifications/tasks/status        during a core task's call (a declared MCP
//	                                  server's own task, mcpadapter): the host
//	                                  task's notifications/tasks/status, working
//	                                  with the server's statusMessage
//	                                  (tasklayer.Layer.RelayStatus); else none
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
//	                                  JSON-RPC error -32601 saying why (canAsk).
//	                                  A 2026-07-28 client that did not declare
//	                                  the capability in its request's _meta
//	                                  gets its call answered with JSON-RPC
//	                                  error -32021 (SEP-2575, HTTP 400), data
//	                                  {"requiredCapabilities": {CAP: {}}}, and
//	                                  the call is cancelled (refusal); one that
//	                                  declared it gets the request in an
//	                                  input_required round (package rounds)
//
// The client's request _meta (progressToken, trace context, its own keys)
// goes to the plugin with the call.

// exchange returns the core.Exchange of tools/call req, whose handler
// runs with ctx. When the host collects a streaming function's items into
// one result (this tools/call of it, or call_tool naming it) each item is
// one progress notification (Item), and the host then drops the plugin's
// own progress (host.CollectItems), so that each value comes once.
func (s *Server) exchange(ctx context.Context, req *mcp.CallToolRequest, id clientID) *core.Exchange {
	x := id.exchange()
	if meta := req.Params.GetMeta(); len(meta) > 0 {
		x.Meta, _ = json.Marshal(meta) // decoded JSON: encodes
	}
	x.Meta = rounds.RetryMeta(ctx, x.Meta) // a retry of the plugin's round
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
		case mcpmethod.Progress:
			var p mcp.ProgressNotificationParams
			if token == nil || json.Unmarshal(params, &p) != nil {
				return
			}
			p.ProgressToken = token
			_ = ss.NotifyProgress(ctx, &p) // advisory: a client gone ends the call through ctx
		case mcpmethod.LoggingMessage:
			var p mcp.LoggingMessageParams
			if json.Unmarshal(params, &p) != nil {
				return
			}
			_ = ss.Log(ctx, &p)
		case mcptasks.MethodStatusNote: // a declared MCP server's task behind a core task's call
			s.tasks.RelayStatus(ctx, params)
		}
	}
	// A call of a 2026-07-28 client asks across rounds (package rounds).
	held := rounds.HeldAsk(ctx)
	stateless := ss.ID() == "" && req.Extra != nil && req.Extra.Header != nil && held == nil && !s.chans.OnStdio()
	x.Request = func(rctx context.Context, method string, params []byte) ([]byte, error) {
		id, inTask := tasklayer.TaskOf(ctx) // the request waits in the task
		if err := canAsk(ss, method, stateless && !inTask); err != nil {
			var missing *missingCapability
			if errors.As(err, &missing) {
				refuseCall(ctx, missing.ClientError())
			}
			return nil, err
		}
		if inTask {
			if _, err := rounds.InputRequest(method, params); err != nil {
				return nil, &host.RPCError{Code: jsonrpc.CodeInvalidParams, Message: err.Error()}
			}
			return s.tasks.Ask(rctx, id, method, params)
		}
		if held != nil {
			return held(rctx, method, params)
		}
		return s.askClient(rctx, ss, method, params)
	}
	return x
}

// askClient is s.ask with the plugin's error (rpcError) and the answer as
// JSON.
func (s *Server) askClient(ctx context.Context, ss *mcp.ServerSession, method string, params []byte) ([]byte, error) {
	res, err := s.ask(ctx, ss, method, params)
	if err != nil {
		return nil, rpcError(err)
	}
	return json.Marshal(res)
}

// canAsk reports why the client of ss cannot be asked method, nil when
// it can: a stateless /mcp request has no session to carry a request and
// its answer; a client without the capability (MCP "Lifecycle",
// capability negotiation) must not be asked. Errors: a *host.RPCError
// with code -32601 saying which.
//
// A client of 2026-07-28 and later declares its capabilities with each
// request: one that did not declare the capability gets a
// *missingCapability (its call is then refused, refusal), also without a
// session.
func canAsk(ss *mcp.ServerSession, method string, stateless bool) error {
	var caps *mcp.ClientCapabilities
	if ip := ss.InitializeParams(); ip != nil {
		caps = ip.Capabilities
	}
	sessionless := mcpsession.SpeaksSessionless(ss)
	if stateless && !sessionless {
		return noSession(method)
	}
	if !mcpmethod.IsClientRequest(method) {
		return &host.RPCError{Code: host.CodeMethodNotFound, Message: method + " is not a request a server may send a client"}
	}
	capability, declared := mcpmethod.Capability(method), false
	switch capability {
	case "sampling":
		declared = caps != nil && caps.Sampling != nil
	case "elicitation":
		declared = caps != nil && caps.Elicitation != nil
	default:
		// roots: the SDK cannot tell "roots": {} from no roots
		// capability (its Roots is a struct): the client is asked, and
		// one without roots answers with its error.
		return nil
	}
	if !declared {
		msg := "the MCP client that made this call did not declare the " + capability + " capability"
		if sessionless {
			return &missingCapability{RPCError: host.RPCError{Code: host.CodeMethodNotFound, Message: msg}, capability: capability}
		}
		return &host.RPCError{Code: host.CodeMethodNotFound, Message: msg}
	}
	if stateless {
		return noSession(method)
	}
	return nil
}

// noSession is the error of a request to the client of a request without
// a session.
func noSession(method string) error {
	return &host.RPCError{Code: host.CodeMethodNotFound, Message: "cannot reach the MCP client that made this call: its request has no session (a request of MCP 2026-07-28, which has none, or /mcp served with --mcp-stateless; a session of an older revision carries such requests)"}
}

// missingCapability is canAsk's error for a 2026-07-28 client that did
// not declare capability in its request: the plugin gets the -32601 it
// holds, the client rpc's error for its call (refusal).
type missingCapability struct {
	host.RPCError
	capability string // "sampling", "elicitation"
}

// ClientError is the client's error for the call (rounds.Refusal): -32021 (SEP-2575,
// MissingRequiredClientCapabilityError) with data
// {"requiredCapabilities": {capability: {}}}.
func (m *missingCapability) ClientError() *jsonrpc.Error {
	data, _ := json.Marshal(map[string]any{"requiredCapabilities": map[string]any{m.capability: map[string]any{}}})
	return &jsonrpc.Error{Code: codeMissingCapability, Message: m.Message, Data: data}
}

// codeMissingCapability is MCP's MissingRequiredClientCapabilityError
// (2026-07-28, SEP-2575): a request needs a capability the client did
// not declare.
const codeMissingCapability = -32021

// refusal ends a call with a JSON-RPC error instead of its result
// (withRefusal): set once, it cancels the call.
type refusal struct {
	cancel context.CancelCauseFunc
	mu     sync.Mutex
	err    *jsonrpc.Error
}

// refusalKey is the context key of a call's *refusal.
type refusalKey struct{}

// withRefusal returns ctx, cancelled when the call is refused (refuse),
// and the function that returns the refusal's error (nil when none): the
// host's own, else a declared MCP server's JSON-RPC error for the call's
// mcpsession.Request (passed on as the server sent it).
func withRefusal(ctx context.Context, req *mcpsession.Request) (context.Context, func() *jsonrpc.Error) {
	ctx, cancel := context.WithCancelCause(ctx)
	r := &refusal{cancel: cancel}
	return context.WithValue(ctx, refusalKey{}, r), func() *jsonrpc.Error {
		r.mu.Lock()
		defer r.mu.Unlock()
		if r.err == nil && req != nil {
			return req.Err()
		}
		return r.err
	}
}

// noRefusal is the refusal check of a call that cannot be refused.
func noRefusal() *jsonrpc.Error { return nil }

// refuseCall refuses the call of ctx (withRefusal) with err, the first
// refusal winning, and cancels it; a ctx without one is left as is.
func refuseCall(ctx context.Context, err *jsonrpc.Error) {
	r, ok := ctx.Value(refusalKey{}).(*refusal)
	if !ok {
		return
	}
	r.mu.Lock()
	if r.err == nil {
		r.err = err
	}
	r.mu.Unlock()
	r.cancel(err)
}

// ask sends request method with params (JSON) to the client of ss with
// ctx, the call's (it carries the tools/call request's id, so that over
// streamable HTTP the request travels on that request's stream), and
// returns the client's answer as the SDK decoded it.
//
// elicitation/create goes past ss.Elicit, straight to the SDK's sending
// handler (s.send): Elicit checks the answer against the requested
// schema and fills in the schema's defaults, so that the plugin (a
// server behind the host) would get members the user never gave, and an
// answer it would accept would fail the call. The answer is the client's
// (the plugin judges it); only the mode is checked against the client's
// capabilities, as Elicit does (elicitMode).
func (s *Server) ask(ctx context.Context, ss *mcp.ServerSession, method string, params []byte) (any, error) {
	ir, err := rounds.InputRequest(method, params)
	if err != nil {
		return nil, &host.RPCError{Code: jsonrpc.CodeInvalidParams, Message: err.Error()}
	}
	switch p := ir.(type) {
	case *mcp.CreateMessageWithToolsParams:
		return ss.CreateMessageWithTools(ctx, p)
	case *mcp.ElicitParams:
		if err := elicitMode(ss, p); err != nil {
			return nil, err
		}
		res, err := s.send(ctx, method, &mcp.ServerRequest[mcp.Params]{Session: ss, Params: p})
		if err != nil {
			return nil, err
		}
		return asSent(res), nil
	default: // roots/list (canAsk let nothing else through)
		return ss.ListRoots(ctx, p.(*mcp.ListRootsParams))
	}
}

// asSent is res, a client's answer as the SDK decoded it, as the client
// wrote it: the JSON it was decoded from (member order, numbers as
// written, no schema default filled in) when the SDK keeps it (an
// ElicitResult's RawJSON, patches/go-sdk 0010), else res itself (the SDK
// as released: re-encoded, members sorted).
func asSent(res any) any {
	if r, ok := res.(interface{ RawJSON() json.RawMessage }); ok && len(r.RawJSON()) > 0 {
		return r.RawJSON()
	}
	return res
}

// elicitMode sets p.Mode when the request left it out ("url" when it
// names a URL or an elicitationId, else "form"; MCP 2025-11-25
// "Elicitation": the mode is required on the wire) and refuses an
// elicitation whose mode the client of ss did not declare (capabilities:
// form, url; a client that declares neither takes form), as ss.Elicit
// does. Errors: a *host.RPCError -32602 saying which.
func elicitMode(ss *mcp.ServerSession, p *mcp.ElicitParams) error {
	if p.Mode == "" {
		p.Mode = "form"
		if p.URL != "" || p.ElicitationID != "" {
			p.Mode = "url"
		}
	}
	var caps *mcp.ElicitationCapabilities
	if ip := ss.InitializeParams(); ip != nil && ip.Capabilities != nil {
		caps = ip.Capabilities.Elicitation
	}
	if caps == nil {
		return nil // canAsk's to refuse
	}
	if (p.Mode == "url" && caps.URL == nil) || (p.Mode != "url" && caps.Form == nil && caps.URL != nil) {
		return &host.RPCError{Code: jsonrpc.CodeInvalidParams, Message: "the MCP client that made this call did not declare " + p.Mode + " elicitation"}
	}
	return nil
}

// rpcError is the error the plugin gets for a request to the client that
// failed with err: the client's JSON-RPC error as it is, anything else
// (the SDK refusing to send it, the session gone) -32603 with its text;
// never prefixed with the method, which the plugin (or its SDK) names.
func rpcError(err error) error {
	if re, ok := wire.AsRPCError(err); ok {
		return re
	}
	return &host.RPCError{Code: host.CodeInternalError, Message: err.Error()}
}

// withoutSession reports whether req has no session that could carry a
// request to its client (/mcp --mcp-stateless, or a request of 2026-07-28,
// not on stdio).
func withoutSession(req mcp.Request, s *Server) bool {
	ss, _ := req.GetSession().(*mcp.ServerSession)
	extra := req.GetExtra()
	return ss == nil || ss.ID() == "" && extra != nil && extra.Header != nil && !s.chans.OnStdio()
}

// roundsClient is the rounds layer's way of asking a Server's clients
// (rounds.Client).
type roundsClient struct{ s *Server }

// CanAsk is canAsk; noSession for no session (ss nil).
func (c roundsClient) CanAsk(ss *mcp.ServerSession, method string, stateless bool) error {
	if ss == nil {
		return noSession(method)
	}
	return canAsk(ss, method, stateless)
}

// Ask is askClient.
func (c roundsClient) Ask(ctx context.Context, ss *mcp.ServerSession, method string, params []byte) ([]byte, error) {
	return c.s.askClient(ctx, ss, method, params)
}

// Stateless is withoutSession.
func (c roundsClient) Stateless(req mcp.Request) bool { return withoutSession(req, c.s) }
