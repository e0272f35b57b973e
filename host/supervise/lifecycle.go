package supervise

// The life of one plugin, as a pure transition function: next(life,
// event) returns the new life and the actions to perform. Plugin.step
// (plugin.go) feeds it events and performs the actions; nothing else
// changes a plugin's state.

import (
	"fmt"
	"time"

	"github.com/opentool-host/opentool-host/host/core"
	"github.com/opentool-host/opentool-host/host/discover"

	"github.com/hashicorp/go-hclog"

	"github.com/opentool-host/opentool-host/protocol/argcheck"
	"github.com/opentool-host/opentool-host/protocol/opentool"
)

// life is one plugin's lifecycle state: everything next decides on. It
// is a value; next returns a new one and never changes the instances it
// points to (it reads their immutable fields: doc, args, sum).
type life struct {
	// state is the published state (plugin.go's State constants).
	state core.State
	// rp is the restart policy (MaxFailures, ResetAfter); constant.
	rp core.RestartPolicy

	// file is the plugin file the serving process was started from, or
	// the last one tried when none serves.
	file discover.FileRef
	// inst is the serving process (ready) or the one being drained
	// (draining); nil in every other state.
	inst *instance
	// sum is the sha256 of the last process that loaded (the serving one,
	// or the one that crashed); "" before any did.
	sum string
	// stderr is what the last crashed process last wrote to stderr, for
	// /health (never for callers).
	stderr []string
	// doc and args are the last good document (inlined) and its
	// validators, kept while restarting and failed: they decide which
	// function names the plugin keeps (host/routes.go).
	doc  *opentool.OpenTool
	args []*argcheck.Validator

	// seq numbers starts and backoff timers, so that a late result of an
	// abandoned one is recognised.
	seq int
	// starting is the number of the start in flight (0: none) and
	// startFile the file it runs.
	starting  int
	startFile discover.FileRef
	// queued is a newer file seen while a start was in flight; it is
	// handled as an evFile when that start ends.
	queued *discover.FileRef
	// timer is the number of the armed backoff timer (0: none).
	timer int

	// failures counts consecutive crashes and failed restarts; restarts
	// counts crashes since the plugin was found.
	failures int
	restarts int
	// lastErr is the reason of the last crash or failure ("" when none).
	lastErr string
	// held: the last start or document change was held by the lock
	// (discover/pins.go); a changed lock retries it (evPinsChanged).
	held bool
}

// newLife is the life of a plugin just found: starting, nothing asked.
func newLife(rp core.RestartPolicy) life { return life{state: core.StateStarting, rp: rp} }

// event is something that happened to a plugin: one of the ev* types.
type event interface{ isEvent() }

type (
	// evFile: the plugin's file was found, changed, or rescanned (SIGHUP).
	evFile struct{ file discover.FileRef }
	// evStarted: start number attempt succeeded with inst.
	evStarted struct {
		attempt int
		inst    *instance
	}
	// evStartFailed: start number attempt failed with err; held when
	// the lock held it (discover/pins.go).
	evStartFailed struct {
		attempt int
		err     string
		held    bool
		stderr  []string // what the process wrote before it failed
	}
	// evHeld: the lock held a changed document of inst (err says why);
	// the previous one keeps serving.
	evHeld struct {
		inst *instance
		err  string
	}
	// evPinsChanged: the lock file changed; a held plugin tries again.
	evPinsChanged struct{}
	// evExited: inst's process exited after up; asked when its stop was
	// asked (then it is no crash). pid, status and stderr are for the log.
	evExited struct {
		inst   *instance
		asked  bool
		up     time.Duration
		pid    int
		status string
		stderr []string
	}
	// evBackoff: backoff timer number timer fired.
	evBackoff struct{ timer int }
	// evRemoved: the plugin's file is gone (or no longer a plugin).
	evRemoved struct{}
	// evClosing: the host is closing.
	evClosing struct{}
	// evDrained: inst finished draining and is stopped.
	evDrained struct{ inst *instance }
	// evReloaded: inst reported a changed document and it loaded:
	// doc (inlined) with its validators args.
	evReloaded struct {
		inst *instance
		doc  *opentool.OpenTool
		args []*argcheck.Validator
	}
)

// isEvent marks the ev* types as events.
func (evFile) isEvent()        {}
func (evStarted) isEvent()     {}
func (evStartFailed) isEvent() {}
func (evExited) isEvent()      {}
func (evBackoff) isEvent()     {}
func (evRemoved) isEvent()     {}
func (evClosing) isEvent()     {}
func (evDrained) isEvent()     {}
func (evReloaded) isEvent()    {}
func (evHeld) isEvent()        {}
func (evPinsChanged) isEvent() {}

// action is something next asks Plugin.step to do: one of the act* types.
type action interface{ isAction() }

type (
	// actStart: start a process from file (start number attempt) and
	// report evStarted or evStartFailed.
	actStart struct {
		attempt int
		file    discover.FileRef
	}
	// actStop: stop inst now (it crashed, or it was started for nothing).
	actStop struct{ inst *instance }
	// actDrain: let inst finish its calls in flight, stop it, report
	// evDrained.
	actDrain struct{ inst *instance }
	// actWatch: report evExited when inst's process exits, and
	// evReloaded each time it reports a changed document that loads.
	actWatch struct{ inst *instance }
	// actBackoff: arm backoff timer number timer, for a delay the
	// performer chooses from failures (RestartPolicy; remote: a server
	// reached by URL, whose delay is capped at remoteBackoff), then
	// report evBackoff.
	actBackoff struct {
		timer, failures int
		remote          bool
	}
	// actCancelBackoff: disarm the backoff timer.
	actCancelBackoff struct{}
	// actPublish: store a new view (state, inst, lastErr) for the call
	// path and wake those waiting on the old one.
	actPublish struct{}
	// actChanged: the state or the document changed; the routes follow.
	actChanged struct{}
	// actLog: log msg at level with kv (the plugin's name is added);
	// when event is set, also publish that lifecycle event (core/events.go)
	// with reason.
	actLog struct {
		level  hclog.Level
		msg    string
		kv     []any
		event  string
		reason string
	}
)

// isAction marks the act* types as actions.
func (actStart) isAction()         {}
func (actStop) isAction()          {}
func (actDrain) isAction()         {}
func (actWatch) isAction()         {}
func (actBackoff) isAction()       {}
func (actCancelBackoff) isAction() {}
func (actPublish) isAction()       {}
func (actChanged) isAction()       {}
func (actLog) isAction()           {}

// next is the lifecycle of one plugin: from life st and event ev it
// returns the new life and the actions to perform, in order. It does no
// I/O, starts no goroutine and reads no clock.
//
//	             found
//	               │
//	               ▼            start failed
//	┌──────────► starting ────────────────────────────┐
//	│              │ start succeeded                  │
//	│              ▼                                  ▼
//	│  file  ┌─► ready ───── crash, MaxFailures-th ─► failed
//	│ changed│   │ │  ▲                               ▲  │
//	│        └───┘ │  │ start succeeded               │  │
//	│        crash ▼  │                               │  │
//	│          restarting ─── start failed, ──────────┘  │
//	│            │    ▲       MaxFailures-th             │
//	│            └────┘ backoff fired: start;            │
//	│                   start failed: backoff;           │
//	│                   file changed: start it           │
//	└─────────── file changed or rescan: retry ──────────┘
//
//	removed, closing:  ready ──► draining ── drained ──► stopped
//	                   starting, restarting, failed ───► stopped
//
// The rules beside the arrows:
//   - A file whose path and stamp did not change is left alone, except
//     by a failed plugin, which any evFile retries (a rescan or SIGHUP):
//     a first start that failed is failed at once, and retried so. A
//     changed file with the serving binary's sha256 (touched) is not
//     restarted.
//   - Replacing is blue/green (ready → ready): the new process is
//     started while the old one serves; on success the view switches to
//     it and the old one drains; on failure the old one keeps serving,
//     and that file is not tried again until it changes.
//   - One start at a time: a file seen while a start is in flight is
//     queued and handled when that start ends. A start result that is no
//     longer wanted (its number is not starting) is stopped.
//   - A crash (an exit of the serving process that was not asked for)
//     counts a failure, unless the process had been up for ResetAfter,
//     which first clears the count; so does a failed restart. The
//     MaxFailures-th failure in a row fails the plugin (a crash loop);
//     before that a backoff timer is armed, the caller choosing its delay
//     from the count. When a start is in flight at a crash (a
//     replacement), that start is the next try instead. A first start, a
//     retry and a replacement that succeed clear the count; a restart
//     keeps it.
//   - A server reached by URL (FileRef.Remote) is never failed for
//     crashes or failed starts (its first one included: restarting, with
//     no document until it answers): its backoff (capped at remoteBackoff)
//     goes on until it answers again, its last document keeps its
//     functions listed, and calls meanwhile fail at once (view.remote).
//   - Removal and closing cancel the backoff and any start in flight and
//     drain the serving process; stopped is final.
//   - Every change of state, serving process or reason publishes a new
//     view; every change of state or document is announced (actChanged).
func next(st life, ev event) (life, []action) {
	t := &transition{life: st}
	switch ev := ev.(type) {
	case evFile:
		t.onFile(ev.file)
	case evStarted:
		t.onStarted(ev.attempt, ev.inst)
	case evStartFailed:
		t.onStartFailed(ev.attempt, ev.err, ev.held, ev.stderr)
	case evExited:
		t.onExited(ev)
	case evBackoff:
		t.onBackoff(ev.timer)
	case evRemoved:
		t.onGone("plugin removed; draining it", core.EventRemoved)
	case evClosing:
		t.onGone(closingMessage(st), "")
	case evDrained:
		t.onDrained(ev.inst)
	case evReloaded:
		t.onReloaded(ev)
	case evHeld:
		t.onHeld(ev)
	case evPinsChanged:
		t.onPinsChanged()
	}
	return t.life, t.announce(st)
}

// transition is one step of next: the life being changed and the
// actions asked so far.
type transition struct {
	life
	acts []action
}

// do asks for actions.
func (t *transition) do(a ...action) { t.acts = append(t.acts, a...) }

// log asks for a log line.
func (t *transition) log(level hclog.Level, msg string, kv ...any) {
	t.do(actLog{level: level, msg: msg, kv: kv})
}

// event asks for a log line that is also lifecycle event typ.
func (t *transition) event(typ string, level hclog.Level, msg, reason string, kv ...any) {
	t.do(actLog{level: level, msg: msg, kv: kv, event: typ, reason: reason})
}

// announce puts first the actions that tell the world what changed since
// old: publish (state, process or reason), changed (state or document),
// and a log line for a state change.
func (t *transition) announce(old life) []action {
	var first []action
	if t.state != old.state || t.inst != old.inst || t.lastErr != old.lastErr {
		first = append(first, actPublish{})
	}
	if t.state != old.state || t.doc != old.doc {
		first = append(first, actChanged{})
	}
	if t.state != old.state {
		first = append(first, actLog{level: hclog.Info, msg: "plugin state", kv: []any{"from", old.state, "to", t.state}})
	}
	return append(first, t.acts...)
}

// gone reports whether the plugin was removed or the host is closing.
func (t *transition) gone() bool {
	return t.state == core.StateDraining || t.state == core.StateStopped
}

// onFile handles a found, changed or rescanned file f.
func (t *transition) onFile(f discover.FileRef) {
	switch {
	case t.gone():
	case t.starting != 0:
		if !f.Same(t.startFile) {
			t.queued = &f
		}
	case t.state == core.StateStarting || t.state == core.StateFailed:
		t.file = f
		t.failures = 0
		t.state = core.StateStarting
		t.start(f)
	case f.Same(t.file):
	case f.Sum != "" && f.Sum == t.sum && f.SamePolicy(t.file):
		t.file = f
		t.log(hclog.Debug, "plugin file touched; same sha256, not restarted", "path", f.Path)
	default: // ready: replace blue/green; restarting: start the new file now
		t.cancelBackoff()
		t.start(f)
	}
}

// start asks for a start of f.
func (t *transition) start(f discover.FileRef) {
	t.seq++
	t.starting, t.startFile = t.seq, f
	t.do(actStart{attempt: t.seq, file: f})
}

// onStarted switches to inst when it is the start in flight, draining the
// process it replaces; any other start result is stopped.
func (t *transition) onStarted(attempt int, inst *instance) {
	if attempt != t.starting {
		t.do(actStop{inst: inst})
		return
	}
	t.starting = 0
	restart := t.state == core.StateRestarting && t.startFile.Same(t.file)
	msg := map[core.State]string{core.StateStarting: "plugin ready", core.StateReady: "plugin replaced", core.StateRestarting: "plugin replaced"}[t.state]
	if restart {
		msg = "plugin restarted"
	} else {
		t.failures = 0
	}
	old := t.inst
	t.state, t.inst, t.file, t.sum, t.lastErr, t.held = core.StateReady, inst, t.startFile, inst.sum, "", false
	t.doc, t.args = inst.doc, inst.args
	t.do(actWatch{inst: inst})
	if old != nil {
		t.do(actDrain{inst: old})
	}
	typ := core.EventReady
	if old != nil {
		typ = core.EventReplaced
	}
	t.event(typ, hclog.Info, msg, "", "pid", inst.pid(), "functions", len(inst.doc.Functions), "sha256", discover.ShortSum(inst.sum), "restarts", t.restarts)
	t.dequeue()
}

// rejectEvent is the event of a replacement that failed: held by the
// lock, or rejected.
func (t *transition) rejectEvent(held bool) string {
	if held {
		return core.EventHeld
	}
	return core.EventRejected
}

// failEvent is the event of a first start that failed: held by the lock,
// or failed.
func (t *transition) failEvent(held bool) string {
	if held {
		return core.EventHeld
	}
	return core.EventFailed
}

// onStartFailed handles the failure of the start in flight: a first
// start or a retry is failed at once (a server reached by URL, not held
// by the lock, is restarting instead: backoffOrFail), a replacement leaves the old
// process serving, a restart counts a failure. held says the lock held
// it (retried when the lock changes).
func (t *transition) onStartFailed(attempt int, err string, held bool, stderr []string) {
	if attempt != t.starting {
		return
	}
	t.starting = 0
	t.file, t.lastErr, t.held = t.startFile, err, held
	if t.state != core.StateReady { // a serving process keeps its own stderr
		t.stderr = stderr
	}
	// One line says it all: the stderr the process wrote goes with it.
	kv := []any{"path", t.file.Path, "error", err}
	if len(stderr) > 0 {
		kv = append(kv, "stderr", stderr)
	}
	switch {
	case t.state == core.StateStarting && t.file.Remote() && !held:
		// A server reached by URL that cannot be reached at its first
		// start is down, as in an outage: retried with the remote
		// backoff until it answers, never failed.
		t.state = core.StateRestarting
		t.failures++
		t.event(core.EventRestarting, hclog.Error, "remote MCP server unreachable; connecting with backoff", err, append(kv, "failures", t.failures)...)
		t.backoffOrFail()
	case t.state == core.StateStarting:
		t.state = core.StateFailed
		t.event(t.failEvent(held), hclog.Error, "plugin failed to start; retried when its file changes or on a rescan", err, kv...)
	case t.state == core.StateReady:
		t.event(t.rejectEvent(held), hclog.Error, "new plugin binary rejected; the old process keeps serving", err, kv...)
	case t.state == core.StateRestarting:
		t.failures++
		t.log(hclog.Error, "plugin restart failed", append(kv, "failures", t.failures)...)
		t.backoffOrFail()
	}
	t.dequeue()
}

// onExited handles an exit: the serving process exiting unasked is a
// crash; every other exit was asked for or is of a process no longer
// served.
func (t *transition) onExited(ev evExited) {
	if ev.asked || ev.inst != t.inst || t.state != core.StateReady {
		return
	}
	if ev.up >= t.rp.ResetAfter {
		t.failures = 0
	}
	t.failures++
	t.restarts++
	t.state, t.inst = core.StateRestarting, nil
	t.lastErr = fmt.Sprintf("plugin exited (pid %d, %s)", ev.pid, ev.status)
	t.stderr = ev.stderr
	t.do(actStop{inst: ev.inst}) // what is left of its process group, its binary copy
	if t.file.Remote() {
		// No process of the host's: the server or the network ended
		// the session (the adapter's status names the URL and why).
		t.lastErr = ev.status
		t.event(core.EventRestarting, hclog.Error, "remote MCP server lost; reconnecting with backoff", t.lastErr, "status", ev.status, "failures", t.failures)
	} else {
		t.event(core.EventRestarting, hclog.Error, "plugin crashed", t.lastErr, "pid", ev.pid, "status", ev.status, "stderr", ev.stderr, "failures", t.failures)
	}
	t.backoffOrFail()
}

// onReloaded serves the changed document of the serving process; a
// change reported by any other process (draining, replaced) is dropped.
func (t *transition) onReloaded(ev evReloaded) {
	if ev.inst != t.inst || t.state != core.StateReady {
		return
	}
	t.doc, t.args = ev.doc, ev.args
	t.event(core.EventChanged, hclog.Info, "plugin document changed", "", "pid", ev.inst.pid(), "functions", len(ev.doc.Functions))
}

// onHeld records that the lock held the serving process's changed
// document (the previous one keeps serving).
func (t *transition) onHeld(ev evHeld) {
	if ev.inst != t.inst || t.state != core.StateReady {
		return
	}
	t.held, t.lastErr = true, ev.err
	t.event(core.EventHeld, hclog.Error, "plugin document change held by the lock; the previous definitions keep serving", ev.err, "error", ev.err)
}

// onPinsChanged starts the held file again (a replacement, or a first
// start that failed) now that the lock may pin it.
func (t *transition) onPinsChanged() {
	if !t.held || t.gone() || t.starting != 0 {
		return
	}
	t.held = false
	if t.state == core.StateFailed {
		t.state, t.failures = core.StateStarting, 0
	}
	t.start(t.file)
}

// backoffOrFail decides the next try of a restarting plugin: the start
// in flight when there is one; else failed at MaxFailures failures in a
// row, unless it is a server reached by URL (FileRef.Remote), which is
// retried for as long as it is declared; else a backoff timer.
func (t *transition) backoffOrFail() {
	remote := t.file.Remote()
	switch {
	case t.starting != 0:
	case t.failures >= t.rp.MaxFailures && !remote:
		t.state = core.StateFailed
		t.lastErr = fmt.Sprintf("crash loop: %d failures in a row; last: %s", t.failures, t.lastErr)
		t.event(core.EventFailed, hclog.Error, "plugin failed; retried when its file changes or on a rescan", t.lastErr, "reason", t.lastErr)
	default:
		t.seq++
		t.timer = t.seq
		t.do(actBackoff{timer: t.seq, failures: t.failures, remote: remote})
	}
}

// onBackoff restarts a restarting plugin when its timer fires.
func (t *transition) onBackoff(timer int) {
	if timer != t.timer || t.state != core.StateRestarting {
		return
	}
	t.timer = 0
	t.start(t.file)
}

// cancelBackoff disarms an armed backoff timer.
func (t *transition) cancelBackoff() {
	if t.timer != 0 {
		t.timer = 0
		t.do(actCancelBackoff{})
	}
}

// onGone handles removal and closing: the serving process drains, and
// the plugin is stopped at once when there is none.
func (t *transition) onGone(msg, event string) {
	if t.gone() {
		return
	}
	t.cancelBackoff()
	t.starting, t.queued = 0, nil // a start in flight is stopped when it ends
	t.event(event, hclog.Info, msg, "")
	if t.inst == nil {
		t.state = core.StateStopped
		return
	}
	t.state = core.StateDraining
	t.do(actDrain{inst: t.inst})
}

// closingMessage is the line of a plugin told the host closes: a start
// in flight is cancelled, not retried (nothing is: the host stops).
func closingMessage(st life) string {
	if st.starting != 0 {
		return "plugin start cancelled by the host's shutdown; not retried"
	}
	return "host closing; stopping plugin"
}

// onDrained stops a draining plugin once its process is drained.
func (t *transition) onDrained(inst *instance) {
	if t.state == core.StateDraining && inst == t.inst {
		t.state, t.inst = core.StateStopped, nil
	}
}

// dequeue handles the file queued while the start that just ended was in
// flight.
func (t *transition) dequeue() {
	if q := t.queued; q != nil {
		t.queued = nil
		t.onFile(*q)
	}
}
