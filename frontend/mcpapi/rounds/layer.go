// Package rounds serves multi-round-trip requests (MCP 2026-07-28,
// SEP-2322) on the host's MCP front end: the host's own rounds, in which
// a call of a 2026-07-28 client holds where its plugin asks the client
// something and answers with input_required (held.go), and a plugin's
// own rounds, passed through to a 2026-07-28 client or fulfilled for an
// older one with a session (plugin.go).
//
// It is a layer around the call: Layer.Install adds the host's rounds to
// an MCP SDK server as receiving middleware of tools/call
// (mcp.Server.AddReceivingMiddleware), which runs the rest of the
// server's handlers detached from the POST once the call asks; a
// plugin's rounds wrap the front end's own tools/call and prompts/get
// handlers (Layer.Tool, Layer.Prompt), inside the SDK's fulfilment of
// rounds for older clients. It depends on the front end's function
// look-up (Functions) and its requests to its clients (Client), not on
// the front end itself.
package rounds

import (
	"context"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/opentool-host/opentool-host/frontend/httpguard"
	"github.com/opentool-host/opentool-host/protocol/mcpmethod"
)

// Functions is the front end's look-up of the functions it serves as
// tools.
type Functions interface {
	// FromMCPServer reports whether tool name is served from an MCP
	// server's tool definition (a declared MCP server's; never the
	// host's own call_tool), which may run multi-round-trip requests of
	// its own.
	FromMCPServer(name string) bool
}

// Client is the front end's way of asking the client of a request.
type Client interface {
	// CanAsk reports why the client of ss cannot be asked method, nil
	// when it can; stateless: the request has no session to carry a
	// request and its answer; ss nil: no session at all. A Refusal
	// error also refuses the client's call itself.
	CanAsk(ss *mcp.ServerSession, method string, stateless bool) error
	// Ask sends request method with params (JSON) to the client of ss
	// on the request of ctx and returns its answer (JSON). Errors: a
	// *host.RPCError, the client's own or the host's.
	Ask(ctx context.Context, ss *mcp.ServerSession, method string, params []byte) ([]byte, error)
	// Stateless reports whether req has no session that could carry a
	// request to its client.
	Stateless(req mcp.Request) bool
}

// Refusal is an error of Client.CanAsk that refuses the client's call:
// ClientError is the JSON-RPC error the client gets for it (-32021 for a
// capability a 2026-07-28 client did not declare, SEP-2575).
type Refusal interface {
	error
	ClientError() *jsonrpc.Error
}

// Config configures a Layer. Functions, Client and Down are required.
type Config struct {
	// Functions looks up whether a tool is an MCP server's, whose
	// rounds are its own.
	Functions Functions
	// Client asks the clients.
	Client Client
	// Down is done when the host shuts down: it ends the calls held
	// between rounds, and no call is held after it.
	Down context.Context
	// ErrorMetaKey is the _meta key of an isError result that carries
	// the host's view of the failure (its "kind" and "code"), by which a
	// plugin's refusal of a retry is told.
	ErrorMetaKey string
}

// Layer is multi-round-trip requests on one MCP server. Create it with
// New; it is safe for concurrent use.
type Layer struct {
	cfg  Config
	held heldCalls // calls of 2026-07-28 clients across rounds (held.go)
}

// New returns the Layer of cfg.
func New(cfg Config) *Layer { return &Layer{cfg: cfg} }

// Install adds the host's rounds to srv: the tools/call middleware of a
// 2026-07-28 client's call without a session. Middleware added to srv
// later runs first: install the layer before the task layer (a task's
// call is held in its task, not across rounds) and the middleware that
// puts the caller's grant on the request's context (access.WithGrant).
// Install it once.
func (l *Layer) Install(srv *mcp.Server) {
	srv.AddReceivingMiddleware(l.heldMiddleware)
}

// heldMiddleware runs a tools/call of a 2026-07-28 client without a
// session across rounds (inRounds); any other request goes on as it is.
// The POST's end cancels the call until it asks (httpguard).
func (l *Layer) heldMiddleware(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		call, ok := req.(*mcp.CallToolRequest)
		if method != mcpmethod.ToolsCall || !ok || !sessionlessCall(call) {
			return next(ctx, method, req)
		}
		ctx, stop := httpguard.WithRequestCancel(ctx)
		defer stop()
		res, err := l.inRounds(ctx, call, func(ctx context.Context) (*mcp.CallToolResult, error) {
			r, err := next(ctx, method, req)
			res, _ := r.(*mcp.CallToolResult)
			return res, err
		})
		if res == nil {
			return nil, err
		}
		return res, err
	}
}

// HeldAsk returns how the call of ctx asks its client in its next round
// (the plugin's request method with params, JSON; the answer, JSON), nil
// when the call of ctx is not held across rounds.
func HeldAsk(ctx context.Context) func(ctx context.Context, method string, params []byte) ([]byte, error) {
	hc, _ := ctx.Value(heldKey{}).(*heldCall)
	if hc == nil {
		return nil
	}
	return hc.ask
}
