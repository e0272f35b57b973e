package mcpadapter

import "github.com/opentool-host/opentool-host/internal/mcpsession"

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
// would be lent the shared session (lendable) and that
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
	quiet := a.quietSince()
	pristine := func(s *mcpsession.Session, u *upstream) bool {
		return !u.spoiled.Load() && a.idleLocked(s, u, quiet)
	}
	var cands []*mcpsession.Session
	a.clients.mu.Lock()
	for s, u := range a.clients.by {
		if pristine(s, u) {
			cands = append(cands, s)
		}
	}
	a.clients.mu.Unlock()
	for _, s := range cands {
		if !a.lendable(s) { // takes clients.mu itself: outside it
			continue
		}
		a.clients.mu.Lock()
		// Again: a request of its client may have begun meanwhile.
		if u := a.clients.by[s]; u != nil && pristine(s, u) {
			delete(a.clients.by, s)
			u.retired = true
			close(u.reclaim)
		}
		a.clients.mu.Unlock()
	}
}
