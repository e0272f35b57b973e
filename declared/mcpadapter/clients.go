package mcpadapter

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"sync"
	"sync/atomic"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"golang.org/x/time/rate"

	"github.com/opentool-host/opentool-host/host/access"
	"github.com/opentool-host/opentool-host/host/core"
	"github.com/opentool-host/opentool-host/internal/mcpsession"
	"github.com/opentool-host/opentool-host/internal/version"
	"github.com/opentool-host/opentool-host/pluginsdk"
	"github.com/opentool-host/opentool-host/protocol/mcpmethod"
)

// Per-client upstream sessions. A tools/call whose core.Exchange carries a
// downstream MCP session (core.Exchange.Session: set by the host's MCP front
// end, never by the client) goes, unless the declaration says "sessions":
// "shared", to an upstream session of that client's own, whatever it
// declares: what the server keeps per session (a note it was given, a
// browser it opened, a subscription, a log level, roots) is then that
// client's alone, and no capability a client declares says whether the
// server keeps anything (a client served by the shared session shares
// all of it with every other of its callers), but for a call of a tool
// the server annotates readOnlyHint while the shared session is as a
// new one would be, which the shared session is lent for (borrow.go).
// It is made at its first such call, or at its first tools/list when no
// client alike was listed before (clientTools, toolLists; of clients
// alike that list at once, the first, the others waiting for its list:
// toolLists.first); for a command server one more server
// process, started through the same launcher.Starter; initialized with
// the client's clientInfo and capabilities (extensions included) and its protocol
// version when it is ProtocolVersion or older; its log level set to the
// client's (logging/setLevel, again at each change); the server's
// notifications/message and its requests (sampling/createMessage,
// elicitation/create, roots/list) go to that client, during a call on the
// call's stream, outside one on the client's session; no roots fence (the
// roots are the client's own). The client's resources/subscribe and
// resources/unsubscribe go to its session too (catalog.go,
// catalogSession), and the server's notifications/resources/updated on it
// to that client alone, for the URIs it subscribed to there
// (mcpsession.Session.Updated). It is closed when the downstream session
// ends (DELETE, the SDK session's idle timeout, the key's revocation, the
// host's shutdown), when the adapter's Run ends (plugin restart, stop)
// and at Kill (killed), and when its place is reclaimed (below). At
// most Options.MaxSessions are open at once (the places), and at most
// its share (Options.MaxSessionsPerKey) for the client sessions of one
// API key (mcpsession.Session.Key), so that one key cannot leave another
// without a place. A client session that needs one when its key holds
// its share, or every place is taken, is never refused: the least
// recently used idle one is reclaimed for it (of its own key when at its
// share; else of a key over its share first, then of any key; idle: no
// call, list, read or server request of its client in flight, none for
// Options.ReclaimIdle, no resource subscription on it; its client gets a session of its own
// again at its next call, its kept tools dropped:
// mcpsession.Session.ToolsChanged), or, when none is idle, the client is
// served by the shared session (placeFor), said once in the log (once
// per key held to its share). A client served so is the shared
// session's client for that request: the server sees the host's
// clientInfo and capabilities, not its own, it is listed the shared
// session's tools, its roots, sampling and elicitation are not asked
// (a server request during its call is refused with -32603 saying why:
// it never reaches another client), and its log messages and resource
// subscriptions are the shared session's. With more than one API key
// in force, the tools/calls of a key's callers without a client session
// (OpenTool, OTC, MCP requests without a session id) go to an upstream
// session of that key's own (keySession), placed like a client's: what
// the server keeps per session for one key's callers is not another
// key's; their reads, prompts and completions go there too once it is
// up (catalogCaller). The shared session keeps serving those callers
// with keys off or one key (every caller one party), their reads before
// their key has a session and their subscriptions, the catalog's lists
// (resources, templates, prompts), the reads, gets and completions of
// client sessions without a session of their own (catalogSession), and
// the tool list the host routes calls by; a client session's tools/list
// is its own (clientTools), and a 2026-07-28 caller's that of a client
// like it (callers.go).

// DefaultMaxSessions is the default of Options.MaxSessions.
const DefaultMaxSessions = 16

// DefaultReclaimIdle is the default of Options.ReclaimIdle.
const DefaultReclaimIdle = 5 * time.Second

// upstreamInitTimeout bounds starting and initializing one client's
// upstream session.
const upstreamInitTimeout = 30 * time.Second

// upstream is one client's session with the server.
type upstream struct {
	ready chan struct{}      // closed once connected or failed
	cs    *mcp.ClientSession // set before ready closes; nil: failed
	err   error              // set before ready closes
	relay *relay
	proc  *process
	stop  func()        // stops following the client's log level
	tools ownTools      // the server's tools/list to this client, kept
	gone  chan struct{} // closed once it ended by itself and was forgotten (ownexit.go)

	// spoiled: something beyond listing and read-only calls reached it
	// (retire.go): it may hold what its client gave the server.
	spoiled atomic.Bool

	// Under clients.mu:
	reclaim    chan struct{} // closed when its place is reclaimed (placeFor), or it is retired (retire.go)
	retired    bool          // closed pristine and idle for its client to be lent the shared session (retire.go); set before reclaim closes
	usedAt     time.Time     // when its client's last request began or ended: least is least recently used (reclaimFor)
	subscribed bool          // a resources/subscribe went to it: never idle
}

// ownTools is the tools one upstream session was listed, kept until the
// server says its tools changed on it (notifications/tools/list_changed),
// so that checking a client's call against its own list (the MCP front
// end, on each tools/call) asks the server once.
type ownTools struct {
	mu    sync.Mutex
	tools []json.RawMessage // nil: none kept
	gen   int               // changes seen, so that a list under way when one comes is not kept
}

// get returns the tools kept (nil: none) and the generation to put with.
func (o *ownTools) get() ([]json.RawMessage, int) {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.tools, o.gen
}

// put keeps tools listed at generation gen, unless the tools changed
// since.
func (o *ownTools) put(tools []json.RawMessage, gen int) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if gen == o.gen {
		o.tools = tools
	}
}

// changed drops the tools kept.
func (o *ownTools) changed() {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.tools = nil
	o.gen++
}

// clients holds the upstream sessions by downstream session.
type clients struct {
	mu       sync.Mutex
	by       map[*mcpsession.Session]*upstream
	busy     map[*mcpsession.Session]int    // requests of each client in flight (holdOf)
	shared   map[*mcpsession.Session]bool   // clients once served by the shared session for want of a place, until they end: true since their last own session
	warned   bool                           // the shared session's serving of a client for want of a place was logged
	heldKeys map[string]bool                // keys whose holding of their share was logged (heldToShare)
	reclaims *rate.Limiter                  // places reclaimed (placeFor): MaxSessions at once, then reclaimRate a second; made on first use
	exits    map[*mcpsession.Session]int    // each client's own sessions' consecutive quick ends (ownexit.go: ownExited), until the client ends
	closed   bool                           // Run ended or Kill: no new ones
	ended    chan struct{}                  // closed with closed set (endedLocked)
	keyed    map[*access.Grant]*keyed       // the client session each grant's callers without one are served as (keySession)
	idents   map[*mcpsession.Session]string // each client's identityOf, until it ends (identityFor)

	sessionless sessionless // the session of SessionlessRevision (sessionless.go)
}

// served is how sessionFor serves a client session.
type served int

const (
	// servedOwn: by its own upstream session, or no client session (the
	// shared session's own callers).
	servedOwn served = iota
	// servedForPlace: by the shared session because no place is free for
	// it (placeFor): the server's requests during its call are refused.
	servedForPlace
)

// sessionOf returns the session and relay a call of client session
// sess (nil: none; callerSession) goes to (ctx bounds the wait): its
// own upstream session, made now when it has none and a place is free
// (placeFor), or the shared one; how says which for a client session.
// Errors: the adapter stopped, the upstream session's connection
// failure, ctx's.
func (a *Adapter) sessionOf(ctx context.Context, sess *mcpsession.Session) (cs *mcp.ClientSession, r *relay, how served, err error) {
	if sess == nil || a.opts.Shared {
		cs, err := a.sharedSession(ctx)
		return cs, a.relay, servedOwn, err
	}
	u, err := a.upstreamOf(sess)
	if err != nil {
		return nil, nil, servedOwn, err
	}
	if u == nil {
		cs, err := a.sharedSession(ctx)
		return cs, a.relay, servedForPlace, err
	}
	select {
	case <-u.ready:
	case <-ctx.Done():
		return nil, nil, servedOwn, ctx.Err()
	}
	if u.err != nil {
		return nil, nil, servedOwn, u.err
	}
	return u.cs, u.relay, servedOwn, nil
}

// maxKeyed bounds the grants keySession keeps a session for: past it,
// those without an upstream session are forgotten (a grant's session
// is an identity: it is made again at its grant's next call).
const maxKeyed = 1024

// keyed is the client session of one grant's callers without one
// (keySession); done, its Session.Done, is closed when the grant is
// revoked or the session is forgotten (maxKeyed), by whoever removes
// it from clients.keyed.
type keyed struct {
	s    *mcpsession.Session
	done chan struct{}
}

// keySession returns the client session that stands for the callers of
// the API key (or access token) whose grant g is, when they have none
// of their own (OpenTool, OTC, MCP requests without a session id),
// made now when it has none and mk says so (a call; a read finds one
// or goes to the shared session): their tools/calls go to an upstream
// session of that grant's own, made, bounded and reclaimed as a client
// session's (placeFor: it takes one place, within its key's share,
// with the keys in force: access.Grant.KeysInForce), so that what the
// server keeps per session for one key's callers is not another key's.
// It ends (its upstream session closed, what the adapter kept of it
// dropped) when the grant is revoked (access.Grant.Revoked: a reload
// of the keys file dropped or changed the key; a key given again has a
// grant, and a session, of its own) or forgotten. The server knows it
// as the adapter's client, without capabilities (such a caller cannot
// be asked for roots, sampling or elicitation; a server request
// outside a call is refused, -32601; its log messages outside calls
// are dropped). Nil without a grant or with one key in force (every
// caller is then one party, served by the shared session, at no
// process more) and for a server declared "sessions": "shared".
func (a *Adapter) keySession(g *access.Grant, mk bool) *mcpsession.Session {
	keys := g.KeysInForce() // 0 for nil
	if keys < 2 || a.opts.Shared {
		return nil
	}
	a.clients.mu.Lock()
	defer a.clients.mu.Unlock()
	if a.clients.closed {
		return nil // the shared session answers: stopped
	}
	if k := a.clients.keyed[g]; k != nil {
		return k.s
	}
	if !mk {
		return nil
	}
	if a.clients.keyed == nil {
		a.clients.keyed = map[*access.Grant]*keyed{}
	}
	if len(a.clients.keyed) >= maxKeyed {
		for gr, k := range a.clients.keyed {
			if a.clients.by[k.s] == nil && a.clients.busy[k.s] == 0 {
				a.forgetKeyed(gr, k)
			}
		}
	}
	k := &keyed{done: make(chan struct{})}
	k.s = &mcpsession.Session{
		ID:   "key " + g.Name(),
		Key:  g.Name(),
		Keys: keys,
		Done: k.done,
		Init: &mcp.InitializeParams{ProtocolVersion: ProtocolVersion, Capabilities: &mcp.ClientCapabilities{},
			ClientInfo: &mcp.Implementation{Name: "opentool-host-mcp-adapter", Title: "opentool-host", Version: version.Version}},
		Ask: func(context.Context, string, json.RawMessage) (json.RawMessage, error) {
			return nil, &jsonrpc.Error{Code: jsonrpc.CodeMethodNotFound, Message: "no client to ask: the callers of this session (an API key's OpenTool, OTC and sessionless MCP callers) are reached only during their calls"}
		},
		Log: func(context.Context, *mcp.LoggingMessageParams) {},
	}
	a.clients.keyed[g] = k
	if revoked := g.Revoked(); revoked != nil { // nil: a key never revoked (--api-key)
		go a.endKeyed(g, k, revoked, a.endedLocked())
	}
	return k.s
}

// endKeyed forgets g's session k once g is revoked, unless k is
// forgotten first or ended closes (the adapter's Run ended).
func (a *Adapter) endKeyed(g *access.Grant, k *keyed, revoked <-chan struct{}, ended <-chan struct{}) {
	select {
	case <-revoked:
	case <-k.done:
		return
	case <-ended:
		return
	}
	a.clients.mu.Lock()
	defer a.clients.mu.Unlock()
	if a.clients.keyed[g] == k {
		a.forgetKeyed(g, k)
	}
}

// forgetKeyed drops g's session k, still clients.keyed's, and ends it
// (under clients.mu).
func (a *Adapter) forgetKeyed(g *access.Grant, k *keyed) {
	delete(a.clients.keyed, g)
	close(k.done)
}

// endedLocked returns clients.ended, made on first use (under
// clients.mu): closed when Run ends or at Kill (endClients).
func (a *Adapter) endedLocked() chan struct{} {
	if a.clients.ended == nil {
		a.clients.ended = make(chan struct{})
	}
	return a.clients.ended
}

// callerSession is the client session a call of x's caller is served
// as: x's own (core.Exchange.Session), else, for a caller with an API
// key or access token (access.GrantFrom), its grant's (keySession, made
// now when mk says so); nil: the shared session serves it.
func (a *Adapter) callerSession(ctx context.Context, x *core.Exchange, mk bool) *mcpsession.Session {
	if sess := x.ClientSession(); sess != nil {
		return sess
	}
	return a.keySession(access.GrantFrom(ctx), mk)
}

// holdOf counts a request of client session sess (nil: nothing) in
// flight until release, so that its upstream session is not reclaimed
// under it (placeFor), and marks that session the most recently used.
func (a *Adapter) holdOf(sess *mcpsession.Session) (release func()) {
	if sess == nil || a.opts.Shared {
		return func() {}
	}
	return a.holdSession(sess)
}

// holdSession is holdOf for sess, not nil, of a per-client server.
func (a *Adapter) holdSession(sess *mcpsession.Session) (release func()) {
	a.clients.mu.Lock()
	defer a.clients.mu.Unlock()
	if a.clients.busy == nil {
		a.clients.busy = map[*mcpsession.Session]int{}
	}
	a.clients.busy[sess]++
	if u := a.clients.by[sess]; u != nil {
		u.usedAt = time.Now()
	}
	return func() {
		a.clients.mu.Lock()
		defer a.clients.mu.Unlock()
		if a.clients.busy[sess]--; a.clients.busy[sess] <= 0 {
			delete(a.clients.busy, sess)
		}
		if u := a.clients.by[sess]; u != nil {
			u.usedAt = time.Now()
		}
	}
}

// ownSession returns sess's upstream session once connected, nil when
// it has none or its connection failed. Errors: ctx's.
func (a *Adapter) ownSession(ctx context.Context, sess *mcpsession.Session) (*mcp.ClientSession, error) {
	a.clients.mu.Lock()
	u := a.clients.by[sess]
	a.clients.mu.Unlock()
	if u == nil {
		return nil, nil
	}
	select {
	case <-u.ready:
		return u.cs, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// subscribed marks sess's upstream session as holding a resource
// subscription: it is never reclaimed.
func (a *Adapter) subscribed(sess *mcpsession.Session) {
	a.clients.mu.Lock()
	defer a.clients.mu.Unlock()
	if u := a.clients.by[sess]; u != nil {
		u.subscribed = true
	}
}

// upstreamOf returns sess's upstream session, starting its connection
// when it has none and a place is free or reclaimed (placeFor); nil when
// the shared session serves it. Errors: the adapter ended.
func (a *Adapter) upstreamOf(sess *mcpsession.Session) (*upstream, error) {
	u, wasShared, err := a.newUpstream(sess)
	if wasShared { // what it was listed came from the shared session
		toolsChanged(sess)
	}
	return u, err
}

// newUpstream is upstreamOf under clients.mu; wasShared reports a new
// upstream session for a client the shared session served before.
func (a *Adapter) newUpstream(sess *mcpsession.Session) (_ *upstream, wasShared bool, _ error) {
	a.clients.mu.Lock()
	defer a.clients.mu.Unlock()
	if u := a.clients.by[sess]; u != nil {
		return u, false, nil
	}
	if a.clients.closed {
		return nil, false, fmt.Errorf("MCP server %q: stopped", a.launch.Name)
	}
	if !a.placeFor(sess) {
		return nil, false, nil
	}
	if a.clients.by == nil {
		a.clients.by = map[*mcpsession.Session]*upstream{}
	}
	u := &upstream{ready: make(chan struct{}), relay: newRelay(a.launch.Name, a.log), reclaim: make(chan struct{}), usedAt: time.Now(), gone: make(chan struct{})}
	u.relay.client, u.relay.own = sess, u
	u.relay.hold = func() func() { return a.holdSession(sess) }
	a.clients.by[sess] = u
	if wasShared = a.clients.shared[sess]; wasShared {
		a.clients.shared[sess] = false
	}
	go a.openUpstream(sess, u, a.endedLocked(), a.restartDelay(sess))
	return u, wasShared, nil
}

// reclaimRate is how many places a second placeFor reclaims once it has
// reclaimed MaxSessions at once: under a steady load of more clients
// than places, the places change hands at that rate (each change, for a
// command server, a process started and one ended), not at every call.
const reclaimRate = 1

// placeFor reports whether sess may have a session of its own now
// (under clients.mu). Its key (mcpsession.Session.Key) holds at most its
// share of the places (shareOf; a share of every place is the places'
// own bound): at it, sess takes the place of its
// key's least recently used idle session or none (never another key's).
// Under it, a free place, else the least recently used idle session's
// place of a key over its share, else of any key. Idle: its client busy
// with nothing for Options.ReclaimIdle, nothing subscribed on it,
// connected; reclaims within reclaimRate. Else sess is served by the shared session until a place
// frees (servedShared; logged once per key held to its share and once
// for every place in use).
func (a *Adapter) placeFor(sess *mcpsession.Session) bool {
	share := a.shareOf(sess)
	var held map[string]int // places held by key; nil: every place is sess's key's share, none is over it
	if share < a.opts.MaxSessions {
		held = map[string]int{}
		for s := range a.clients.by {
			held[s.Key]++
		}
	}
	switch {
	case held != nil && held[sess.Key] >= share:
		if a.reclaimFor(func(s *mcpsession.Session) bool { return s.Key == sess.Key }) {
			return true
		}
		a.heldToShare(sess, share)
	case len(a.clients.by) < a.opts.MaxSessions:
		return true
	case held != nil && a.reclaimFor(func(s *mcpsession.Session) bool { return held[s.Key] > share }),
		a.reclaimFor(func(*mcpsession.Session) bool { return true }):
		return true
	case !a.clients.warned:
		a.clients.warned = true
		a.log.Warn("MCP server: every client session's place is in use (maxSessions in its declaration); serving more clients through the shared session: the server sees the host's clientInfo and capabilities for them, lists them the shared tools, and their roots, sampling and elicitation are not asked", "server", a.launch.Name, "maxSessions", a.opts.MaxSessions, "session", sess.ID)
	}
	a.servedShared(sess)
	return false
}

// shareOf is how many places sess's key may hold
// (Options.MaxSessionsPerKey), with the keys in force when sess opened.
func (a *Adapter) shareOf(sess *mcpsession.Session) int {
	switch {
	case a.opts.MaxSessionsPerKey > 0:
		return min(a.opts.MaxSessionsPerKey, a.opts.MaxSessions)
	case sess.Keys > 1:
		return max(1, a.opts.MaxSessions/4)
	}
	return a.opts.MaxSessions
}

// reclaimFor reclaims the place of the least recently used idle
// session whose client pick accepts (under clients.mu), within
// reclaimRate, and reports whether it did. Idle: nothing of its client
// in flight for Options.ReclaimIdle at least, nothing subscribed on it,
// connected.
func (a *Adapter) reclaimFor(pick func(*mcpsession.Session) bool) bool {
	var lru *upstream
	var owner *mcpsession.Session
	quiet := a.quietSince()
	for s, u := range a.clients.by {
		if !pick(s) || !a.idleLocked(s, u, quiet) || lru != nil && !u.usedAt.Before(lru.usedAt) {
			continue
		}
		lru, owner = u, s
	}
	if lru == nil {
		return false
	}
	if a.clients.reclaims == nil {
		a.clients.reclaims = rate.NewLimiter(reclaimRate, a.opts.MaxSessions)
	}
	if !a.clients.reclaims.Allow() {
		return false
	}
	delete(a.clients.by, owner)
	close(lru.reclaim)
	return true
}

// quietSince is the time a client's own session last used at or before
// is idle long enough (Options.ReclaimIdle) to be reclaimed or retired.
func (a *Adapter) quietSince() time.Time { return time.Now().Add(-a.opts.ReclaimIdle) }

// idleLocked reports whether sess's own session u is idle since quiet
// (quietSince): connected, nothing subscribed on it, no request of its
// client in flight, none since quiet (under clients.mu).
func (a *Adapter) idleLocked(sess *mcpsession.Session, u *upstream, quiet time.Time) bool {
	return a.clients.busy[sess] == 0 && !u.subscribed && isClosed(u.ready) && !u.usedAt.After(quiet)
}

// heldToShare logs, once per key, that sess's key holds its share of
// the places (under clients.mu).
func (a *Adapter) heldToShare(sess *mcpsession.Session, share int) {
	if a.clients.heldKeys[sess.Key] {
		return
	}
	if a.clients.heldKeys == nil {
		a.clients.heldKeys = map[string]bool{}
	}
	a.clients.heldKeys[sess.Key] = true
	a.log.Warn("MCP server: an API key holds its share of the client sessions' places (maxSessionsPerKey in its declaration); serving its further clients through the shared session unless one of its own is idle: the server sees the host's clientInfo and capabilities for them, lists them the shared tools, and their roots, sampling and elicitation are not asked", "server", a.launch.Name, "key", sess.Key, "maxSessionsPerKey", share, "maxSessions", a.opts.MaxSessions, "session", sess.ID)
}

// servedShared records sess as served by the shared session for want
// of a place, until it ends (under clients.mu).
func (a *Adapter) servedShared(sess *mcpsession.Session) {
	if a.clients.shared == nil {
		a.clients.shared = map[*mcpsession.Session]bool{}
	}
	if _, known := a.clients.shared[sess]; !known {
		go a.forgetWhenEnded(sess, a.endedLocked(), func() { delete(a.clients.shared, sess) })
	}
	a.clients.shared[sess] = true
}

// identityFor is identityOf(sess.Init), made once per client session
// and kept until it ends (a call of a client without a session of its
// own asks it: borrow.go).
func (a *Adapter) identityFor(sess *mcpsession.Session) string {
	a.clients.mu.Lock()
	defer a.clients.mu.Unlock()
	if id, ok := a.clients.idents[sess]; ok {
		return id
	}
	id := identityOf(sess.Init)
	if sess.Done == nil || a.clients.closed {
		return id
	}
	if a.clients.idents == nil {
		a.clients.idents = map[*mcpsession.Session]string{}
	}
	a.clients.idents[sess] = id
	go a.forgetWhenEnded(sess, a.endedLocked(), func() { delete(a.clients.idents, sess) })
	return id
}

// forgetWhenEnded calls forget under clients.mu once sess ends or ended
// closes (what the adapter kept of sess: servedShared, identityFor).
func (a *Adapter) forgetWhenEnded(sess *mcpsession.Session, ended <-chan struct{}, forget func()) {
	select {
	case <-sess.Done:
	case <-ended:
	}
	a.clients.mu.Lock()
	defer a.clients.mu.Unlock()
	forget()
}

// isClosed reports whether c is closed.
func isClosed(c chan struct{}) bool {
	select {
	case <-c:
		return true
	default:
		return false
	}
}

// openUpstream connects u for sess, after delay (a restart after quick
// exits: ownexit.go), and closes it when sess ends or ended closes
// (endClients), or forgets it at once when it ends by itself.
func (a *Adapter) openUpstream(sess *mcpsession.Session, u *upstream, ended <-chan struct{}, delay time.Duration) {
	if !waitRestart(delay, sess, ended) {
		u.err = fmt.Errorf("MCP server %q: a client's own session: the client session or the server ended", a.launch.Name)
		close(u.ready)
		a.forget(sess, u)
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), upstreamInitTimeout)
	go func() { // the client gone before its session is up ends the attempt
		select {
		case <-sess.Done:
		case <-ended:
		case <-ctx.Done():
		}
		cancel()
	}()
	cs, err := a.connectUpstream(ctx, sess, u)
	u.cs, u.err = cs, err
	close(u.ready)
	if err != nil {
		a.log.Warn("MCP server: a client's own session failed", "server", a.launch.Name, "session", sess.ID, "error", err)
		cancel()
		a.forget(sess, u)
		return
	}
	a.parkSoon()
	since, gone := time.Now(), watchOwn(cs)
	select {
	case <-gone:
		status := "the connection closed"
		if u.proc != nil {
			status = u.proc.status()
		}
		n := a.ownExited(sess, u, since)
		close(u.gone)
		a.log.Warn("MCP server: a client session's own server process exited; its next call starts a new one", "server", a.launch.Name, "session", sess.ID, "status", status, "exits", n, "nextAfter", ownRestartDelay(n))
		u.tools.changed()
		toolsChanged(sess)
	case <-sess.Done:
	case <-ended:
	case <-u.reclaim:
		if u.retired { // set before reclaim closed (retire.go)
			// Its client's list is its identity's, as this session's was:
			// nothing changed for it (retire.go).
			a.log.Debug("MCP server: a client's own session, pristine and idle, closed: its client is lent the shared session", "server", a.launch.Name, "session", sess.ID)
			break
		}
		a.log.Debug("MCP server: a client's own session reclaimed for another client (maxSessions)", "server", a.launch.Name, "session", sess.ID)
		u.tools.changed()
		toolsChanged(sess)
	}
	a.closeUpstream(u)
	a.forget(sess, u)
}

// connectUpstream starts the server (a command) and initializes a
// session with sess's client's identity.
func (a *Adapter) connectUpstream(ctx context.Context, sess *mcpsession.Session, u *upstream) (*mcp.ClientSession, error) {
	cs, err := a.connectAs(ctx, u, a.clientOf(sess, u), clientVersion(sess.Init.ProtocolVersion))
	if err != nil {
		return nil, fmt.Errorf("MCP server %q: a client's own session: %w", a.launch.Name, err)
	}
	setLevel := func(l mcp.LoggingLevel) {
		if ir := cs.InitializeResult(); l == "" || ir == nil || ir.Capabilities == nil || ir.Capabilities.Logging == nil {
			return
		}
		lctx, cancel := context.WithTimeout(context.Background(), relistTimeout)
		defer cancel()
		_ = cs.SetLoggingLevel(lctx, &mcp.SetLoggingLevelParams{Level: l})
	}
	setLevel(sess.Level())
	u.stop = sess.OnLevel(setLevel)
	return cs, nil
}

// clientVersion is the revision asked of the server for a client of
// revision v: v when it is ProtocolVersion or older (revisions are
// dates), else ProtocolVersion (the relay speaks 2025-11-25).
func clientVersion(v string) string {
	if v != "" && v <= ProtocolVersion {
		return v
	}
	return ProtocolVersion
}

// clientOf is the MCP client of sess's own session u: its clientInfo and
// capabilities, the server's messages and requests relayed by u.relay,
// its tools/list_changed dropping the tools u keeps and telling the
// client's front end (toolsChanged).
func (a *Adapter) clientOf(sess *mcpsession.Session, u *upstream) *mcp.Client {
	return a.clientAs(sess.Init, &mcp.ClientOptions{
		ResourceUpdatedHandler: func(ctx context.Context, req *mcp.ResourceUpdatedNotificationRequest) {
			if sess.Updated != nil {
				sess.Updated(ctx, req.Params.URI)
			}
		},
		ToolListChangedHandler: func(context.Context, *mcp.ToolListChangedRequest) {
			u.spoiled.Store(true) // its list may differ from its identity's now (retire.go)
			u.tools.changed()
			toolsChanged(sess)
		},
	}, u.relay)
}

// toolsChanged tells sess's front end that what its own upstream session
// lists may have changed (mcpsession.Session.ToolsChanged), after the
// tools that session keeps were dropped.
func toolsChanged(sess *mcpsession.Session) {
	if sess.ToolsChanged != nil {
		sess.ToolsChanged()
	}
}

// clientAs is the MCP client (relayedClient, by r) with opts that a
// server knows as the client of init: its clientInfo (none: the
// adapter's) and its capabilities, extensions included (a copy).
func (a *Adapter) clientAs(init *mcp.InitializeParams, opts *mcp.ClientOptions, r *relay) *mcp.Client {
	impl := &mcp.Implementation{Name: "opentool-host-mcp-adapter"}
	if ci := init.ClientInfo; ci != nil {
		c := *ci
		impl = &c
	}
	opts.Capabilities = &mcp.ClientCapabilities{}
	if init.Capabilities != nil {
		c := *init.Capabilities
		c.Extensions = maps.Clone(c.Extensions)
		opts.Capabilities = &c
	}
	return a.relayedClient(impl, opts, r)
}

// relayedClient is an MCP client made with impl and opts whose server's
// progress, log messages and requests to the client are relayed by r,
// whose list_changed notifications have the lists listed again on the
// shared session and passed on (lists.go: the lists are the shared
// session's) after opts' own ToolListChangedHandler, if any, and which
// knows the Tasks extension's methods.
func (a *Adapter) relayedClient(impl *mcp.Implementation, opts *mcp.ClientOptions, r *relay) *mcp.Client {
	opts.ProgressNotificationHandler = func(_ context.Context, req *mcp.ProgressNotificationClientRequest) { r.progress(req.Params) }
	opts.LoggingMessageHandler = func(_ context.Context, req *mcp.LoggingMessageRequest) { r.message(req.Params) }
	own := opts.ToolListChangedHandler
	opts.ToolListChangedHandler = func(ctx context.Context, req *mcp.ToolListChangedRequest) {
		if own != nil {
			own(ctx, req)
		}
		a.serverSaid(pluginsdk.ListTools)
	}
	opts.ResourceListChangedHandler = func(context.Context, *mcp.ResourceListChangedRequest) { a.serverSaid(pluginsdk.ListResources) }
	opts.PromptListChangedHandler = func(context.Context, *mcp.PromptListChangedRequest) { a.serverSaid(pluginsdk.ListPrompts) }
	c := mcp.NewClient(impl, opts)
	c.AddReceivingMiddleware(func(next mcp.MethodHandler) mcp.MethodHandler {
		return relayRequests(r, next)
	})
	addTaskMethods(c)
	return c
}

// closeUpstream ends u: stdin closed, the grace, SIGTERM, SIGKILL for a
// command (the transport's Close).
func (a *Adapter) closeUpstream(u *upstream) {
	u.relay.close()
	<-u.ready
	if u.stop != nil {
		u.stop()
	}
	if u.cs != nil {
		_ = u.cs.Close()
	}
}

// forget removes u, sess's, from the open upstream sessions.
func (a *Adapter) forget(sess *mcpsession.Session, u *upstream) {
	a.clients.mu.Lock()
	defer a.clients.mu.Unlock()
	if a.clients.by[sess] == u {
		delete(a.clients.by, sess)
	}
}

// connectAs starts the server (a command; its process is u.proc, set
// under clients.mu so that endClients can kill it while it connects) and
// connects client c to it in protocol revision version, killing the
// process when ctx ends first. Errors: the transport's, the connection's
// (initialize or server/discover), ctx's.
func (a *Adapter) connectAs(ctx context.Context, u *upstream, c *mcp.Client, version string) (*mcp.ClientSession, error) {
	t, proc, err := transport(a.launch, a.opts, a.lose, a.oauth)
	if err != nil {
		return nil, err
	}
	if proc != nil {
		proc.tap = a.tapTaskStatus(u.relay.tap)
		a.clients.mu.Lock()
		u.proc = proc
		a.clients.mu.Unlock()
	}
	kill := context.AfterFunc(ctx, proc.kill)
	nctx, note := withConnNote(ctx)
	cs, err := c.Connect(nctx, t, &mcp.ClientSessionOptions{ProtocolVersion: version})
	if err == nil {
		a.keepConn(cs, note)
	}
	if !kill() && err == nil {
		_ = cs.Close()
		err = ctx.Err()
	}
	if err != nil {
		return nil, fmt.Errorf("connect in %s: %w", version, authError(t, err))
	}
	return cs, nil
}

// endClients closes (kill: kills) every client's upstream session and
// refuses new ones; Run and Kill call it.
func (a *Adapter) endClients(kill bool) {
	a.clients.mu.Lock()
	defer a.clients.mu.Unlock()
	if a.clients.closed {
		return
	}
	a.clients.closed = true
	if a.clients.ended != nil {
		close(a.clients.ended) // each openUpstream closes its own
	}
	if kill {
		for _, u := range a.clients.by {
			u.proc.kill()
		}
		if u := a.clients.sessionless.u; u != nil {
			u.proc.kill()
		}
	}
}

// sendOutside sends a server's message outside calls to r's client.
func (r *relay) sendOutside(p *mcp.LoggingMessageParams) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	r.client.Log(ctx, p)
}

// askOutside sends the server's request method to client to (r's own,
// or the host's only one: outsideClient) on its session and returns its
// result (JSON) as the client gave it. It holds one of the
// session's maxAsking places (take) and waits at most
// upstreamInitTimeout, less when the client's session ends or the
// session with the server closes (relay.close). Errors: take's at once;
// the client's; -32603 when it ended first.
func (r *relay) askOutside(to *mcpsession.Session, method string, params any) (json.RawMessage, error) {
	release, err := r.take()
	if err != nil {
		return nil, err
	}
	defer release()
	if r.hold != nil {
		defer r.hold()()
	}
	b, err := json.Marshal(params)
	if err != nil {
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: err.Error()}
	}
	ctx, cancel := context.WithTimeout(context.Background(), upstreamInitTimeout)
	defer cancel()
	go func() {
		select {
		case <-to.Done:
		case <-r.closed:
		case <-ctx.Done():
		}
		cancel()
	}()
	raw, err := to.Ask(ctx, method, b)
	if err != nil && ctx.Err() != nil {
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: fmt.Sprintf("the MCP client did not answer within %v, or its session ended", upstreamInitTimeout)}
	}
	if err != nil {
		return nil, toRPC(err)
	}
	return raw, nil
}

// maxToolLists bounds the client identities whose tool lists are kept
// (toolLists); past it the lists kept are dropped.
const maxToolLists = 64

// toolLists holds, by client identity (identityOf), the tools a new
// upstream session of such a client was listed: a client session that
// has none of its own yet is shown that list without one being made for
// it (an upstream session is made at a client's first tools/list only
// when no client like it was listed before, else at its first call), so
// that sessions that only list hold no server process. Cleared when the
// shared session's tools change.
type toolLists struct {
	mu   sync.Mutex
	by   map[string][]json.RawMessage
	same map[string]bool // by identity: its list is the shared session's (listsLikeShared)
	one  chan struct{}   // held while a caller's identity is listed (turn); made on first use
	// listing holds, by identity, a client session's first listing under
	// way (first): closed when it ended.
	listing map[string]chan struct{}
}

// first waits while another client session of identity id is listed
// for the first time (so that clients alike that connect at once cost
// one upstream session, not one each) and reports whether this one is
// the first: then done must follow its listing. Errors: ctx's.
func (l *toolLists) first(ctx context.Context, id string) (done func(), first bool, err error) {
	l.mu.Lock()
	if ch, ok := l.listing[id]; ok {
		l.mu.Unlock()
		select {
		case <-ch:
			return nil, false, nil
		case <-ctx.Done():
			return nil, false, ctx.Err()
		}
	}
	if l.listing == nil {
		l.listing = map[string]chan struct{}{}
	}
	ch := make(chan struct{})
	l.listing[id] = ch
	l.mu.Unlock()
	return func() {
		l.mu.Lock()
		defer l.mu.Unlock()
		delete(l.listing, id)
		close(ch)
	}, true, nil
}

// asShared returns whether identity id's list was found to be the
// shared session's (markShared), and whether that is known.
func (l *toolLists) asShared(id string) (same, known bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	same, known = l.same[id]
	return same, known
}

// markShared keeps whether identity id's list is the shared session's.
func (l *toolLists) markShared(id string, same bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.same == nil || len(l.same) >= maxToolLists {
		l.same = map[string]bool{}
	}
	l.same[id] = same
}

// turn waits until no other identity is being listed (callerTools) and
// returns the release of this one's turn. Errors: ctx's.
func (l *toolLists) turn(ctx context.Context) (release func(), err error) {
	l.mu.Lock()
	if l.one == nil {
		l.one = make(chan struct{}, 1)
	}
	one := l.one
	l.mu.Unlock()
	select {
	case one <- struct{}{}:
		return func() { <-one }, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// get returns the tools kept for identity id.
func (l *toolLists) get(id string) ([]json.RawMessage, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	tools, ok := l.by[id]
	return tools, ok
}

// put keeps tools for identity id.
func (l *toolLists) put(id string, tools []json.RawMessage) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.by == nil || len(l.by) >= maxToolLists {
		l.by = map[string][]json.RawMessage{}
	}
	l.by[id] = tools
}

// clear drops every list kept.
func (l *toolLists) clear() {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.by, l.same = nil, nil
}

// identityOf is what a server knows of the client of init (a client
// session's initialize, a 2026-07-28 request's _meta) when it lists its
// tools: its clientInfo, capabilities and protocol version (clientAs,
// clientVersion), as JSON.
func identityOf(init *mcp.InitializeParams) string {
	b, _ := json.Marshal([]any{init.ClientInfo, init.Capabilities, clientVersion(init.ProtocolVersion)}) // SDK types: encode
	return string(b)
}

// clientTools is the tools/list result, {"tools":[...]} with every
// page's tools as the server wrote them, that the server gives the MCP
// client of ctx: for a client session, its own upstream session's
// (clients.go), or, while it has none, that of a new upstream session of
// a client like it (toolLists), made now when there is none; for a
// caller of 2026-07-28 (an mcpsession.Request with Init), that of a
// client like it (callerTools). Errors: -32601 when x carries neither or
// the declaration says "sessions": "shared", or for a client session
// served by the shared session for want of a place (placeFor: every
// place in use, or its key's share held): the server lists the shared
// session's tools to it; the connection's errors
// (rpcErrorOf).
func (a *Adapter) clientTools(ctx context.Context, x *core.Exchange) (any, error) {
	sess := x.ClientSession()
	r := x.SessionlessRequest()
	switch {
	case a.opts.Shared || sess == nil && (r == nil || r.Init == nil):
		return nil, &pluginsdk.RPCError{Code: jsonrpc.CodeMethodNotFound, Message: fmt.Sprintf("MCP server %q lists the same tools to every client", a.launch.Name)}
	case sess == nil:
		tools, err := a.callerTools(ctx, r.Init)
		if err != nil {
			return nil, rpcErrorOf(a.launch.Name, mcpmethod.ToolsList, err)
		}
		return map[string][]json.RawMessage{"tools": tools}, nil
	}
	a.clients.mu.Lock()
	u := a.clients.by[sess]
	a.clients.mu.Unlock()
	var id string // the client's identity, for a client without an upstream session
	var gen int
	if u == nil {
		id = a.identityFor(sess)
		if tools, ok := a.toolLists.get(id); ok {
			return map[string][]json.RawMessage{"tools": tools}, nil
		}
		done, first, err := a.toolLists.first(ctx, id)
		if err != nil {
			return nil, rpcErrorOf(a.launch.Name, mcpmethod.ToolsList, err)
		}
		if !first {
			return a.clientTools(ctx, x) // listed meanwhile, or that listing failed: again
		}
		defer done()
		if tools, ok := a.toolLists.get(id); ok { // listed just before
			return map[string][]json.RawMessage{"tools": tools}, nil
		}
	} else {
		var kept []json.RawMessage
		if kept, gen = u.tools.get(); kept != nil {
			return map[string][]json.RawMessage{"tools": kept}, nil
		}
	}
	cs, _, how, err := a.sessionOf(ctx, sess)
	if err == nil && how != servedOwn {
		return nil, &pluginsdk.RPCError{Code: jsonrpc.CodeMethodNotFound, Message: fmt.Sprintf("MCP server %q: this client is served by the shared session (every place of a client session is in use, or its API key holds its share of them) and is listed its tools", a.launch.Name)}
	}
	if err == nil {
		var tools []json.RawMessage
		if _, tools, err = collect(ctx, "tools", cs.Tools); err == nil {
			if u == nil {
				a.toolLists.put(id, tools)
			} else {
				u.tools.put(tools, gen)
			}
			return map[string][]json.RawMessage{"tools": tools}, nil
		}
	}
	return nil, rpcErrorOf(a.launch.Name, mcpmethod.ToolsList, err)
}
