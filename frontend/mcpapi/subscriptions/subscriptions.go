// Package subscriptions serves MCP resource subscriptions
// (resources/subscribe, resources/unsubscribe, their
// notifications/resources/updated) for the host's MCP front end, a layer
// knowing the SDK's sessions and what it is given of the front end
// (Front) only: whether a session has a client, the subscribe and
// unsubscribe routed to the plugin serving a URI, a notification to one
// session.
//
// Resource subscriptions (MCP "Resources", Subscriptions) are kept per
// client session (the SDK's *mcp.ServerSession: a session with an
// Mcp-Session-Id, the stdio session, a subscriptions/listen stream of
// 2026-07-28), each on one of two paths, as the serving plugin took it:
//
//	path          when                          notifications/resources/updated
//	own           a client session with an id,  the server sends it on that
//	              a declared MCP server with    session: it goes to that client
//	              "sessions": "per-client"      alone (mcpsession.Session.
//	              (mcpadapter marks it: host.   Updated), for the URIs it
//	              Exchange.MarkOwn)             subscribed to there
//	shared        anything else: the plugin's   the plugin reports it
//	              one session (a shared or      (host.Host.OnResourceUpdated);
//	              sessionless client, any       it goes to the sessions
//	              other plugin)                 subscribed through this path
//
// On the shared path the plugin is told of a URI's first subscription
// and of its last unsubscription; on the own path, of every one. The
// path is the plugin's to choose, and is known once it took a
// subscription: a client session's subscribe to a URI held on the shared
// path only by sessions without a client (listen streams, stdio) reaches
// the plugin again (MCP's subscribe is idempotent). A session that ends
// (DELETE, its idle timeout, its key revoked, a listen stream closed,
// the host's shutdown) is unsubscribed: its shared subscriptions are
// released (the last one unsubscribes the plugin), its own end with its
// upstream session. The SDK's own resources/updated (Server.
// ResourceUpdated, which sends to every session in its table) passes the
// front end's sending middleware only to sessions subscribed through the
// shared path (Layer.Passes); the own path's goes to its one session past
// the filter (Layer.OwnUpdated, Front.Notify).
package subscriptions

import (
	"context"
	"sync"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/opentool-host/opentool-host/protocol/mcpmethod"
)

// Front is what a Layer knows of the front end.
type Front interface {
	// HasClient reports whether ss has a client session of its own
	// (an mcpsession.Session: a session with an id, the stdio one).
	HasClient(ss *mcp.ServerSession) bool
	// Subscribe sends p to the plugin serving p.URI with ss's client,
	// and reports whether the plugin took it on that client's own
	// upstream session (core.Exchange.MarkOwn); its error is the
	// JSON-RPC error the client gets.
	Subscribe(ctx context.Context, ss *mcp.ServerSession, p *mcp.SubscribeParams) (own bool, err error)
	// Unsubscribe sends p to the plugin serving p.URI: with ss's client
	// (the subscription on its own upstream session), or with none when
	// ss is nil (the shared path's last).
	Unsubscribe(ctx context.Context, ss *mcp.ServerSession, p *mcp.UnsubscribeParams) error
	// Notify sends notification method with params p to ss alone, past
	// the front end's sending filter (within its own time bound).
	Notify(ctx context.Context, ss *mcp.ServerSession, method string, p mcp.Params) error
}

// Layer is the sessions' subscriptions of one MCP server, by path.
// Create it with New; it is safe for concurrent use.
type Layer struct {
	front  Front
	logger hclog.Logger
	subs   subscriptions
}

// New returns the Layer over front, logging to logger the unsubscribes
// of ended sessions that failed.
func New(front Front, logger hclog.Logger) *Layer {
	return &Layer{front: front, logger: logger}
}

// subscriptionEndTimeout bounds the resources/unsubscribe sent for a
// session that ended.
const subscriptionEndTimeout = 10 * time.Second

// subscriptions are the sessions' subscriptions by path.
type subscriptions struct {
	mu     sync.Mutex
	shared map[string]int                            // URI → sessions subscribed through the shared path
	by     map[*mcp.ServerSession]map[string]subPath // session → URI → its path
	locks  map[string]*uriLock                       // URI → its lock, while in use
}

// subPath is the path of one session's subscription.
type subPath uint8

const (
	viaShared       subPath = iota // the shared path, of a session without an mcpsession.Session
	viaSharedClient                // the shared path, of a client session (the plugin keeps no session per client)
	viaOwn                         // the client's own upstream session
)

// uriLock serializes the subscribes and unsubscribes of one URI (across
// sessions), so that the shared path's first and last are exact.
type uriLock struct {
	mu    sync.Mutex
	users int
}

// lock locks uri and returns its unlock.
func (sb *subscriptions) lock(uri string) (unlock func()) {
	sb.mu.Lock()
	if sb.locks == nil {
		sb.locks = map[string]*uriLock{}
	}
	l := sb.locks[uri]
	if l == nil {
		l = &uriLock{}
		sb.locks[uri] = l
	}
	l.users++
	sb.mu.Unlock()
	l.mu.Lock()
	return func() {
		l.mu.Unlock()
		sb.mu.Lock()
		if l.users--; l.users == 0 {
			delete(sb.locks, uri)
		}
		sb.mu.Unlock()
	}
}

// of returns the path of ss's subscription to uri (ok: it has one).
func (sb *subscriptions) of(ss *mcp.ServerSession, uri string) (r subPath, ok bool) {
	sb.mu.Lock()
	defer sb.mu.Unlock()
	r, ok = sb.by[ss][uri]
	return r, ok
}

// held reports whether a subscribe to uri of a session that has (client)
// or has not an mcpsession.Session would go through the shared path
// where it is already held, and so need not reach the plugin again: a
// session without a client goes there always; one with a client as
// another client session's subscription to uri went (not known: false,
// sent).
func (sb *subscriptions) held(uri string, client bool) bool {
	sb.mu.Lock()
	defer sb.mu.Unlock()
	if sb.shared[uri] == 0 {
		return false
	}
	if !client {
		return true
	}
	for _, m := range sb.by {
		if r, ok := m[uri]; ok && r != viaShared {
			return r == viaSharedClient
		}
	}
	return false
}

// add records ss's subscription to uri through r, in place of the one it
// had; first reports whether ss had none before (its end is then to be
// watched: watchEnd).
func (sb *subscriptions) add(ss *mcp.ServerSession, uri string, r subPath) (first bool) {
	sb.mu.Lock()
	defer sb.mu.Unlock()
	if sb.by == nil {
		sb.by, sb.shared = map[*mcp.ServerSession]map[string]subPath{}, map[string]int{}
	}
	m := sb.by[ss]
	if m == nil {
		m = map[string]subPath{}
		sb.by[ss] = m
		first = true
	}
	if old, ok := m[uri]; ok && old != viaOwn {
		sb.dropShared(uri)
	}
	m[uri] = r
	if r != viaOwn {
		sb.shared[uri]++
	}
	return first
}

// remove forgets ss's subscription to uri.
func (sb *subscriptions) remove(ss *mcp.ServerSession, uri string) {
	sb.mu.Lock()
	defer sb.mu.Unlock()
	if r, ok := sb.by[ss][uri]; ok {
		delete(sb.by[ss], uri)
		if r != viaOwn {
			sb.dropShared(uri)
		}
	}
}

// release counts one shared subscription to uri less (of a session take
// forgot) and returns how many remain.
func (sb *subscriptions) release(uri string) int {
	sb.mu.Lock()
	defer sb.mu.Unlock()
	return sb.dropShared(uri)
}

// dropShared counts one shared subscription to uri less and returns how
// many remain. Callers hold sb.mu.
func (sb *subscriptions) dropShared(uri string) int {
	n := sb.shared[uri] - 1
	if n <= 0 {
		delete(sb.shared, uri)
		return 0
	}
	sb.shared[uri] = n
	return n
}

// lastShared reports whether ss is the one session subscribed to uri
// through the shared path.
func (sb *subscriptions) lastShared(uri string) bool {
	sb.mu.Lock()
	defer sb.mu.Unlock()
	return sb.shared[uri] == 1
}

// take forgets every subscription of ss and returns them.
func (sb *subscriptions) take(ss *mcp.ServerSession) map[string]subPath {
	sb.mu.Lock()
	defer sb.mu.Unlock()
	m := sb.by[ss]
	delete(sb.by, ss)
	return m
}

// Subscribe is the resources/subscribe handler
// (mcp.ServerOptions.SubscribeHandler): sent to the plugin serving the
// URI with the client's session (Front.Subscribe), unless held, and recorded on the path the plugin took. A client session's
// subscription is recorded on its own session while the plugin has it
// (an update on that session may come before the answer), and forgotten
// when the plugin fails it. A session's repeated subscribe is answered at
// once.
func (l *Layer) Subscribe(ctx context.Context, req *mcp.SubscribeRequest) error {
	ss, uri := req.Session, req.Params.URI
	defer l.subs.lock(uri)()
	if _, ok := l.subs.of(ss, uri); ok {
		return nil
	}
	client := l.front.HasClient(ss)
	r := viaShared
	if client {
		r = viaSharedClient
	}
	if !l.subs.held(uri, client) {
		if client {
			l.watchEnd(ss, l.subs.add(ss, uri, viaOwn))
		}
		own, err := l.front.Subscribe(ctx, ss, req.Params)
		if err != nil {
			l.subs.remove(ss, uri)
			return err
		}
		if own {
			r = viaOwn
		}
	}
	l.watchEnd(ss, l.subs.add(ss, uri, r))
	return nil
}

// watchEnd, when first (ss's first subscription), unsubscribes ss when
// it ends (endSubscriptions; at once when it has ended).
func (l *Layer) watchEnd(ss *mcp.ServerSession, first bool) {
	if first {
		go func() {
			_ = ss.Wait()
			l.endSubscriptions(ss)
		}()
	}
}

// Unsubscribe is the resources/unsubscribe handler
// (mcp.ServerOptions.UnsubscribeHandler): sent to the client's
// own session for a subscription there, to the plugin for the last one
// through the shared path; a URI the session did not subscribe to is
// answered at once. When the plugin fails it, the subscription stays.
func (l *Layer) Unsubscribe(ctx context.Context, req *mcp.UnsubscribeRequest) error {
	ss, uri := req.Session, req.Params.URI
	defer l.subs.lock(uri)()
	r, ok := l.subs.of(ss, uri)
	if !ok {
		return nil
	}
	var err error
	switch {
	case r == viaOwn:
		err = l.front.Unsubscribe(ctx, ss, req.Params)
	case l.subs.lastShared(uri):
		err = l.front.Unsubscribe(ctx, nil, req.Params)
	}
	if err != nil {
		return err
	}
	l.subs.remove(ss, uri)
	return nil
}

// endSubscriptions unsubscribes ss, which ended: its last shared
// subscriptions are sent resources/unsubscribe (failures logged); its
// own ended with its upstream session.
func (l *Layer) endSubscriptions(ss *mcp.ServerSession) {
	for uri, r := range l.subs.take(ss) {
		if r == viaOwn {
			continue
		}
		l.releaseShared(ss, uri)
	}
}

// releaseShared releases one shared subscription to uri of ss, which
// ended (take forgot it), sending the plugin resources/unsubscribe when
// it was the last.
func (l *Layer) releaseShared(ss *mcp.ServerSession, uri string) {
	defer l.subs.lock(uri)()
	if l.subs.release(uri) > 0 {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), subscriptionEndTimeout)
	defer cancel()
	if err := l.front.Unsubscribe(ctx, nil, &mcp.UnsubscribeParams{URI: uri}); err != nil {
		l.logger.Warn("resources/unsubscribe of an ended MCP session failed", "session", ss.ID(), "uri", uri, "error", err)
	}
}

// OwnUpdated sends notifications/resources/updated for uri, which the
// server sent on ss's own upstream session, to ss when ss subscribed to
// uri there; anything else is dropped (mcpsession.Session.Updated).
func (l *Layer) OwnUpdated(ctx context.Context, ss *mcp.ServerSession, uri string) {
	if r, ok := l.subs.of(ss, uri); !ok || r != viaOwn {
		return
	}
	_ = l.front.Notify(ctx, ss, mcpmethod.ResourcesUpdated, &mcp.ResourceUpdatedNotificationParams{URI: uri})
}

// Passes reports whether the SDK's notifications/resources/updated to
// ss (the front end's sending middleware sees it), p its params, is to
// go: only to a session subscribed to p.URI through the shared path.
func (l *Layer) Passes(ss *mcp.ServerSession, p *mcp.ResourceUpdatedNotificationParams) bool {
	if p == nil {
		return false
	}
	r, ok := l.subs.of(ss, p.URI)
	return ok && r != viaOwn
}
