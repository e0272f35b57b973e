package mcpadapter

import (
	"bytes"
	"context"
	"encoding/json"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/opentool-host/opentool-host/internal/mcpsession"
)

// Reads lent by the shared session. A per-client server gives each
// client session an upstream session of its own (clients.go) so that
// what the server keeps per session is that client's alone. A client
// that has not changed anything yet has nothing of its own there: a new
// session would be what the shared session is as long as no call that
// may change what the server keeps went to it (it is pristine). So a
// client session without an upstream session of its own is lent the
// shared session for a call (lendFor) when:
//
//   - the tool is one the server annotates readOnlyHint (MCP
//     "ToolAnnotations": it does not modify its environment) and not
//     called as a task (a task is state the server keeps: tasks/list);
//   - the server lists the client's identity (clientInfo, capabilities,
//     protocol version: identityOf) the tools it lists the shared
//     session, each written the same, and the client speaks
//     ProtocolVersion (no other view of the tool);
//   - the shared session is pristine: no tools/call of a tool that is
//     not lent went to it (spoilShared, before that call is sent, once
//     every lent call in flight ended, so that no lent call sees what
//     that one changes);
//   - the server never asked the shared session for roots (roots/list:
//     a server that reads roots may see a client otherwise than the
//     shared session), nor asked anything (sampling, elicitation, roots)
//     or sent a log message during a lent call.
//
// A lent call during which the server asks or logs is answered from the
// client's own session instead: the server's requests during it are
// refused (-32603), its log messages and progress dropped (logged by the
// host at debug level, never handed to a client), the result of the lent
// call discarded once it came, and the call made again on an upstream
// session of the client's own (placed as any: placeFor), where the
// server's requests go to that client (a tool that changes nothing runs
// twice, one after the other).
// Lending then ends, as it does once the shared session is spoiled: from
// then on every client's calls go to its own session, as without
// lending, until the shared session parks (park.go). Its next use starts
// a new process, which is what a new session is: lending begins again
// (renew), and ends again as above. The readOnlyHint is the
// server's word about its own state: a server that annotates a tool that
// changes what it keeps readOnlyHint shares it between the clients
// lent its shared session, as it could between its own processes; the
// declaration's "lendReads": false turns lending off (Options.NoLending).

// lending is the shared session's lending of reads (see above).
type lending struct {
	mu       sync.Mutex
	off      bool          // lending ended: spoiled, or the server asked or logged during a lent call
	inFlight int           // lent calls in flight
	drained  chan struct{} // closed when inFlight falls to 0 after off; nil: nobody waits
}

// lent is one call lent the shared session. again is set (relay.talked,
// under the relay's lock, while the call is in flight there) when the
// call must be made again on the client's own session.
type lent struct {
	l     *lending
	again atomic.Bool
}

// lend lends the shared session for one call, unless lending is off;
// release must follow, once.
func (l *lending) lend() (*lent, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.off {
		return nil, false
	}
	l.inFlight++
	return &lent{l: l}, true
}

// release ends c's loan.
func (c *lent) release() {
	l := c.l
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.inFlight--; l.inFlight == 0 && l.drained != nil {
		close(l.drained)
		l.drained = nil
	}
}

// renew turns lending on again and reports whether it was off: the
// shared session was parked, and its next use starts a new process.
// Lending stays as it is while a lent call is still in flight (one that
// took the session just before it parked, and fails with it).
func (l *lending) renew() bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	if !l.off || l.inFlight > 0 {
		return false
	}
	l.off = false
	return true
}

// end turns lending off and reports whether this call did.
func (l *lending) end() bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.off {
		return false
	}
	l.off = true
	return true
}

// spoil turns lending off (a call that may change what the server keeps
// is about to go to the shared session) and waits until no lent call is
// in flight, so that none of them sees that change; first reports
// whether this call turned it off. Errors: ctx's.
func (l *lending) spoil(ctx context.Context) (first bool, err error) {
	l.mu.Lock()
	first, l.off = !l.off, true
	if l.inFlight == 0 {
		l.mu.Unlock()
		return first, nil
	}
	if l.drained == nil {
		l.drained = make(chan struct{})
	}
	drained := l.drained
	l.mu.Unlock()
	select {
	case <-drained:
		return first, nil
	case <-ctx.Done():
		return first, ctx.Err()
	}
}

// isOff reports whether lending ended.
func (l *lending) isOff() bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.off
}

// lends reports whether the adapter may lend its shared session: a
// per-client server (not "sessions": "shared") without "lendReads": false.
func (a *Adapter) lends() bool { return !a.opts.Shared && !a.opts.NoLending }

// lendFor lends the shared session to client session sess for a call
// of a tool the shared session may be lent for (readOnly: conv.readOnly;
// see above) and returns the loan (route.lent); ok false: the call goes
// where sessionOf sends it.
func (a *Adapter) lendFor(sess *mcpsession.Session, readOnly bool) (_ *lent, ok bool) {
	if !readOnly || sess == nil || !a.lends() || a.lending.isOff() {
		return nil, false
	}
	a.clients.mu.Lock()
	own := a.clients.by[sess] != nil
	a.clients.mu.Unlock()
	if own || !a.lendable(sess) {
		return nil, false
	}
	return a.lending.lend()
}

// lendable reports whether sess's client may be lent the shared session
// when it has no session of its own: it speaks ProtocolVersion, and the
// server lists it the shared session's tools (listsLikeShared).
func (a *Adapter) lendable(sess *mcpsession.Session) bool {
	return clientVersion(sess.Init.ProtocolVersion) == ProtocolVersion && a.listsLikeShared(sess)
}

// listsLikeShared reports whether the server lists a new session of
// sess's client (toolLists, by identityOf; unknown: false) the tools it
// lists the shared session, each written the same.
func (a *Adapter) listsLikeShared(sess *mcpsession.Session) bool {
	id := a.identityFor(sess)
	if same, known := a.toolLists.asShared(id); known {
		return same
	}
	tools, ok := a.toolLists.get(id)
	if !ok {
		return false
	}
	a.mu.RLock()
	defs := a.conv.defs
	a.mu.RUnlock()
	same := len(tools) == len(defs) && !slices.ContainsFunc(tools, func(def json.RawMessage) bool {
		var t struct {
			Name string `json:"name"`
		}
		return json.Unmarshal(def, &t) != nil || !bytes.Equal(defs[t.Name], def)
	})
	a.toolLists.markShared(id, same)
	return same
}

// spoilShared is called before a tools/call of MCP tool tool, not one
// lent (conv.readOnly), goes to the shared session: lending ends
// (spoil), logged once. Errors: ctx's, while lent calls in flight end.
func (a *Adapter) spoilShared(ctx context.Context, tool string) error {
	if !a.lends() {
		return nil
	}
	first, err := a.lending.spoil(ctx)
	if first {
		a.logLendingEnded("tool " + tool + ", which is not annotated readOnlyHint, was called on the shared session")
	}
	return err
}

// endLending ends lending for why (the server asked or logged during a
// lent call, or asked the shared session for roots), logged once; the
// shared relay's lendingEnds when the adapter lends.
func (a *Adapter) endLending(why string) {
	if a.lending.end() {
		a.logLendingEnded(why)
	}
}

// renewLending turns lending on again once the shared session parked
// (idleOut), logged when it had ended.
func (a *Adapter) renewLending() {
	if a.lends() && a.lending.renew() {
		a.log.Info("MCP server: the shared session parked; read-only calls of client sessions without a session of their own are lent its next process", "server", a.launch.Name)
	}
}

// logLendingEnded logs that lending ended, and why.
func (a *Adapter) logLendingEnded(why string) {
	a.log.Info("MCP server: read-only calls of client sessions without a session of their own now go to sessions of their own", "server", a.launch.Name, "why", why)
}
