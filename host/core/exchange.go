package core

import (
	"context"
	"sync/atomic"

	"github.com/opentool-host/opentool-host/internal/mcpsession"
)

// Exchange is the caller's side of a call's messages, and who an MCP
// caller is to a declared MCP server (Session, Sessionless). The caller
// hands it to the call path with the call (host.Host.CallResult,
// StreamCall, Request: nil for none); it reaches a plugin of protocol 3
// as frames of the plugin's call stream (its Meta, its messages: the
// host's side converts them, internal/wire), and a declared plugin served
// in the host's process as the Exchange itself (supervise.Direct). Its
// functions are called from the call's goroutines, never after the call
// returned.
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
	// ends with the call. An error that is an *rpcerr.Error (wire.RPCError)
	// reaches the plugin as it is; any other as JSON-RPC error -32603 with
	// its text. Nil: every request is answered -32601.
	Request func(ctx context.Context, method string, params []byte) ([]byte, error)
	// Item, when set, is told of each item of a streaming function whose
	// items the host collects into one result for the caller (tool
	// search's call_tool naming a streaming function; host.CollectItems'
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

// CallerMeta returns x.Meta, nil for a nil x.
func (x *Exchange) CallerMeta() []byte {
	if x == nil {
		return nil
	}
	return x.Meta
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
