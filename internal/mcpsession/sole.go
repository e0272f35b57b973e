package mcpsession

import "sync"

// Sole is the one downstream MCP client of a host that has exactly one:
// the client on stdio (opentool-host mcp). No wall stands between it
// and the declared MCP servers behind the host, so a server's requests
// outside calls (roots/list at its start or after
// notifications/roots/list_changed, sampling, elicitation) go to it,
// and its notifications/roots/list_changed reach every server
// (mcpadapter). The front end sets its Session once the client
// initialized; the zero Sole holds none. Safe for concurrent use.
type Sole struct {
	mu       sync.Mutex
	sess     *Session
	watchers map[*func()]bool
}

// Set makes s the client once it initialized (nil: none, its session
// ended) and tells every watcher its roots changed: a server asked
// before then got none.
func (o *Sole) Set(s *Session) {
	o.mu.Lock()
	o.sess = s
	o.mu.Unlock()
	o.RootsChanged()
}

// Session returns the client's session, nil before it initialized and
// after it ended.
func (o *Sole) Session() *Session {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.sess == nil {
		return nil
	}
	select {
	case <-o.sess.Done:
		return nil
	default:
		return o.sess
	}
}

// RootsChanged calls every watcher (OnRootsChanged): the client sent
// notifications/roots/list_changed, or it initialized.
func (o *Sole) RootsChanged() {
	o.mu.Lock()
	ws := make([]func(), 0, len(o.watchers))
	for w := range o.watchers {
		ws = append(ws, *w)
	}
	o.mu.Unlock()
	for _, w := range ws {
		w()
	}
}

// OnRootsChanged calls f at each later RootsChanged until stop is
// called. f must not block.
func (o *Sole) OnRootsChanged(f func()) (stop func()) {
	p := &f
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.watchers == nil {
		o.watchers = map[*func()]bool{}
	}
	o.watchers[p] = true
	return func() {
		o.mu.Lock()
		defer o.mu.Unlock()
		delete(o.watchers, p)
	}
}
