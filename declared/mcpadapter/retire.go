package mcpadapter

import (
	"time"

	"github.com/opentool-host/opentool-host/internal/mcpsession"
)

// Pristine sessions retire. The first client of an identity gets an
// upstream session of its own at its first tools/list (clientTools), so
// that its list is the server's to it; a client that goes on only
// reading would keep that process for nothing while its reads could be
// lent the shared session (borrow.go). So an own session that is
// pristine (only lists and calls of tools annotated readOnlyHint went to
// it: no other call, no call as a task, no resources/subscribe, no
// request of the server answered by its client, no tools/list_changed
// heard) is closed once idle for Options.ReclaimIdle, as a place
// reclaimed is but without telling its client its tools changed (its
// list stays its identity's, which this session's was), when its client
// would be lent the shared session (lendFor's conditions) and that
// session runs (not parked: one client alone keeps its own session and
// no other process). Its client's next read is lent; its next other
// call gives it a session of its own again (one process start). A
// session is never retired while a request of its client is in flight
// (holdOf).

// retirePristine closes each own session that may retire (see above);
// idleOut runs it.
func (a *Adapter) retirePristine() {
	if !a.lends() || a.lending.isOff() || a.isParked() {
		return
	}
	quiet := time.Now().Add(-a.opts.ReclaimIdle)
	var cands []*mcpsession.Session
	a.clients.mu.Lock()
	for s, u := range a.clients.by {
		if !u.spoiled.Load() && !u.subscribed && a.clients.busy[s] == 0 && isClosed(u.ready) && u.err == nil && !u.usedAt.After(quiet) {
			cands = append(cands, s)
		}
	}
	a.clients.mu.Unlock()
	for _, s := range cands {
		if clientVersion(s.Init.ProtocolVersion) != ProtocolVersion || !a.listsLikeShared(s) {
			continue
		}
		a.clients.mu.Lock()
		u := a.clients.by[s]
		// Checked again: a request may have begun meanwhile.
		if u != nil && !u.spoiled.Load() && !u.subscribed && a.clients.busy[s] == 0 && !u.usedAt.After(quiet) {
			delete(a.clients.by, s)
			u.retired = true
			close(u.reclaim)
		}
		a.clients.mu.Unlock()
	}
}

// spoilOwn marks sess's own session spoiled before a call of tool goes
// to it that is not a read (not annotated readOnlyHint, or as a task):
// it is never retired.
func (a *Adapter) spoilOwn(sess *mcpsession.Session, tool string, asTask bool) {
	a.mu.RLock()
	readOnly := a.conv.readOnly[tool]
	a.mu.RUnlock()
	if readOnly && !asTask {
		return
	}
	a.clients.mu.Lock()
	u := a.clients.by[sess]
	a.clients.mu.Unlock()
	if u != nil {
		u.spoiled.Store(true)
	}
}

// isRetired reports whether u was retired (retirePristine).
func (a *Adapter) isRetired(u *upstream) bool {
	a.clients.mu.Lock()
	defer a.clients.mu.Unlock()
	return u.retired
}
