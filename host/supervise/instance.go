package supervise

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"strings"
	"sync/atomic"
	"time"

	"github.com/hashicorp/go-hclog"
	plugin "github.com/hashicorp/go-plugin"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/opentool-host/opentool-host/host/core"
	"github.com/opentool-host/opentool-host/internal/wire"
	"github.com/opentool-host/opentool-host/protocol/argcheck"
	"github.com/opentool-host/opentool-host/protocol/opentool"
)

// instance is one running plugin process: the go-plugin client, the
// dispensed tool connection, the validated document and the bookkeeping of
// its in-flight calls. A Plugin owns at most one current instance (two
// while a replacement drains the old one).
type instance struct {
	name   string
	path   string // the plugin file in Dir
	sum    string // sha256 of the binary
	log    hclog.Logger
	client *plugin.Client
	runner *ProcessRunner
	// starting is runner for the host's shutdown while the start is in
	// flight (set with runner, read from another goroutine).
	starting atomic.Pointer[ProcessRunner]
	tool     *wire.Client
	doc      *opentool.OpenTool    // the validated document, $refs inlined
	args     []*argcheck.Validator // per doc.Functions; nil: not validated
	stderr   *TailBuffer

	started time.Time
	sem     chan struct{} // concurrency limit: one token per call sent
	queued  atomic.Int64  // calls waiting for a token
	queue   int64         // most calls that may wait (Config.MaxQueue or the policy's)
	// timeout bounds one call (Config.CallTimeout or the policy's);
	// prefix is put before every function name the plugin declares.
	timeout time.Duration
	prefix  string
	// memLimit is the plugin's memory limit in bytes (0: none), to say so
	// when the process died of it.
	memLimit int64
	calls    atomic.Int64 // in-flight calls, counted before stopped is read

	grace     time.Duration
	maxResult int64 // Config.MaxResultBytes
	release   func()
	stopped   atomic.Bool // stop was asked: exit is not a crash

	// chanEnd is the host's end of the offered data channel until
	// acceptChannel takes it (channel.go).
	chanEnd net.Conn
	// killReason, when set, is why the host killed the process (a data
	// channel protocol violation); exitStatus reports it.
	killReason atomic.Pointer[string]

	// nextChange blocks until the plugin reports a change (its document;
	// protocol 3: its catalog, a resource) (wire.Client.Watch);
	// cancelWatch ends that stream.
	nextChange  func() (wire.WatchEvent, error)
	cancelWatch context.CancelFunc
	// catalog is the MCP catalog the process returned at start (protocol
	// 3; catalog.go), nil when none.
	catalog *Catalog
	// local is set for a declared plugin served in the host's process
	// (local.go): then client and runner are nil.
	local *localPlugin
}

// load performs the handshake, dispenses the tool, opens its Watch
// stream (before Load, so that no change after Load is missed) and loads
// its document (once per process and per reported change: routes are
// rebuilt from these on every plugin state change).
func (i *instance) load(ctx context.Context, cfg *core.Config) error {
	if i.local == nil {
		rpc, err := i.client.Client()
		if err != nil {
			return fmt.Errorf("handshake: %w", err)
		}
		raw, err := rpc.Dispense(wire.PluginName)
		if err != nil {
			return fmt.Errorf("dispense: %w", err)
		}
		i.tool = raw.(*wire.Client)
		if err := i.acceptChannel(cfg); err != nil {
			return err
		}
	}
	var err error
	wctx, cancel := context.WithCancel(context.Background())
	i.cancelWatch = cancel
	if i.nextChange, err = i.tool.Watch(wctx); err != nil {
		return fmt.Errorf("watch: %w", err)
	}
	if i.doc, i.args, err = i.loadDocument(ctx, cfg); err != nil {
		return err
	}
	if i.tool.V3() {
		if i.catalog, err = i.loadCatalog(ctx, cfg.StartTimeout); err != nil {
			i.log.Warn("plugin's MCP catalog not served", "plugin", i.name, "error", err)
			i.catalog = nil
		}
	}
	return nil
}

// loadDocument calls Load within cfg.StartTimeout, then validates,
// inlines and compiles the document. A parameter schema that does not
// compile is logged and its function served without validation.
func (i *instance) loadDocument(ctx context.Context, cfg *core.Config) (*opentool.OpenTool, []*argcheck.Validator, error) {
	lctx, cancel := context.WithTimeout(ctx, cfg.StartTimeout)
	defer cancel()
	docJSON, err := i.tool.Load(lctx)
	if err != nil {
		return nil, nil, fmt.Errorf("load: %w", err)
	}
	doc, err := opentool.Parse(docJSON)
	if err != nil {
		return nil, nil, fmt.Errorf("invalid document: %w", err)
	}
	inlined, err := doc.Inline()
	if err != nil {
		return nil, nil, fmt.Errorf("invalid document: %w", err)
	}
	for _, r := range doc.Refused {
		cfg.Logger.Warn("plugin refused part of what it declares; it is degraded (see /health)", "plugin", i.name, "kind", r.Kind, "name", r.Name, "reason", r.Reason)
	}
	if err := addPrefix(inlined, i.prefix); err != nil {
		return nil, nil, err
	}
	args := make([]*argcheck.Validator, len(inlined.Functions))
	for k := range inlined.Functions {
		f := &inlined.Functions[k]
		v, err := argcheck.Compile(f)
		if err != nil {
			cfg.Logger.Warn("cannot compile parameter schema; serving without argument validation", "plugin", i.name, "function", f.Name, "error", err)
		} else if u := v.Unchecked(); len(u) > 0 {
			cfg.Logger.Warn("part of the parameter schema is not checked by the host; the plugin still sees every call", "plugin", i.name, "function", f.Name, "unchecked", strings.Join(u, "; "))
		}
		args[k] = v
	}
	return inlined, args, nil
}

// MaxFunctionName is the longest function name OpenTool allows, in
// bytes.
const MaxFunctionName = 64

// addPrefix puts the policy's prefix before every function name of doc
// (the plugin still receives its own names: send strips it). Errors: a
// prefixed name longer than OpenTool allows.
func addPrefix(doc *opentool.OpenTool, prefix string) error {
	if prefix == "" {
		return nil
	}
	for k := range doc.Functions {
		f := &doc.Functions[k]
		if len(prefix)+len(f.Name) > MaxFunctionName {
			return fmt.Errorf("policy prefix %q: function %q would be longer than %d characters", prefix, f.Name, MaxFunctionName)
		}
		f.Name = prefix + f.Name
	}
	return nil
}

// followers are what followDocument hands a plugin's reports to: a new
// catalog, a changed resource's URI, a log message sent outside calls
// (the params of notifications/message), a list its MCP server said
// changed, a new document.
type followers struct {
	catalog  func(*Catalog)
	updated  func(uri string)
	logged   func(params json.RawMessage)
	listed   func(list string)
	document func(*opentool.OpenTool, []*argcheck.Validator)
}

// followDocument waits for the plugin to report changes (its Watch
// stream) and hands each to its follower (to), until the
// process stops or the plugin does not watch. A changed document that
// fails to load or validate is logged and the previous one kept; so is a
// catalog.
func (i *instance) followDocument(ctx context.Context, cfg *core.Config, to followers) {
	for {
		ev, err := i.nextChange()
		if err != nil {
			if status.Code(err) != codes.Unimplemented && !i.stopped.Load() && !i.hasExited() {
				i.log.Debug("plugin's watch stream ended", "plugin", i.name, "error", err)
			}
			return
		}
		switch {
		case ev.URI != "":
			to.updated(ev.URI)
			continue
		case ev.Log != nil:
			to.logged(ev.Log)
			continue
		case ev.List != "":
			to.listed(ev.List)
			continue
		case ev.Catalog:
			c, err := i.loadCatalog(ctx, cfg.StartTimeout)
			if err != nil {
				i.log.Error("plugin reported a changed MCP catalog that was rejected; serving the previous one", "plugin", i.name, "error", err)
				continue
			}
			to.catalog(c)
			continue
		}
		doc, args, err := i.loadDocument(ctx, cfg)
		if err != nil {
			i.log.Error("plugin reported a changed document that was rejected; serving the previous one", "plugin", i.name, "error", err)
			continue
		}
		to.document(doc, args)
	}
}

// pid returns the process id, or 0 before start; for a declared plugin
// its program's (0 when none runs: a URL server, command tools).
func (i *instance) pid() int {
	if i.local != nil {
		return i.local.plugin.PID()
	}
	if i.runner == nil {
		return 0
	}
	return i.runner.PID
}

// exited is closed when the process is gone (a declared plugin: when its
// Run returned).
func (i *instance) exited() <-chan struct{} {
	if i.local != nil {
		return i.local.ended
	}
	return i.runner.Exited
}

// hasExited reports whether the process is gone.
func (i *instance) hasExited() bool {
	select {
	case <-i.exited():
		return true
	default:
		return false
	}
}

// exitStatus is the exit status as the OS reported it ("signal: killed",
// "exit status 2"), "" while the process runs; for a declared plugin why
// it ended (`MCP server "notes" exited (exit status 1)`).
func (i *instance) exitStatus() string {
	var st string
	if i.local != nil {
		st = i.local.exitStatus()
	} else {
		st = i.runner.ExitStatus()
	}
	if r := i.killReason.Load(); r != nil && st != "" {
		st += "; killed by the host: " + *r
	}
	if st != "" && i.memLimit > 0 && i.stderr.SawOutOfMemory() {
		st += fmt.Sprintf("; over its memory limit (%d MiB)", i.memLimit>>20)
	}
	return st
}

// stderrTail returns the last lines the process wrote to stderr, oldest
// first (at most 20), for the host's log and /health; never for callers.
func (i *instance) stderrTail() []string { return i.stderr.Lines() }

// drain waits up to timeout for in-flight calls, then stops the process.
// Setting stopped before reading the in-flight count pairs with invoke's
// increment-then-check: a call either sees stopped (and is retried on the
// new instance) or is counted here (and is waited for).
func (i *instance) drain(timeout time.Duration) {
	i.stopped.Store(true)
	deadline := time.Now().Add(timeout)
	for i.calls.Load() > 0 && !i.hasExited() {
		if time.Now().After(deadline) {
			i.log.Warn("drain timed out; stopping plugin with calls in flight", "plugin", i.name, "timeout", timeout, "in_flight", i.calls.Load())
			break
		}
		time.Sleep(5 * time.Millisecond)
	}
	i.stop()
}

// stop asks the plugin to exit (go-plugin closes the connection and waits
// up to 2 s before SIGKILL), kills what is left of its process group and
// releases its binary copy. It is idempotent.
func (i *instance) stop() {
	i.stopped.Store(true)
	i.endWatch()
	if i.local != nil {
		i.local.stop()
	} else {
		i.client.Kill()
		i.runner.KillNow()
	}
	i.release()
}

// kill SIGKILLs the process group at once and releases the binary copy.
func (i *instance) kill() {
	i.endWatch()
	if i.local != nil {
		i.local.kill()
	} else {
		i.runner.KillNow()
		i.client.Kill()
	}
	i.release()
}

// endWatch ends the Watch stream, if it was opened, and closes the data
// channel (calls still on it fail as the process goes).
func (i *instance) endWatch() {
	if i.cancelWatch != nil {
		i.cancelWatch()
	}
	i.closeChannel()
}
