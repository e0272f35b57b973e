package mcpadapter

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/opentool-host/opentool-host/protocol/opentool"
)

// The shared session parked. A per-client command server whose clients
// are all served by sessions of their own would otherwise run one process
// more than it has clients: the shared session's, which nobody uses. When
// the shared session has gone unused for Options.SharedIdle (no call,
// catalog request, task, list or wake on it; no call in flight on its
// relay; no core task awaited) while at least one client session of its
// own is open, its session is closed and its process stopped (MCP
// "Lifecycle", stdio shutdown): the shared session is parked; one that
// nothing has used since the Adapter began (but its own initialize and
// lists) parks as soon as a client session of its own is up, so that
// one MCP client costs one server process at once. The
// adapter keeps serving as before: the tool list and catalog stay the
// last ones listed, Ended stays false and Run goes on (a parked session
// is no exit), PID is 0. Its next use (an OpenTool or OTC call, a client
// served by it, a catalog request, a task, or a list after a
// list_changed, which the clients' own sessions hear and which relists
// on the shared session: lists.go) starts the process again, initializes
// it, lists its tools (a changed document is signalled) and serves on
// it; a failed start ends Run with the reason, as the server's exit
// would (the host restarts it). A server reached by URL is never
// parked: its session costs no process of the host's.

// DefaultSharedIdle is the default of Options.SharedIdle.
const DefaultSharedIdle = 30 * time.Second

// parking is the state of the shared session's parking.
type parking struct {
	mu      sync.Mutex
	last    time.Time          // the shared session's last use
	parked  bool               // the session is closed for idleness and not yet woken
	closed  *mcp.ClientSession // the session last parked
	waking  chan struct{}      // closed when the wake under way ended; nil: none
	wakeErr error              // the last wake's error, set before waking closes
	woke    chan struct{}      // Run's signal of a wake's end (buffer 1)
	// used: sharedSession served a use since the Adapter began; until
	// then the session parks as soon as a client session of its own is
	// up (now: idleOut's signal of that, buffer 1).
	used bool
	now  chan struct{}
}

// sharedSession returns the shared session for a use with ctx, started
// again first when it is parked, and marks it used. Errors: the wake's
// (the server could not be started or initialized), ctx's.
func (a *Adapter) sharedSession(ctx context.Context) (*mcp.ClientSession, error) {
	a.park.mu.Lock()
	a.park.last, a.park.used = time.Now(), true
	if !a.park.parked {
		a.park.mu.Unlock()
		return a.cs.Load(), nil
	}
	if a.park.waking == nil {
		a.park.waking = make(chan struct{})
		go a.wake(a.park.waking)
	}
	waking := a.park.waking
	a.park.mu.Unlock()
	select {
	case <-waking:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	a.park.mu.Lock()
	defer a.park.mu.Unlock()
	if err := a.park.wakeErr; err != nil {
		return nil, err
	}
	return a.cs.Load(), nil
}

// sharedNow is the shared session as it is, parked or not (nil before
// the connection attempt ended or when it failed).
func (a *Adapter) sharedNow() *mcp.ClientSession { return a.cs.Load() }

// wake starts the parked server again: a new process, initialize and
// the lists (initialize), within Options.InitTimeout and before Kill;
// then closes done and tells Run (park.woke).
func (a *Adapter) wake(done chan struct{}) {
	old := a.document()
	cs, proc, err := a.reconnect()
	a.park.mu.Lock()
	a.park.wakeErr = err
	if err == nil {
		a.cs.Store(cs)
		a.park.parked = false
		a.park.last = time.Now()
	}
	a.park.waking = nil
	a.park.mu.Unlock()
	close(done)
	if err == nil {
		a.log.Info("MCP server's shared session started again", "server", a.launch.Name, "pid", proc.pid())
		if !sameDocument(old, a.document()) {
			a.signalChanged()
		}
	}
	select {
	case a.park.woke <- struct{}{}:
	default:
	}
}

// reconnect starts the server and initializes a shared session with it
// as connect does, in ProtocolVersion. Errors: connectError's.
func (a *Adapter) reconnect() (*mcp.ClientSession, *process, error) {
	ictx, cancel := a.initContext(context.Background())
	defer cancel()
	t, proc, err := a.sharedTransport()
	if err != nil {
		return nil, nil, fmt.Errorf("MCP server %q: %w", a.launch.Name, err)
	}
	cs, err := a.initializeBefore(ictx, t, proc, ProtocolVersion)
	if err != nil {
		return nil, nil, a.connectError(context.Background(), ictx, proc, err)
	}
	return cs, proc, nil
}

// document is the current OpenTool document.
func (a *Adapter) document() *opentool.OpenTool {
	a.mu.RLock()
	defer a.mu.RUnlock()
	return a.conv.doc
}

// signalChanged signals DocumentChanged without blocking.
func (a *Adapter) signalChanged() {
	select {
	case a.changed <- struct{}{}:
	default:
	}
}

// parks reports whether the shared session may ever be parked: a
// per-client command server with SharedIdle > 0.
func (a *Adapter) parks() bool {
	return !a.opts.Shared && a.launch.Server.URL == "" && a.opts.SharedIdle > 0
}

// idleOut parks the shared session cs whenever it is idle (parkable),
// checking every quarter of SharedIdle and when a client session of its
// own is up (parkSoon), until ctx ends; and retires the pristine own
// sessions that may retire (retire.go) as often.
func (a *Adapter) idleOut(ctx context.Context) {
	if !a.parks() {
		return
	}
	t := time.NewTicker(a.opts.SharedIdle / 4)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		case <-a.park.now:
		}
		a.retirePristine() // retire.go
		if cs := a.parkIfIdle(); cs != nil {
			// PID says 0 once parked: the process stopping is still proc's.
			a.log.Info("MCP server's shared session idle: its process stops until its next use", "server", a.launch.Name, "idle", a.opts.SharedIdle, "pid", a.proc.Load().pid())
			_ = cs.Close()
			a.renewLending() // its next process is a new session's: pristine (borrow.go)
		}
	}
}

// parkSoon has idleOut look at once whether the shared session is idle:
// a client session of its own is up.
func (a *Adapter) parkSoon() {
	select {
	case a.park.now <- struct{}{}:
	default:
	}
}

// parkIfIdle marks the shared session parked and returns it, to be
// closed, when it is idle: unused for SharedIdle (never used: at once),
// no call in flight on it, no core task awaited, and a client session of
// its own open. nil: not parked.
func (a *Adapter) parkIfIdle() *mcp.ClientSession {
	if !a.ownOpen() || a.relay.inFlight() || a.watches.any() {
		return nil
	}
	a.park.mu.Lock()
	defer a.park.mu.Unlock()
	idle := a.opts.SharedIdle
	if !a.park.used {
		idle = 0
	}
	if a.park.parked || a.park.waking != nil || time.Since(a.park.last) < idle {
		return nil
	}
	a.park.parked = true
	a.park.closed = a.cs.Load()
	return a.park.closed
}

// parkedEnd reports whether cs, the shared session, ended because it
// was parked.
func (a *Adapter) parkedEnd(cs *mcp.ClientSession) bool {
	a.park.mu.Lock()
	defer a.park.mu.Unlock()
	return a.park.closed == cs
}

// isParked reports whether the shared session is parked.
func (a *Adapter) isParked() bool {
	a.park.mu.Lock()
	defer a.park.mu.Unlock()
	return a.park.parked
}

// ownOpen reports whether a client session has an upstream session of
// its own connected.
func (a *Adapter) ownOpen() bool {
	a.clients.mu.Lock()
	defer a.clients.mu.Unlock()
	for _, u := range a.clients.by {
		if isClosed(u.ready) && u.err == nil {
			return true
		}
	}
	return false
}

// awaitWake waits, the shared session parked, for its wake and returns
// the new session and process. Errors: the wake's, ctx's.
func (a *Adapter) awaitWake(ctx context.Context) (*mcp.ClientSession, *process, error) {
	for {
		select {
		case <-ctx.Done():
			return nil, nil, ctx.Err()
		case <-a.park.woke:
		}
		a.park.mu.Lock()
		parked, err := a.park.parked, a.park.wakeErr
		a.park.mu.Unlock()
		if err != nil {
			return nil, nil, err
		}
		if !parked {
			return a.cs.Load(), a.proc.Load(), nil
		}
	}
}
