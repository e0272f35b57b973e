// Package mcpsession is one downstream MCP client session, as the host's
// MCP front end (package mcpapi) holds it, and one request of a client
// without a session (MCP 2026-07-28), as the front end hands them to a
// declared MCP server served in the host's process (package mcpadapter)
// in the Exchange of the call or request (core.Exchange: Session,
// Sessionless), so that the server can give that client an upstream
// session of its own. The identity is the *Session (or *Request) value
// the front end made: nothing a client sends (params._meta included) can
// name or reach another client's. The package puts nothing on a context.
package mcpsession

import (
	"context"
	"encoding/json"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Session is one downstream MCP client session with an Mcp-Session-Id.
// The front end fills every field before the first request carries it.
type Session struct {
	// ID is the session's Mcp-Session-Id (for logs only: identity is the
	// pointer).
	ID string
	// Init is what the client sent in initialize: its protocol version,
	// clientInfo and capabilities (extensions included). Not nil.
	Init *mcp.InitializeParams
	// Key is the name of the API key (access grant) that opened the
	// session, "" with keys off (every caller is then one key): a
	// declared MCP server holds each key to its share of its places
	// (mcpadapter). Every request of the session is the same key's (the
	// SDK refuses another one's).
	Key string
	// Keys is how many API keys were in force when the session opened,
	// 0 with keys off: with more than one, a declared MCP server's
	// places are divided among keys by default (mcpadapter).
	Keys int
	// Done is closed when the session ends: DELETE, its idle timeout,
	// its key revoked, the host's shutdown.
	Done <-chan struct{}
	// Ask sends the client request method (sampling/createMessage,
	// elicitation/create, roots/list) with params (JSON) on the session,
	// outside any call, and returns the result (JSON). Errors: a
	// *jsonrpc.Error (the client's, or -32601 when the client lacks the
	// capability), ctx's.
	Ask func(ctx context.Context, method string, params json.RawMessage) (json.RawMessage, error)
	// Log sends notifications/message to the client, dropped below the
	// level it set (none set: dropped).
	Log func(ctx context.Context, p *mcp.LoggingMessageParams)
	// Updated sends notifications/resources/updated for uri to the
	// client when it subscribed to uri on its own upstream session
	// (resources/subscribe marked with core.Exchange.MarkOwn); anything else is
	// dropped: a server cannot reach a client with an update it did not
	// ask for.
	Updated func(ctx context.Context, uri string)
	// ToolsChanged is called by a declared MCP server served in the
	// host's process (mcpadapter) when what the client's own upstream
	// session of it lists may have changed: the server sent
	// notifications/tools/list_changed on that session. The front end
	// then drops what it kept of the client's own lists (an upstream
	// session ends only with the client session or with its plugin's
	// run, which the front end sees by itself). Nil: nothing is called.
	// It must not block.
	ToolsChanged func()

	mu       sync.Mutex
	level    mcp.LoggingLevel // "" until logging/setLevel
	watchers map[*func(mcp.LoggingLevel)]bool
}

// Level returns the log level the client set with logging/setLevel, ""
// when it set none.
func (s *Session) Level() mcp.LoggingLevel {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.level
}

// SetLevel records the client's logging/setLevel and calls every
// watcher with it.
func (s *Session) SetLevel(l mcp.LoggingLevel) {
	s.mu.Lock()
	s.level = l
	ws := make([]func(mcp.LoggingLevel), 0, len(s.watchers))
	for w := range s.watchers {
		ws = append(ws, *w)
	}
	s.mu.Unlock()
	for _, w := range ws {
		w(l)
	}
}

// OnLevel calls f with each later SetLevel until stop is called.
func (s *Session) OnLevel(f func(mcp.LoggingLevel)) (stop func()) {
	p := &f
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.watchers == nil {
		s.watchers = map[*func(mcp.LoggingLevel)]bool{}
	}
	s.watchers[p] = true
	return func() {
		s.mu.Lock()
		defer s.mu.Unlock()
		delete(s.watchers, p)
	}
}

// Request is one request of a downstream MCP client of revision
// 2026-07-28 or later (SEP-2575: no session; it declares its protocol
// version, clientInfo and capabilities in its own _meta), carried in that
// request's core.Exchange from the host's MCP front end to a declared MCP
// server in the host's process, so that the server can be spoken to in
// the same revision for it: the caller's capabilities reach the server
// (which answers -32021 itself for one it needs and the caller lacks) and
// a multi-round-trip request (SEP-2322) travels both ways as the server
// wrote it. As with Session, identity is the pointer: nothing a client
// sends can make or reach another request's.
type Request struct {
	// Revision is the protocol version the request declared
	// (io.modelcontextprotocol/protocolVersion), 2026-07-28 or later.
	Revision string
	// Init is the request's own protocol context, from its _meta: its
	// protocol version (Revision), clientInfo (nil when it sent none)
	// and clientCapabilities, as a session's client sends them in
	// initialize; a declared MCP server's tools/list for the caller is
	// that of a client with this identity. Nil when the front end did not
	// set it.
	Init *mcp.InitializeParams
	// InputResponses is the retry's inputResponses as the client sent
	// them (nil: not a retry); RequestState is its requestState (""
	// for none): the server's own, passed on unread. Set by the front
	// end only for a requestState the host did not issue.
	InputResponses mcp.InputResponseMap
	RequestState   string

	mu      sync.Mutex
	claimed bool
	err     *jsonrpc.Error
}

// Relay records that a server was spoken to in the request's revision
// for it (its retry fields passed on), so that the front end knows the
// retry reached a server that can judge its requestState.
func (r *Request) Relay() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.claimed = true
}

// Relayed reports whether Relay was called.
func (r *Request) Relayed() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.claimed
}

// Fail records the server's JSON-RPC error for the request (the first
// one wins): the front end answers the client with it as it is (code,
// message, data) instead of the call's result.
func (r *Request) Fail(err *jsonrpc.Error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.err == nil {
		r.err = err
	}
}

// Err returns the error Fail recorded, nil for none.
func (r *Request) Err() *jsonrpc.Error {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.err
}
