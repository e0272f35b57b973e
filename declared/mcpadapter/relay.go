package mcpadapter

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"golang.org/x/time/rate"

	"github.com/opentool-host/opentool-host/host/core"
	"github.com/opentool-host/opentool-host/host/tasks/mcptasks"
	"github.com/opentool-host/opentool-host/internal/mcpsession"
	"github.com/opentool-host/opentool-host/internal/wire"
	"github.com/opentool-host/opentool-host/protocol/mcpmethod"
)

// What the server says to its client during a call goes to the caller of
// that call, through the caller's core.Exchange (Notify, Request: the
// call's relayCall):
//
//	server sends                    the adapter
//	notifications/progress          forwards it to the call whose progress token
//	                                it carries, with the caller's own token: the
//	                                adapter gives the server a token of its own
//	                                per call ("opentool-host/N") when, and only
//	                                when, the caller sent one
//	notifications/message           forwards it to the call in flight when there
//	                                is exactly one; else (none, or several: MCP
//	                                over stdio does not say which request a
//	                                message belongs to) logs it under the
//	                                plugin's name. After initialize the adapter
//	                                asks a server with the logging capability
//	                                for every level (logging/setLevel debug):
//	                                the host filters per client
//	sampling/createMessage,         relays it to the caller of the call in
//	elicitation/create, roots/list  flight (exactly one, as for messages) and
//	                                answers with the caller's result or error;
//	                                with none or several in flight, or when the
//	                                host says no client can answer (-32601 on
//	                                the plugin wire): JSON-RPC error -32603
//	                                saying why (the SDK would replace the
//	                                message of a -32601); roots/list with no
//	                                call in flight: an empty list (below); on
//	                                stdio every request with no call in flight
//	                                goes to the host's only client (sole)
//
// Roots are the one thing a client gives a server that MCP scopes to the
// session rather than to a request: a server may keep the roots it was
// given and answer later calls from them until the client sends
// notifications/roots/list_changed. The adapter has one session with the
// server for every caller, so the roots one caller gave would reach the
// next. Hence the roots fence: from the moment the server's roots/list is
// relayed to a call (the only one in flight) no other call starts; when
// that call ends the adapter sends notifications/roots/list_changed, waits
// for the server to ask roots/list again (answered with an empty list: no
// call is in flight, no caller's roots) and a ping round trip, at most
// rootsResyncWait, and only then lets the next call through. A server that
// asks for roots in each call (and keeps none) pays that wait once after
// each call that asked, at the start of the next call to it; one that
// keeps roots and ignores list_changed is beyond the adapter's reach.
//
// The caller's _meta travels with tools/call as its _meta, but for its
// own protocol context (callerSessionMeta).
//
// All of the above is the shared session's. A client's own upstream
// session (clients.go) has a relay of its own whose client is set: what
// the server sends outside a call goes to that client's session, and
// there is no roots fence (no other caller shares the session). Its
// requests outside calls share the session's maxAsking places with those
// during calls, and end when the client's session ends (askOutside);
// every connection reads at most maxServerCalls of the server's requests
// not yet answered (boundCalls).

// relay tracks the calls in flight for the server's messages.
type relay struct {
	server string
	log    hclog.Logger
	// client, for a client's own upstream session (clients.go), is that
	// client: what the server sends outside a call goes to it, and there
	// is no roots fence. nil for the shared session.
	client *mcpsession.Session
	// hold, for a client's own upstream session, counts a request of the
	// server to that client in flight until its release (Adapter.holdOf).
	hold func() (release func())
	// own, for a client's own upstream session, is that session: a call
	// whose connection broke when it ended by itself is the plugin's exit
	// (ownexit.go). nil for the shared session.
	own *upstream

	// sole, for the shared session of a host with one client
	// (Options.Sole), is that client: asked what the server sends
	// outside calls, and no roots fence. nil otherwise.
	sole *mcpsession.Sole

	// lendingEnds, for the shared session of a per-client server, ends
	// its lending of read-only calls (Adapter.endLending, borrow.go),
	// saying why; nil otherwise.
	lendingEnds func(why string)

	// rootsChanged sends the server notifications/roots/list_changed
	// and ping a ping (both set once connected, session.go).
	rootsChanged func()
	ping         func(context.Context)

	mu     sync.Mutex
	next   int64
	tokens map[string]*relayCall // the adapter's progress token → call
	calls  map[*relayCall]bool   // every call in flight
	// fence, while the server may hold a caller's roots, holds new calls
	// back; closed and nil once the server was told they changed.
	fence chan struct{}
	// asked is told when the server asks roots/list with no call in
	// flight (buffer 1).
	asked chan struct{}
	// asking holds one token per request of the server waiting for a
	// caller's or its client's answer, during calls and outside them (at
	// most maxAsking per session with the server: the shared session's,
	// each client's own): beyond, the server's requests are refused at
	// once, so that a server cannot make the host hold a goroutine and
	// the request per request it sends.
	asking chan struct{}
	// closed is closed when the session with the server closes (close):
	// requests outside calls still waiting end with it.
	closed    chan struct{}
	closeOnce sync.Once
	// logs bounds the server's log messages the host logs (outside
	// calls) to logRate per second, in bursts of logBurst; dropped counts
	// those left out since the last one logged.
	logs    *rate.Limiter
	dropped atomic.Int64
	// outside takes the log messages sent outside calls for the MCP
	// clients that asked for them (Adapter.LogMessages).
	outside chan json.RawMessage
}

// maxAsking is the most requests of one session with a server
// (sampling/createMessage, elicitation/create, roots/list), during calls
// or outside them, that wait for callers' answers at once.
const maxAsking = 16

// logRate and logBurst bound the server's log messages logged by the
// host outside calls, per second and at once.
const (
	logRate  = 20
	logBurst = 100
)

// relayCall is one tools/call in flight.
type relayCall struct {
	ctx   context.Context // the call's
	x     *core.Exchange  // its caller's side: the server's messages go to it (nil: none)
	token any             // the caller's progress token; nil: none
	roots bool            // the server's roots/list was relayed to its caller
	// shared: a client session's call served by the shared session for
	// want of a place of its own (placeFor): the server's requests during
	// it are refused, never relayed to another caller.
	shared bool
	// lent: a client session's call lent the shared session (borrow.go):
	// the server's requests and log messages during it are not relayed,
	// and the call is made again on the client's own session.
	lent *lent
}

// rootsResyncWait is the longest the roots fence waits for the server to
// ask roots/list again after notifications/roots/list_changed.
const rootsResyncWait = 500 * time.Millisecond

func newRelay(server string, log hclog.Logger) *relay {
	return &relay{server: server, log: log, tokens: map[string]*relayCall{}, calls: map[*relayCall]bool{}, asked: make(chan struct{}, 1), closed: make(chan struct{}),
		asking: make(chan struct{}, maxAsking), logs: rate.NewLimiter(logRate, logBurst), outside: make(chan json.RawMessage, logBurst)}
}

// callerSessionMeta are the _meta keys that carry a request's own
// protocol context (SEP-2575, MCP 2026-07-28: the revision, client,
// per-request capabilities and log level of the host's client). The
// adapter's session with the server has its own (ProtocolVersion, the
// adapter's capabilities), so they never reach the server: with them a
// server would take a call for one of a revision the adapter did not
// negotiate, or answer a plain call with a task on the strength of the
// caller's opt-in to the Tasks extension (tasks.go).
var callerSessionMeta = []string{mcp.MetaKeyProtocolVersion, mcp.MetaKeyClientInfo, mcptasks.MetaClientCapabilities, mcp.MetaKeyLogLevel}

// begin registers a call made with ctx for the caller of x (shared and
// loan: route's), once no roots fence holds it back, and returns it with
// the _meta to send the server: the caller's (x.Meta),
// with a progress token of the adapter's in place of the caller's,
// without callerSessionMeta. end must follow. Errors: ctx's, when it ends
// behind the fence.
func (r *relay) begin(ctx context.Context, x *core.Exchange, shared bool, loan *lent) (*relayCall, mcp.Meta, error) {
	meta := mcp.Meta(callerMeta(x))
	for _, k := range callerSessionMeta {
		delete(meta, k)
	}
	c := &relayCall{ctx: ctx, x: x, shared: shared, lent: loan}
	r.mu.Lock()
	defer r.mu.Unlock()
	for r.fence != nil {
		fence := r.fence
		r.mu.Unlock()
		select {
		case <-fence:
		case <-ctx.Done():
			r.mu.Lock()
			return nil, nil, ctx.Err()
		}
		r.mu.Lock()
	}
	r.calls[c] = true
	if tok, ok := meta["progressToken"]; ok && tok != nil {
		r.next++
		own := fmt.Sprintf("opentool-host/%d", r.next)
		r.tokens[own] = c
		c.token = tok
		meta["progressToken"] = own
	}
	return c, meta, nil
}

// end forgets c; when its caller's roots were relayed to the server, the
// server is told they changed before the next call starts (resync).
func (r *relay) end(c *relayCall) {
	r.mu.Lock()
	defer r.mu.Unlock()
	delete(r.calls, c)
	for k, v := range r.tokens {
		if v == c {
			delete(r.tokens, k)
		}
	}
	if c.roots {
		go r.resync(r.fence)
	}
}

// resync tells the server the roots changed, waits (at most
// rootsResyncWait) for it to ask roots/list again and for a ping round
// trip, then lifts fence.
func (r *relay) resync(fence chan struct{}) {
	ctx, cancel := context.WithTimeout(context.Background(), rootsResyncWait)
	defer cancel()
	select {
	case <-r.asked: // one from before, not an answer to this
	default:
	}
	if r.rootsChanged != nil {
		r.rootsChanged()
	}
	select {
	case <-r.asked:
		if r.ping != nil {
			r.ping(ctx)
		}
	case <-ctx.Done():
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	close(fence)
	r.fence = nil
}

// holdRoots puts up the roots fence for c, the only call in flight, whose
// caller is asked roots/list for the server. It reports whether the
// fence is new, and why not when c is no longer the only call in flight.
func (r *relay) holdRoots(c *relayCall) (bool, string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.calls) != 1 || !r.calls[c] {
		return false, fmt.Sprintf("%d tools/calls are in flight and MCP does not say which one it belongs to", len(r.calls))
	}
	if c.roots {
		return false, ""
	}
	c.roots = true
	r.fence = make(chan struct{})
	return true, ""
}

// liftRoots takes down the fence holdRoots put up for c.
func (r *relay) liftRoots(c *relayCall) {
	r.mu.Lock()
	defer r.mu.Unlock()
	c.roots = false
	close(r.fence)
	r.fence = nil
}

// noCall is why no call can be relayed to when none is in flight.
const noCall = "no tools/call is in flight"

// only returns the one call in flight, or nil and why there is none.
func (r *relay) only() (*relayCall, string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	switch len(r.calls) {
	case 0:
		return nil, noCall
	case 1:
		for c := range r.calls {
			return c, ""
		}
	}
	return nil, fmt.Sprintf("%d tools/calls are in flight and MCP does not say which one it belongs to", len(r.calls))
}

// tap relays msg when it is a notifications/progress or
// notifications/message, and reports whether it did (tapConn: over
// stdio they are relayed in the order the server sent them, before the
// result that follows them; over HTTP the SDK's handlers relay them).
func (r *relay) tap(msg jsonrpc.Message) bool {
	req, ok := msg.(*jsonrpc.Request)
	if !ok || req.IsCall() {
		return false
	}
	switch req.Method {
	case mcpmethod.Progress:
		var p mcp.ProgressNotificationParams
		if json.Unmarshal(req.Params, &p) != nil {
			return false
		}
		r.progress(&p)
		return true
	case mcpmethod.LoggingMessage:
		var p mcp.LoggingMessageParams
		if json.Unmarshal(req.Params, &p) != nil {
			return false
		}
		r.message(&p)
		return true
	}
	return false
}

// talked is told that the server sent what (a request, a log message) on
// the session: every call in flight that was lent the shared session
// (borrow.go) is to be made again on its client's own session, and
// lending ends. It reports whether any was.
func (r *relay) talked(what string) bool {
	if r.lendingEnds == nil {
		return false
	}
	r.mu.Lock()
	redone := false
	for c := range r.calls {
		if c.lent != nil {
			c.lent.again.Store(true)
			redone = true
		}
	}
	r.mu.Unlock()
	if redone {
		r.lendingEnds("the server sent " + what + " during a call lent the shared session")
	}
	return redone
}

// progress forwards the server's notifications/progress to its call.
func (r *relay) progress(p *mcp.ProgressNotificationParams) {
	own, _ := p.ProgressToken.(string)
	r.mu.Lock()
	c := r.tokens[own]
	r.mu.Unlock()
	if c == nil {
		r.log.Debug("MCP server progress for no call in flight dropped", "server", r.server, "token", p.ProgressToken)
		return
	}
	if c.lent != nil && c.lent.again.Load() {
		return // the call made again on its client's own session reports its own
	}
	q := *p
	q.ProgressToken = c.token
	c.notify(mcpmethod.Progress, &q)
}

// message forwards the server's notifications/message to the one call in
// flight; else it hands it to the host for the clients that asked for
// log messages (Adapter.LogMessages) and logs it, both at most logRate a
// second.
func (r *relay) message(p *mcp.LoggingMessageParams) {
	if r.talked("a log message") {
		// Whose it is MCP does not say; a lent call's is its client's
		// alone, and that call is made again on the client's own session.
		data, _ := json.Marshal(p.Data)
		r.log.Debug("MCP server log message during a call lent the shared session dropped", "server", r.server, "level", p.Level, "logger", p.Logger, "data", string(data))
		return
	}
	if c, _ := r.only(); c != nil {
		c.notify(mcpmethod.LoggingMessage, p)
		return
	}
	if r.client != nil {
		r.sendOutside(p)
		return
	}
	if !r.logs.Allow() {
		r.dropped.Add(1)
		return
	}
	if b, err := json.Marshal(p); err == nil {
		select {
		case r.outside <- b:
		default: // the host is behind: this one is for the log only
		}
	}
	data, _ := json.Marshal(p.Data)
	r.log.Debug("MCP server log message (no single call in flight to send it to)", "server", r.server, "level", p.Level, "logger", p.Logger, "data", string(data), "dropped_before", r.dropped.Swap(0))
}

// request relays the server's request method (sampling/createMessage,
// elicitation/create, roots/list) with params to the caller of the one
// call in flight and returns its result (JSON) as the caller gave it.
// roots/list with no call in flight is answered with an empty list, no
// caller's roots (see the roots fence above). Errors: the caller's
// *wire.RPCError; -32603 when no single call is in flight.
func (r *relay) request(method string, params any) (json.RawMessage, error) {
	if r.own != nil {
		r.own.spoiled.Store(true) // the client's answer is state its session holds (retire.go)
	}
	if r.lendingEnds != nil && method == mcpmethod.RootsList {
		r.lendingEnds("the server asked the shared session for roots")
	}
	if r.talked("a request (" + method + ")") {
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: "cannot be relayed to an MCP client: a call in flight was lent this server's shared session, and is made again on its client's own session"}
	}
	c, why := r.only()
	if to := r.outsideClient(); to != nil && c == nil {
		return r.askOutside(to, method, params)
	}
	first := false
	if c != nil && method == mcpmethod.RootsList && r.client == nil && r.sole == nil {
		first, why = r.holdRoots(c)
	}
	switch {
	case c == nil && method == mcpmethod.RootsList && why == noCall:
		select {
		case r.asked <- struct{}{}:
		default:
		}
		return json.RawMessage(`{"roots":[]}`), nil
	case c == nil || why != "":
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: "cannot be relayed to an MCP client: " + why}
	case c.shared:
		if first {
			r.liftRoots(c)
		}
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: "cannot be relayed to an MCP client: the client of the call in flight is served by this server's shared session (every one of its maxSessions places is in use, or the client's API key holds its maxSessionsPerKey share of them), which does not ask it"}
	}
	raw, err := r.askCall(c, first, method, params)
	if to := r.outsideClient(); to != nil && errors.Is(err, wire.ErrNoCaller) {
		// The call ended as the server asked: it was not the call's
		// request, and the host's only client is there to answer it.
		return r.askOutside(to, method, params)
	}
	if err != nil {
		return nil, toRPC(err)
	}
	return raw, nil
}

// askCall sends the server's request method to the caller of call c
// and returns its result as the caller gave it; first: c's roots fence
// is new (holdRoots), taken down when the caller gave no roots. Errors:
// take's; the caller's (wire.ErrNoCaller once c ended).
func (r *relay) askCall(c *relayCall, first bool, method string, params any) (json.RawMessage, error) {
	release, err := r.take()
	if err != nil {
		if first {
			r.liftRoots(c)
		}
		return nil, err
	}
	defer release()
	raw, err := c.ask(method, params)
	if err != nil && first {
		r.liftRoots(c) // the server was given no roots
	}
	return raw, err
}

// outsideClient is the client the server's requests outside calls go
// to: r's own client, else the host's only one (sole) once it
// initialized; nil: none (answered as above).
func (r *relay) outsideClient() *mcpsession.Session {
	if r.client != nil {
		return r.client
	}
	if r.sole != nil {
		return r.sole.Session()
	}
	return nil
}

// take holds one of the maxAsking places of a request of the server
// waiting for a client until release. Errors: -32603 at once when every
// place is held.
func (r *relay) take() (release func(), err error) {
	select {
	case r.asking <- struct{}{}:
		return func() { <-r.asking }, nil
	default:
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: fmt.Sprintf("cannot be relayed to an MCP client: %d requests of this server already wait for the client; answer or wait for one of them first", maxAsking)}
	}
}

// close ends every request of the server to r's client still waiting
// for its answer (askOutside); the session with the server is closing.
func (r *relay) close() {
	r.closeOnce.Do(func() { close(r.closed) })
}

// toRPC is the JSON-RPC error the server gets for a request to its
// client that failed with err. It does not name the request's method:
// the server sent it, and its SDK names it ("calling \"elicitation/create\": ...").
func toRPC(err error) error {
	var re *wire.RPCError
	var je *jsonrpc.Error
	switch {
	case errors.As(err, &re) && re.Code == jsonrpc.CodeMethodNotFound:
		// The SDK's JSON-RPC layer answers every -32601 with its own
		// "method not found" message, which would hide why (no client can
		// answer, and which): -32603 keeps the message.
		return &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: re.Message, Data: re.Data}
	case errors.As(err, &re):
		return &jsonrpc.Error{Code: int64(re.Code), Message: re.Message, Data: re.Data}
	case errors.As(err, &je) && je.Code == jsonrpc.CodeMethodNotFound:
		return &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: je.Message, Data: je.Data}
	case errors.As(err, &je):
		return je
	}
	return &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: err.Error()}
}

// inFlight reports whether a call is in flight through r, or a roots
// resync under way.
func (r *relay) inFlight() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.calls) > 0 || r.fence != nil
}

// callerMeta is x's _meta (core.Exchange.Meta) decoded, nil when x has
// none or it does not decode.
func callerMeta(x *core.Exchange) map[string]any {
	return wire.DecodeMeta(x.CallerMeta())
}

// notify sends notification method with params (encoded) to c's caller
// (core.Exchange.Notify); dropped when it takes none or params do not
// encode.
func (c *relayCall) notify(method string, params any) {
	if c.x == nil || c.x.Notify == nil {
		return
	}
	if b, err := json.Marshal(params); err == nil {
		c.x.Notify(method, b)
	}
}

// ask sends request method with params (encoded) to c's caller
// (core.Exchange.Request) and returns its result. Errors: the caller's
// (a *wire.RPCError as it is); -32601 when the caller can answer none
// (an OpenTool caller, the host's own); wire.ErrNoCaller once c's call
// has ended.
func (c *relayCall) ask(method string, params any) (json.RawMessage, error) {
	if c.ctx.Err() != nil {
		return nil, wire.ErrNoCaller
	}
	if c.x == nil || c.x.Request == nil {
		return nil, &wire.RPCError{Code: wire.CodeMethodNotFound, Message: "the caller of the call in flight is not an MCP client that can answer it"}
	}
	b, err := json.Marshal(params)
	if err != nil {
		return nil, err
	}
	res, err := c.x.Request(c.ctx, method, b)
	if err != nil && c.ctx.Err() != nil {
		return nil, wire.ErrNoCaller
	}
	return res, err
}
