package supervise

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/opentool-host/opentool-host/host/core"
	"github.com/opentool-host/opentool-host/host/discover"
	"github.com/opentool-host/opentool-host/process/cgroup"
	"github.com/opentool-host/opentool-host/process/launcher"
	"github.com/opentool-host/opentool-host/protocol/argcheck"
	"github.com/opentool-host/opentool-host/protocol/lockfile"
	"github.com/opentool-host/opentool-host/protocol/opentool"
)

// view is the part of a plugin the call path reads, swapped atomically.
type view struct {
	state   core.State
	inst    *instance     // current process (nil when none)
	changed chan struct{} // closed when the next view is published
	lastErr string
	// remote: restarting a server reached by URL (FileRef.Remote),
	// which is unreachable: calls fail at once (unreachableError)
	// rather than wait for it.
	remote bool
}

// Supervisor is what every Plugin gets from its host (never the host
// itself): the settings, the state folder, the logger, the context that
// bounds starts (it ends when the host closes), and the channel a plugin
// signals when its state or document changed. The host fills it once,
// before the first NewPlugin; Keeper may be stored later.
type Supervisor struct {
	// Cfg is the host's settings; read only.
	Cfg *core.Config
	// State is the host-owned state folder (binary copies by sha256).
	State *discover.StateDir
	// Log is the host's logger.
	Log hclog.Logger
	// Ctx bounds starts: it ends when the host closes.
	Ctx context.Context
	// Changed is signalled (without blocking) when a plugin's state or
	// document changed: the routes are due a rebuild.
	Changed chan<- struct{}
	// Pins is the lock a Locked host enforces (nil: none).
	Pins *discover.Pins
	// Events receives the lifecycle events (GET /events).
	Events *core.EventHub
	// Cgroups makes one cgroup per plugin process (nil: unavailable).
	Cgroups *cgroup.Root
	// NoCgroups says why Cgroups is nil, for the refusal of a limit only
	// a cgroup can hold.
	NoCgroups string
	// Keeper kills what is left of the plugins if the host dies
	// (Config.Keeper; nil without one).
	Keeper atomic.Pointer[launcher.Keeper]
	// ResourceUpdated is told that plugin's process reported resource
	// uri changed (Host.OnResourceUpdated); LogMessage of the params of
	// a notifications/message plugin sent outside calls
	// (Host.OnLogMessage); ListChanged of a list ("tools", "prompts",
	// "resources") whose list_changed plugin's MCP server sent
	// (Host.OnListChanged). All must be set and must not block long.
	ResourceUpdated func(plugin, uri string)
	LogMessage      func(plugin string, params json.RawMessage)
	ListChanged     func(plugin, list string)
}

// Plugin supervises one plugin file. Its life is next (lifecycle.go):
// every event (a file change, a start result, an exit, a timer, removal)
// goes through step, which runs next and performs the actions it returns.
// None of those actions blocks: starts, stops, drains and exit watches
// run in goroutines that report back with an event. Safe for concurrent
// use.
type Plugin struct {
	name string
	path string // the file that declares it (an executable or NAME.mcp.json); fixed
	sv   *Supervisor

	// v is the view of the call path (request.go).
	v atomic.Pointer[view]
	// cat is the MCP catalog of its serving process (catalog.go); nil
	// before one loaded.
	cat atomic.Pointer[Catalog]

	mu      sync.Mutex // held for one step; guards the fields below
	life    life
	timer   *time.Timer            // the armed backoff timer
	live    map[*instance]struct{} // processes started and not yet stopped
	settled []chan struct{}        // closed when no start is in flight
	gone    chan struct{}          // closed when stopped

	wg sync.WaitGroup // the goroutines performing actions
}

// NewPlugin returns the Plugin of name, declared by the file at path,
// starting, with nothing asked yet (Sync starts it); sv is its host's
// Supervisor, filled.
func NewPlugin(sv *Supervisor, name, path string) *Plugin {
	p := &Plugin{name: name, path: path, sv: sv, life: newLife(sv.Cfg.Restart), live: map[*instance]struct{}{}, gone: make(chan struct{})}
	p.v.Store(&view{state: core.StateStarting, changed: make(chan struct{})})
	return p
}

// Name returns the plugin's name.
func (p *Plugin) Name() string { return p.name }

// SharedTools reports whether the catalog of the plugin's serving
// process says it lists the same tools to every MCP client
// (Catalog.SharedTools); false without a catalog.
func (p *Plugin) SharedTools() bool {
	c := p.cat.Load()
	return c != nil && c.SharedTools
}

// Path returns the file that declares the plugin (an executable or
// NAME.mcp.json), as NewPlugin got it.
func (p *Plugin) Path() string { return p.path }

// PinsChanged tells the plugin the lock (Supervisor.Pins) was reloaded:
// a start or document change it held is tried again.
func (p *Plugin) PinsChanged() { p.handle(evPinsChanged{}) }

// Sync hands the plugin its file as found now (evFile) and returns a
// channel closed once no start is in flight: the start, replacement or
// retry it caused is done. The file is hashed (outside the lock) only
// when a process has loaded and the stamp differs from its file's.
func (p *Plugin) Sync(c discover.Candidate) <-chan struct{} {
	f := discover.FileRef{Path: c.Path, Stamp: c.Info, Sum: c.Sum, Launch: c.Launch, Fault: c.Fault, Policy: c.Policy, FileSum: c.FileSum}
	p.mu.Lock()
	hash := p.life.sum != "" && !f.Same(p.life.file)
	p.mu.Unlock()
	if hash && f.Launch == "" && f.Fault == "" {
		f.Sum, _ = lockfile.FileSHA256(f.Path) // unreadable: unknown, so it is started
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.step(evFile{file: f})
	ch := make(chan struct{})
	if p.life.starting == 0 {
		close(ch)
	} else {
		p.settled = append(p.settled, ch)
	}
	return ch
}

// Remove tells the plugin its file is gone and returns a channel closed
// once it is stopped (drained).
func (p *Plugin) Remove() <-chan struct{} {
	p.handle(evRemoved{})
	return p.gone
}

// Close tells the plugin the host is closing; Wait then waits until
// every process it started is stopped.
func (p *Plugin) Close() { p.handle(evClosing{}) }

// Wait returns once every goroutine performing the plugin's actions has
// ended (after close: every process is stopped).
func (p *Plugin) Wait() { p.wg.Wait() }

// Kill SIGKILLs every process of the plugin now (Close past its deadline).
func (p *Plugin) Kill() {
	p.mu.Lock()
	live := make([]*instance, 0, len(p.live))
	for inst := range p.live {
		live = append(live, inst)
	}
	p.mu.Unlock()
	for _, inst := range live {
		inst.kill()
	}
}

// handle runs one step for ev.
func (p *Plugin) handle(ev event) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.step(ev)
}

// step runs next for ev and performs its actions, then wakes those
// waiting for the plugin to settle or stop. Callers hold p.mu.
func (p *Plugin) step(ev event) {
	var acts []action
	p.life, acts = next(p.life, ev)
	for _, a := range acts {
		p.perform(a)
	}
	if p.life.starting == 0 {
		for _, ch := range p.settled {
			close(ch)
		}
		p.settled = nil
	}
	if p.life.state == core.StateStopped && !isClosed(p.gone) {
		close(p.gone)
	}
}

// perform does one action without blocking. Callers hold p.mu.
func (p *Plugin) perform(a action) {
	switch a := a.(type) {
	case actStart:
		p.goDo(func() { p.start(a.attempt, a.file) })
	case actStop:
		p.goDo(func() { a.inst.stop(); p.forget(a.inst) })
	case actDrain:
		p.goDo(func() {
			a.inst.drain(p.sv.Cfg.DrainTimeout)
			p.forget(a.inst)
			p.handle(evDrained{inst: a.inst})
		})
	case actWatch:
		p.goDo(func() { p.watch(a.inst) })
		p.goDo(func() { p.followDocument(a.inst) })
	case actBackoff:
		p.stopTimer()
		rp := p.sv.Cfg.Restart
		if a.remote {
			rp.MaxBackoff = min(rp.MaxBackoff, remoteBackoff)
		}
		p.timer = time.AfterFunc(backoff(rp, a.failures), func() { p.handle(evBackoff{timer: a.timer}) })
	case actCancelBackoff:
		p.stopTimer()
	case actPublish:
		p.publish()
	case actChanged:
		select {
		case p.sv.Changed <- struct{}{}:
		default: // a rebuild is already due
		}
	case actLog:
		p.sv.Log.Log(a.level, a.msg, append([]any{"plugin", p.name}, a.kv...)...)
		if a.event != "" {
			p.sv.Events.Publish(core.Event{Type: a.event, Plugin: p.name, Message: a.msg, Reason: a.reason})
		}
	}
}

// goDo runs f in a goroutine counted by p.wg.
func (p *Plugin) goDo(f func()) {
	p.wg.Add(1)
	go func() {
		defer p.wg.Done()
		f()
	}()
}

// start starts a process from file and reports the result.
func (p *Plugin) start(attempt int, file discover.FileRef) {
	p.mu.Lock()
	serving := p.life.doc
	p.mu.Unlock()
	inst, err := startInstance(p.sv.Ctx, p.sv, p.name, file, serving)
	if err != nil && p.sv.Ctx.Err() != nil {
		// The host is closing and the start gave up for it (or failed
		// while it did): the closing, not a failure to retry.
		p.handle(evClosing{})
		return
	}
	if err != nil {
		var se *startError
		var stderr []string
		if errors.As(err, &se) {
			stderr = UserPaths(se.stderr, p.sv.State.Bin, file.Path)
		}
		reason := err.Error()
		if hint := StartHint(file.Path, stderr); hint != "" {
			reason += "; next: " + hint
		}
		p.handle(evStartFailed{attempt: attempt, err: reason, held: discover.IsHeld(err), stderr: stderr})
		return
	}
	p.cat.Store(inst.catalog) // nil: the new process serves none
	p.mu.Lock()
	defer p.mu.Unlock()
	p.live[inst] = struct{}{}
	p.step(evStarted{attempt: attempt, inst: inst})
}

// watch reports inst's exit.
func (p *Plugin) watch(inst *instance) {
	<-inst.exited()
	p.handle(evExited{
		inst: inst, asked: inst.stopped.Load(), up: time.Since(inst.started),
		pid: inst.pid(), status: inst.exitStatus(), stderr: UserPaths(inst.stderrTail(), p.sv.State.Bin, inst.path),
	})
}

// followDocument reports each changed document inst loads, unless the
// lock holds it.
func (p *Plugin) followDocument(inst *instance) {
	inst.followDocument(p.sv.Ctx, p.sv.Cfg, followers{
		catalog: func(c *Catalog) {
			p.cat.Store(c)
			p.mu.Lock()
			p.perform(actChanged{})
			p.mu.Unlock()
		},
		updated: func(uri string) { p.sv.ResourceUpdated(p.name, uri) },
		logged:  func(params json.RawMessage) { p.sv.LogMessage(p.name, params) },
		listed:  func(list string) { p.sv.ListChanged(p.name, list) },
		document: func(doc *opentool.OpenTool, args []*argcheck.Validator) {
			p.mu.Lock()
			serving := p.life.doc
			p.mu.Unlock()
			if _, err := p.sv.Pins.CheckDefinitions(p.name, doc, serving); err != nil {
				p.handle(evHeld{inst: inst, err: err.Error()})
				return
			}
			p.handle(evReloaded{inst: inst, doc: doc, args: args})
		},
	})
}

// PinState returns what Host.Pins pins of the plugin: the file it was
// last started from, the sha256 of the process that loaded, and its
// document.
func (p *Plugin) PinState() (discover.FileRef, string, *opentool.OpenTool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.life.file, p.life.sum, p.life.doc
}

// forget drops inst from the live processes once it is stopped.
func (p *Plugin) forget(inst *instance) {
	p.mu.Lock()
	defer p.mu.Unlock()
	delete(p.live, inst)
}

// stopTimer disarms the backoff timer. Callers hold p.mu.
func (p *Plugin) stopTimer() {
	if p.timer != nil {
		p.timer.Stop()
		p.timer = nil
	}
}

// publish stores the view of p.life and wakes everyone waiting on the old
// one. Callers hold p.mu.
func (p *Plugin) publish() {
	old := p.v.Load()
	remote := p.life.state == core.StateRestarting && p.life.file.Remote()
	p.v.Store(&view{state: p.life.state, inst: p.life.inst, changed: make(chan struct{}), lastErr: p.life.lastErr, remote: remote})
	close(old.changed)
}

// isClosed reports whether ch is closed.
func isClosed(ch chan struct{}) bool {
	select {
	case <-ch:
		return true
	default:
		return false
	}
}

// remoteBackoff caps the backoff of a server reached by URL
// (FileRef.Remote), which is retried without end: with the jitter, at
// most 7.5 s pass between its tries, so that a server back after an
// outage of any length is served again within that.
const remoteBackoff = 5 * time.Second

// backoff is InitialBackoff·2^(failures-1), capped at MaxBackoff, plus up
// to 50% jitter.
func backoff(rp core.RestartPolicy, failures int) time.Duration {
	d := rp.InitialBackoff
	for i := 1; i < failures && d < rp.MaxBackoff; i++ {
		d *= 2
	}
	d = min(d, rp.MaxBackoff)
	return d + time.Duration(rand.Int64N(int64(d)/2+1))
}

// Offer is what a plugin offers the host's routing table: its state
// and its last good document.
type Offer struct {
	// P is the plugin.
	P *Plugin
	// State is its lifecycle state.
	State core.State
	// Doc and Args are its last good document (inlined; nil: none yet)
	// and the validators of its functions (nil entries: unchecked).
	Doc  *opentool.OpenTool
	Args []*argcheck.Validator
	// Cat is the MCP catalog of its serving process; nil: none.
	Cat *Catalog
	// Timeout bounds one call: the serving process's policy, else
	// Config.CallTimeout.
	Timeout time.Duration
	// Declared is set when the document is a declared plugin's, served
	// in the host's process (its file is a declaration: FileRef.Launch),
	// the only documents whose MCP tool definitions (Function.MCPTool)
	// /mcp serves.
	Declared bool
}

// Offer returns the plugin's offer now.
func (p *Plugin) Offer() Offer {
	p.mu.Lock()
	defer p.mu.Unlock()
	o := Offer{P: p, State: p.life.state, Doc: p.life.doc, Args: p.life.args, Timeout: p.sv.Cfg.CallTimeout, Cat: p.cat.Load(),
		Declared: p.life.file.Launch != ""}
	if p.life.inst != nil {
		o.Timeout = p.life.inst.timeout
	}
	return o
}

// PluginStatus is the state of one plugin as GET /health reports it.
type PluginStatus struct {
	// Name is the plugin's name.
	Name string `json:"name"`
	// Path is the plugin file in the plugins directory.
	Path string `json:"path"`
	// State is the lifecycle state.
	State core.State `json:"state"`
	// PID is the process id (0 when no process runs).
	PID int `json:"pid"`
	// Restarts counts restarts after crashes since the plugin was found.
	Restarts int `json:"restarts"`
	// ClientRestarts counts, for a declared MCP server with sessions per
	// client, the clients' own server processes (or sessions) that ended
	// by themselves during the plugin's current run, each replaced at its
	// client's next call (wire.Local.ClientRestarts); omitted while 0.
	ClientRestarts int `json:"client_restarts,omitempty"`
	// Functions are the names of the functions the plugin declares.
	Functions []string `json:"functions"`
	// Conflicts are the functions the plugin declares that another
	// plugin owns (see host/routes.go): refused, or served under another name.
	Conflicts []Conflict `json:"conflicts,omitempty"`
	// Refused lists what the plugin declares but refused to serve, with
	// the reason: its document's refused list (opentool.OpenTool.Refused;
	// e.g. an MCP server's tool whose input schema is not an object).
	// A ready plugin that refused something is StateDegraded.
	Refused []opentool.Refusal `json:"refused,omitempty"`
	// LastError is the reason of the last crash or failure ("" when none).
	LastError string `json:"last_error,omitempty"`
	// Failures counts the crashes and failed restarts in a row of a
	// restarting plugin (0 once it serves again or stayed up
	// Restart.ResetAfter): Restart.MaxFailures of them fail a plugin, but
	// a server reached by URL is tried without end.
	Failures int `json:"failures,omitempty"`
	// Lock is how the plugin stands with opentool.lock when the host
	// runs --locked: "pinned" (its files and definitions are the pinned
	// ones), "unpinned", or "held" (a change waits for `opentool-host
	// lock --update NAME`; LastError says what changed). Empty without a
	// lock.
	Lock string `json:"lock,omitempty"`
	// Policy is the plugin's effective policy when it has a
	// NAME.policy.json (discover/policy.go): secrets by name only.
	Policy *discover.PolicyStatus `json:"policy,omitempty"`
	// Transport is how calls reach the current process: "data-channel"
	// (the plugin offered the lean channel, internal/wire frame.go) or
	// "grpc" (Invoke streams). Empty when no process runs.
	Transport string `json:"transport,omitempty"`
	// SHA256 is the hex sha256 of the running binary.
	SHA256 string `json:"sha256,omitempty"`
	// UptimeMS is how long the current process has run, in ms.
	UptimeMS int64 `json:"uptime_ms"`
	// InFlight counts the calls the current process runs or queues.
	InFlight int64 `json:"in_flight"`
	// Queued counts the calls waiting for a concurrency slot.
	Queued int64 `json:"queued"`
	// Stderr holds the last lines (at most 20, oldest first) the current
	// process wrote to stderr, or the last crashed one when none runs. It
	// is shown on /health, behind the API keys, and never sent to callers.
	Stderr []string `json:"stderr,omitempty"`
}

// Conflict is a function a plugin declares under a name another plugin
// owns.
type Conflict struct {
	// Function is the declared name.
	Function string `json:"function"`
	// Owner is the plugin that owns (serves) that name.
	Owner string `json:"owner"`
	// ServedAs is the name the duplicate is served under with
	// Config.PrefixCollisions ("PLUGIN__NAME"); "" when it is refused.
	ServedAs string `json:"served_as,omitempty"`
}

// String says what the conflict does, in one line: "function repeat is
// owned by notes; served as mine__repeat", or "...; refused".
func (c Conflict) String() string {
	if c.ServedAs == "" {
		return fmt.Sprintf("function %s is owned by %s; refused", c.Function, c.Owner)
	}
	return fmt.Sprintf("function %s is owned by %s; served as %s", c.Function, c.Owner, c.ServedAs)
}

// Status returns the plugin's status (without Conflicts, which the
// routing table knows: Host.Plugins).
func (p *Plugin) Status() PluginStatus {
	p.mu.Lock()
	l := p.life
	p.mu.Unlock()
	s := PluginStatus{Name: p.name, Path: l.file.Path, State: l.state, Restarts: l.restarts, LastError: l.lastErr, Functions: []string{}}
	if l.state == core.StateRestarting {
		s.Failures = l.failures
	}
	if l.doc != nil {
		for _, f := range l.doc.Functions {
			s.Functions = append(s.Functions, f.Name)
		}
		s.Refused = slices.Clone(l.doc.Refused)
		if s.State == core.StateReady && len(s.Refused) > 0 {
			s.State = core.StateDegraded
		}
	}
	s.Stderr = l.stderr
	s.Lock = p.sv.Pins.Status(p.name, l.file, l.sum, l.doc, l.held)
	s.Policy = discover.PolicyStatusOf(p.sv.Cfg, p.name, l.file)
	if l.inst != nil && !l.inst.hasExited() {
		s.PID = l.inst.pid()
		s.SHA256 = l.inst.sum
		s.Transport = l.inst.transport()
		s.UptimeMS = time.Since(l.inst.started).Milliseconds()
		s.InFlight = l.inst.calls.Load()
		s.Queued = l.inst.queued.Load()
		s.Stderr = l.inst.stderrTail()
		if l.inst.local != nil {
			s.ClientRestarts = l.inst.local.plugin.ClientRestarts()
		}
	}
	return s
}

// The readiness statuses of a host (GET /health?ready=1 answers
// {"status":STATUS}).
const (
	// ReadinessReady (HTTP 200): every plugin is Settled; send traffic.
	ReadinessReady = "ready"
	// ReadinessStarting (HTTP 503): a plugin is starting or restarting.
	ReadinessStarting = "starting"
	// ReadinessDraining (HTTP 503): the host was told to stop (the front
	// door's Drain) and will; send no new requests. It still serves those
	// it gets.
	ReadinessDraining = "draining"
)

// Readiness is ReadinessStarting while a plugin of ps is not Settled,
// else ReadinessReady (draining is the front door's to add).
func Readiness(ps []PluginStatus) string {
	for _, p := range ps {
		if !p.State.Settled() {
			return ReadinessStarting
		}
	}
	return ReadinessReady
}
