package host

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"time"

	"github.com/opentool-host/opentool-host/argcheck"
	"github.com/opentool-host/opentool-host/opentool"
)

// State is a plugin's lifecycle state.
//
//	starting → ready → draining → stopped
//	              ↘ restarting ↗ (back to ready)   ↘ failed
type State string

// The plugin lifecycle states.
const (
	// StateStarting: the first process is being started and loaded.
	StateStarting State = "starting"
	// StateReady: a process serves the plugin's functions.
	StateReady State = "ready"
	// StateRestarting: the process died and is being restarted; calls
	// wait for it up to their deadline.
	StateRestarting State = "restarting"
	// StateDraining: the plugin was removed; in-flight calls finish.
	StateDraining State = "draining"
	// StateStopped: the plugin is gone.
	StateStopped State = "stopped"
	// StateFailed: the plugin could not be started or kept crashing; its
	// functions are not served until its file changes or a rescan.
	StateFailed State = "failed"
)

// view is the part of a plugin the call path reads, swapped atomically.
type view struct {
	state   State
	inst    *instance     // current process (nil when none)
	changed chan struct{} // closed when the next view is published
	lastErr string
}

// Plugin supervises one plugin file: it starts the process, restarts it
// with backoff when it dies, swaps in a new binary blue/green, and drains
// it on removal. Safe for concurrent use.
type Plugin struct {
	name string
	h    *Host

	v atomic.Pointer[view]

	opMu     sync.Mutex // one start, replace or remove at a time
	mu       sync.Mutex // guards the fields below and publishing
	path     string
	stamp    fileStamp
	doc      *opentool.OpenTool    // last loaded document, inlined (kept while restarting)
	args     []*argcheck.Validator // its functions' validators (see instance.args)
	restarts int
	failures int // consecutive crashes or failed starts
	removed  bool
}

func newPlugin(h *Host, c candidate) *Plugin {
	p := &Plugin{name: c.name, h: h, path: c.path, stamp: c.info}
	p.v.Store(&view{state: StateStarting, changed: make(chan struct{})})
	return p
}

// Name returns the plugin's name.
func (p *Plugin) Name() string { return p.name }

// publish stores a new view and wakes everyone waiting on the old one.
// Callers hold p.mu.
func (p *Plugin) publish(st State, inst *instance, lastErr string) {
	old := p.v.Load()
	p.v.Store(&view{state: st, inst: inst, changed: make(chan struct{}), lastErr: lastErr})
	close(old.changed)
	if st != old.state {
		p.h.log.Info("plugin state", "plugin", p.name, "from", old.state, "to", st)
	}
}

// start runs the first process. A plugin that cannot start is failed at
// once (its reason logged) and retried when its file changes.
func (p *Plugin) start(ctx context.Context) {
	inst, err := startInstance(ctx, &p.h.cfg, p.h.state, p.name, p.path)
	defer p.h.rebuildRoutes()
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.removed {
		if inst != nil {
			inst.stop()
		}
		return
	}
	if err != nil {
		p.h.log.Error("plugin failed to start", "plugin", p.name, "path", p.path, "error", err)
		p.publish(StateFailed, nil, err.Error())
		return
	}
	p.doc, p.args = inst.doc, inst.args
	p.publish(StateReady, inst, "")
	p.h.log.Info("plugin ready", "plugin", p.name, "pid", inst.pid(), "functions", len(inst.doc.Functions), "sha256", inst.sum[:12])
	go p.monitor(inst)
}

// replace starts the binary now at path and, once it is loaded and valid,
// switches to it and drains the old process (start new, then stop old).
// When the new binary fails, the old process keeps serving.
func (p *Plugin) replace(ctx context.Context, c candidate) {
	inst, err := startInstance(ctx, &p.h.cfg, p.h.state, p.name, c.path)
	p.mu.Lock()
	if p.removed {
		p.mu.Unlock()
		if inst != nil {
			inst.stop()
		}
		return
	}
	p.path, p.stamp = c.path, c.info
	cur := p.v.Load()
	if err != nil {
		p.h.log.Error("new plugin binary rejected", "plugin", p.name, "path", c.path, "error", err,
			"kept", cur.inst != nil && cur.state == StateReady)
		if cur.state != StateReady && cur.state != StateRestarting {
			p.publish(StateFailed, nil, err.Error())
		}
		p.mu.Unlock()
		return
	}
	old := cur.inst
	p.doc, p.args = inst.doc, inst.args
	p.failures = 0
	p.publish(StateReady, inst, "")
	p.mu.Unlock()
	p.h.log.Info("plugin replaced", "plugin", p.name, "pid", inst.pid(), "sha256", inst.sum[:12], "functions", len(inst.doc.Functions))
	p.h.rebuildRoutes()
	go p.monitor(inst)
	if old != nil {
		old.drain(p.h.cfg.DrainTimeout)
	}
}

// monitor waits for inst to exit and restarts the plugin when the exit was
// not asked for and inst is still the current process.
func (p *Plugin) monitor(inst *instance) {
	<-inst.exited()
	if inst.stopped.Load() {
		return
	}
	p.mu.Lock()
	cur := p.v.Load()
	if p.removed || cur.inst != inst {
		p.mu.Unlock()
		return
	}
	exitErr := inst.exitError()
	if time.Since(inst.started) >= p.h.cfg.Restart.ResetAfter {
		p.failures = 0
	}
	p.failures++
	p.restarts++
	p.h.log.Error("plugin crashed", "plugin", p.name, "pid", exitErr.PID, "status", exitErr.Status, "stderr", exitErr.Stderr, "failures", p.failures)
	inst.client.Kill() // closes the gRPC connection to the dead process
	inst.release()
	p.publish(StateRestarting, inst, exitErr.Error())
	p.mu.Unlock()
	p.restartLoop(inst)
}

// restartLoop restarts the plugin after dead exited, with exponential
// backoff and jitter, until it is up, replaced, removed, or has failed
// MaxFailures times in a row.
func (p *Plugin) restartLoop(dead *instance) {
	rp := p.h.cfg.Restart
	for {
		p.mu.Lock()
		if p.failures > rp.MaxFailures {
			reason := fmt.Sprintf("crash loop: %d failures in a row; last: %s", p.failures, p.v.Load().lastErr)
			p.h.log.Error("plugin failed", "plugin", p.name, "reason", reason)
			p.publish(StateFailed, nil, reason)
			p.mu.Unlock()
			p.h.rebuildRoutes()
			return
		}
		delay := backoff(rp, p.failures)
		p.mu.Unlock()

		select {
		case <-time.After(delay):
		case <-p.h.closing:
			return
		}
		p.mu.Lock()
		path := p.path
		p.mu.Unlock()
		inst, err := startInstance(context.Background(), &p.h.cfg, p.h.state, p.name, path)

		p.mu.Lock()
		cur := p.v.Load()
		if p.removed || cur.inst != dead {
			p.mu.Unlock()
			if inst != nil {
				inst.stop()
			}
			return
		}
		if err != nil {
			p.failures++
			p.h.log.Error("plugin restart failed", "plugin", p.name, "error", err, "failures", p.failures)
			p.publish(StateRestarting, dead, err.Error())
			p.mu.Unlock()
			continue
		}
		docChanged := !sameFunctions(p.doc, inst.doc)
		p.doc, p.args = inst.doc, inst.args
		p.publish(StateReady, inst, "")
		p.mu.Unlock()
		p.h.log.Info("plugin restarted", "plugin", p.name, "pid", inst.pid(), "restarts", p.restarts)
		if docChanged {
			p.h.rebuildRoutes()
		}
		go p.monitor(inst)
		return
	}
}

// backoff is InitialBackoff·2^(failures-1), capped at MaxBackoff, plus up
// to 50% jitter.
func backoff(rp RestartPolicy, failures int) time.Duration {
	d := rp.InitialBackoff
	for i := 1; i < failures && d < rp.MaxBackoff; i++ {
		d *= 2
	}
	d = min(d, rp.MaxBackoff)
	return d + time.Duration(rand.Int64N(int64(d)/2+1))
}

// remove drains and stops the plugin for good.
func (p *Plugin) remove() {
	p.mu.Lock()
	if p.removed {
		p.mu.Unlock()
		return
	}
	p.removed = true
	cur := p.v.Load()
	p.publish(StateDraining, cur.inst, "")
	p.mu.Unlock()
	if cur.inst != nil {
		cur.inst.drain(p.h.cfg.DrainTimeout)
	}
	p.mu.Lock()
	p.publish(StateStopped, nil, "")
	p.mu.Unlock()
}

// sameFunctions reports whether a and b declare the same function names
// in the same order (a cheap test for "routes must be rebuilt").
func sameFunctions(a, b *opentool.OpenTool) bool {
	if a == nil || b == nil || len(a.Functions) != len(b.Functions) {
		return false
	}
	for i := range a.Functions {
		if a.Functions[i].Name != b.Functions[i].Name {
			return false
		}
	}
	return true
}

// PluginStatus is the state of one plugin as GET /health reports it.
type PluginStatus struct {
	// Name is the plugin's name.
	Name string `json:"name"`
	// Path is the plugin file in the plugins directory.
	Path string `json:"path"`
	// State is the lifecycle state.
	State State `json:"state"`
	// PID is the process id (0 when no process runs).
	PID int `json:"pid"`
	// Restarts counts restarts after crashes since the plugin was found.
	Restarts int `json:"restarts"`
	// Functions are the names of the functions the plugin declares.
	Functions []string `json:"functions"`
	// LastError is the reason of the last crash or failure ("" when none).
	LastError string `json:"last_error,omitempty"`
	// SHA256 is the hex sha256 of the running binary.
	SHA256 string `json:"sha256,omitempty"`
	// UptimeMS is how long the current process has run, in ms.
	UptimeMS int64 `json:"uptime_ms"`
}

// Status returns the plugin's status.
func (p *Plugin) Status() PluginStatus {
	p.mu.Lock()
	defer p.mu.Unlock()
	v := p.v.Load()
	s := PluginStatus{Name: p.name, Path: p.path, State: v.state, Restarts: p.restarts, LastError: v.lastErr, Functions: []string{}}
	if p.doc != nil {
		for _, f := range p.doc.Functions {
			s.Functions = append(s.Functions, f.Name)
		}
	}
	if v.inst != nil && !v.inst.hasExited() {
		s.PID = v.inst.pid()
		s.SHA256 = v.inst.sum
		s.UptimeMS = time.Since(v.inst.started).Milliseconds()
	}
	return s
}
