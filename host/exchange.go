package host

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"

	"github.com/opentool-host/opentool-host/host/core"
	"github.com/opentool-host/opentool-host/internal/mcpresult"
	"github.com/opentool-host/opentool-host/internal/mcpsession"
	"github.com/opentool-host/opentool-host/internal/wire"
	"github.com/opentool-host/opentool-host/protocol/mcpmethod"
)

// What a call carries beyond its result, for plugins of protocol 3
// (internal/wire, message.go; docs/plugin-protocol.md): the caller's MCP
// _meta goes to the plugin; the plugin's notifications (progress, log
// messages) and requests (sampling, elicitation, roots) come back on the
// call's own stream, in order with its result, and go to the caller's
// Exchange; a unary result may be an MCP CallToolResult (CallResult).
// A caller without an Exchange (OpenTool /call, Open Tool Calling, the
// CLI) gets no notifications, its plugins' requests are answered with
// JSON-RPC error -32601 naming the method, and MCP results reach it as
// their projection (Call, internal/mcpresult).

// Exchange is the caller's side of a call's messages, and who an MCP
// caller is to a declared MCP server (Session, Sessionless). Put it on
// the call's context with WithExchange (an MCP front end also on that of
// a catalog request routed with Host.Request, for Session and
// Sessionless). Its functions are called from the call's goroutines,
// never after the call returned.
type Exchange struct {
	// Meta is the caller's MCP request _meta, a JSON object (nil: none),
	// handed to the plugin with the call (protocol 3).
	Meta []byte
	// Notify, when set, receives each notification the plugin sent
	// during the call (method and params as the plugin sent them:
	// notifications/progress, notifications/message, ...), in order and
	// before the result. It should not block long: the call's result
	// waits behind it. Nil: notifications are dropped.
	Notify func(method string, params []byte)
	// Request, when set, relays a request the plugin sent during the
	// call (sampling/createMessage, elicitation/create, roots/list) to
	// the caller and returns the caller's result (a JSON object); ctx
	// ends with the call. An error that is an *RPCError reaches the
	// plugin as it is; any other as JSON-RPC error -32603 with its text.
	// Nil: every request is answered -32601.
	Request func(ctx context.Context, method string, params []byte) ([]byte, error)
	// Item, when set, is told of each item of a streaming function whose
	// items the host collects into one result for the caller (tool
	// search's call_tool naming a streaming function; CollectItems'
	// each): n counts from 1, item is the item's JSON. It runs before the
	// next item is read: it should not block long. Nil: nothing is told.
	Item func(n int, item []byte)
	// Session is the caller's downstream MCP client session (the MCP
	// front end's mcpsession.Session for the SDK's session of the
	// request), nil for none (an OpenTool or OTC caller, a stateless or
	// sessionless MCP request, the host's own): a declared MCP server
	// served in the host's process (declared/mcpadapter) gives that
	// client an upstream session of its own. Identity is the pointer,
	// which only the front end makes: nothing a client sends (params,
	// _meta) can name or reach another client's.
	Session *mcpsession.Session
	// Sessionless is the request of a caller of MCP 2026-07-28 or later
	// (no session: its revision and identity from its own _meta), nil
	// for any other caller: a declared MCP server in the host's process
	// is spoken to in that revision for it. Made by the front end alone,
	// as Session is.
	Sessionless *mcpsession.Request

	// own, when TrackOwn made it, records that the request was served
	// on the client's own upstream session (MarkOwn); copies of the
	// Exchange share it.
	own *atomic.Bool
}

// ClientSession returns x.Session, nil for a nil x.
func (x *Exchange) ClientSession() *mcpsession.Session {
	if x == nil {
		return nil
	}
	return x.Session
}

// SessionlessRequest returns x.Sessionless, nil for a nil x.
func (x *Exchange) SessionlessRequest() *mcpsession.Request {
	if x == nil {
		return nil
	}
	return x.Sessionless
}

// TrackOwn makes x record whether the request it goes with is served on
// its client's own upstream session (MarkOwn) and returns the function
// that reports it (false until MarkOwn; read it once the request
// returned). Call it before x is handed on.
func (x *Exchange) TrackOwn() (own func() bool) {
	x.own = new(atomic.Bool)
	return x.own.Load
}

// MarkOwn records that x's request was served on the client's own
// upstream session, not the server's shared one (declared/mcpadapter);
// for a nil x or one without TrackOwn it does nothing.
func (x *Exchange) MarkOwn() {
	if x != nil && x.own != nil {
		x.own.Store(true)
	}
}

// collecting returns x as a call whose items the host collects into one
// result sees it: when x is told of each item (Item set: the caller
// asked for progress), the items are the call's progress, so the
// plugin's own notifications/progress are dropped and its other
// notifications reach x.Notify as they are; a caller would otherwise get
// each progress value twice (the plugin's, then its item's), where MCP
// requires progress to increase. x itself is left as it is; nil and an x
// without Item or Notify are returned as they are.
func (x *Exchange) collecting() *Exchange {
	if x == nil || x.Item == nil || x.Notify == nil {
		return x
	}
	c := *x
	c.Notify = func(method string, params []byte) {
		if method != methodProgress {
			x.Notify(method, params)
		}
	}
	return &c
}

// methodProgress is the MCP progress notification's method.
const methodProgress = mcpmethod.Progress

type exchangeKey struct{}

// WithExchange returns ctx carrying x, the caller's side of the messages
// of the calls made with ctx.
func WithExchange(ctx context.Context, x *Exchange) context.Context {
	return context.WithValue(ctx, exchangeKey{}, x)
}

// ExchangeFrom returns the Exchange on ctx (WithExchange), nil when there
// is none. Its methods are nil-safe: ExchangeFrom(ctx).ClientSession().
func ExchangeFrom(ctx context.Context) *Exchange {
	x, _ := ctx.Value(exchangeKey{}).(*Exchange)
	return x
}

// RPCError is a JSON-RPC 2.0 error object, as a plugin's request gets it
// back (Exchange.Request) and as Host.Request returns a plugin's.
type RPCError = wire.RPCError

// JSON-RPC error codes (JSON-RPC 2.0, section 5.1) of the host's own
// RPCErrors.
const (
	// CodeMethodNotFound: nobody can answer the request.
	CodeMethodNotFound = wire.CodeMethodNotFound
	// CodeInternalError: the relay failed.
	CodeInternalError = wire.CodeInternalError
)

// Result is a unary call's result as the plugin returned it
// (CallResult).
type Result struct {
	// JSON is the result: an OpenTool result object, or with MCP an MCP
	// CallToolResult (MCP 2025-11-25 "Tools", Tool Result).
	JSON []byte
	// MCP reports that JSON is an MCP CallToolResult (a plugin of
	// protocol 3 returned content blocks, structuredContent, isError).
	MCP bool
	// Decoded, with MCP, is JSON as the plugin decoded it itself when it
	// runs in the host's process (a declared MCP server: the
	// *mcp.CallToolResult the MCP SDK's client decoded from the server's
	// answer, JSON being the answer's bytes); nil otherwise. A front end
	// that would decode JSON into that type may take it instead (the
	// result is then decoded once); it is the caller's alone.
	Decoded any
}

// CallResult is Call for front ends that take MCP results as the plugin
// returned them (mcpapi): the same call path, the result unprojected.
// Errors: as Call's, except that an MCP result with isError is a Result,
// not a KindTool error.
func (h *Host) CallResult(ctx context.Context, fn string, args []byte) (Result, error) {
	r := &request{fn: fn, args: args}
	if err := h.invoke(ctx, r); err != nil {
		return Result{}, err
	}
	res := r.result
	if !charge(ctx, len(res)) {
		core.MemTrim.Note(len(res))
		return Result{}, h.errResultMemory(fn, len(res))
	}
	return Result{JSON: res, MCP: r.mcp, Decoded: r.decoded}, nil
}

// project is the OpenTool result object of r's MCP result res
// (internal/mcpresult): an isError result is the tool's error 500 with
// its text; a result that is not a CallToolResult is rejected.
func (r *request) project(res []byte) ([]byte, error) {
	obj, err := mcpresult.Project(res)
	var te *mcpresult.ToolError
	switch {
	case errors.As(err, &te):
		return nil, &core.Error{Kind: core.KindTool, Function: r.fn, Plugin: r.plugin, Code: 500, Message: te.Message}
	case err != nil:
		return nil, r.Fail(core.KindResultRejected, r.plugin, "the plugin's MCP result is "+err.Error(), err)
	}
	return obj, nil
}

// Message handles message m the plugin sent on call c of r: a
// notification goes to the Exchange's Notify (in order, before what
// follows it on the stream); a request to its Request in a goroutine of
// its own, whose answer goes back on c, so that the call's stream is
// read on meanwhile.
func (r *request) Message(ctx context.Context, c *wire.Call, m *wire.Message) {
	x := r.x
	if !m.IsRequest() {
		if x != nil && x.Notify != nil {
			x.Notify(m.Method, m.Params)
		}
		return
	}
	if x == nil || x.Request == nil {
		_ = c.Reply(wire.Reply{ID: m.ID, Error: &wire.RPCError{Code: wire.CodeMethodNotFound,
			Message: fmt.Sprintf("the caller of %q is not an MCP client that can answer it", r.fn)}})
		return
	}
	go func() {
		res, err := x.Request(ctx, m.Method, m.Params)
		rep := wire.Reply{ID: m.ID, Result: res}
		if err != nil {
			var re *wire.RPCError
			if !errors.As(err, &re) {
				re = &wire.RPCError{Code: wire.CodeInternalError, Message: err.Error()}
			}
			rep = wire.Reply{ID: m.ID, Error: re}
		}
		_ = c.Reply(rep) // a call that ended takes no reply
	}()
}
