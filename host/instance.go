package host

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/hashicorp/go-hclog"
	plugin "github.com/hashicorp/go-plugin"
	"github.com/hashicorp/go-plugin/runner"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/opentool-host/opentool-host/argcheck"
	"github.com/opentool-host/opentool-host/internal/cgroup"
	"github.com/opentool-host/opentool-host/internal/wire"
	"github.com/opentool-host/opentool-host/launcher"
	"github.com/opentool-host/opentool-host/opentool"
	"github.com/opentool-host/opentool-host/sandbox"
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
	runner *processRunner
	// starting is runner for the host's shutdown while the start is in
	// flight (set with runner, read from another goroutine).
	starting atomic.Pointer[processRunner]
	tool     *wire.Client
	doc      *opentool.OpenTool    // the validated document, $refs inlined
	args     []*argcheck.Validator // per doc.Functions; nil: not validated
	stderr   *tailBuffer

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
	catalog *catalog
	// local is set for a declared plugin served in the host's process
	// (local.go): then client and runner are nil.
	local *localPlugin
}

// startInstance starts plugin name from f and loads and validates its
// document, all within cfg.StartTimeout: a plugin file runs as a process
// (startProcess); a declared plugin is served in the host's process
// (startLocal). With a lock (pins.go) the files are checked right before
// the start and the definitions once loaded; serving (the definitions
// served now, or nil) says what changed. On error nothing is left
// running.
func startInstance(ctx context.Context, sv *supervisor, name string, f fileRef, serving *opentool.OpenTool) (*instance, error) {
	cfg := sv.cfg
	pol, err := cfg.resolvePolicy(f)
	if err != nil {
		return nil, err
	}
	secrets, err := pol.secretEnv()
	if err != nil {
		return nil, err
	}
	proc, err := prepare(sv, name, f, pol.spec)
	if err != nil {
		return nil, err
	}
	inst := &instance{
		name:      name,
		path:      f.path,
		sum:       proc.sum,
		log:       cfg.Logger.Named("plugin"),
		stderr:    newTailBuffer(20),
		started:   time.Now(),
		sem:       make(chan struct{}, pol.maxConcurrency),
		queue:     int64(pol.maxQueue),
		timeout:   pol.timeout,
		prefix:    pol.prefix,
		memLimit:  pol.spec.MemoryBytes,
		grace:     cfg.CancelGrace,
		maxResult: cfg.MaxResultBytes,
		release:   proc.release,
	}
	if f.launch != "" {
		err = startLocal(sv, inst, f, pol, secrets, proc)
	} else {
		err = startProcess(ctx, sv, inst, f, pol, secrets, proc)
	}
	if err != nil {
		proc.release()
		return nil, err
	}
	// A host that closes (or a start that is given up) kills a process
	// still in its handshake: go-plugin would wait for it up to
	// StartTimeout.
	stopKill := context.AfterFunc(ctx, func() { inst.starting.Load().kill() })
	err = inst.load(ctx, cfg)
	stopKill()
	if err != nil {
		err = inst.handshakeError(f, err)
		inst.kill()
		tail := inst.stderrTail()
		if len(tail) > 0 {
			inst.log.Error("plugin output before it failed to start", "plugin", name, "file", f.path, "stderr", tail)
		}
		return nil, &startError{err: err, stderr: tail}
	}
	faults, err := sv.pins.checkDefinitions(name, inst.doc, serving)
	if err != nil {
		inst.kill()
		return nil, err
	}
	if faults != nil {
		inst.log.Warn("function definitions differ from opentool.lock; served (definition changes accepted)", "plugin", name, "changes", faults)
	}
	return inst, nil
}

// startProcess prepares inst's go-plugin client for the process of
// plugin file f (proc: its host-owned copy, with the launcher in front
// when needed); load then starts it and performs the handshake. Errors:
// the host's TLS configuration.
func startProcess(ctx context.Context, sv *supervisor, inst *instance, f fileRef, pol policy, secrets []string, proc process) error {
	cfg, state, name := sv.cfg, sv.state, inst.name
	tlsConfig, certEnv, err := pluginTLS()
	if err != nil {
		return err
	}
	pluginLog := cfg.Logger.Named("plugin").Named(name)
	inst.client = plugin.NewClient(&plugin.ClientConfig{
		HandshakeConfig: wire.Handshake,
		// Protocol 2 and 3: go-plugin settles on the highest the plugin
		// speaks (the Go SDK 3, the Python and Node SDKs 2).
		VersionedPlugins: wire.VersionedPluginSets(nil, nil),
		AllowedProtocols: []plugin.Protocol{plugin.ProtocolGRPC},
		// Host authentication (go-plugin's AutoMTLS protocol, with the
		// host's P-256 certificate of hostcert.go instead of a P-521 one
		// per start): the plugin gets the host's certificate
		// (PLUGIN_CLIENT_CERT, below) and answers with its own in the
		// handshake's sixth field, which go-plugin puts into this config;
		// every connection to the plugin's socket must present the host's,
		// so no other process can call or stop the plugin, and the host
		// talks only to the process it started. A plugin that does not
		// answer with a certificate is refused (runner.go).
		TLSConfig:    tlsConfig,
		Logger:       inst.log,
		StartTimeout: cfg.StartTimeout,
		// What a Go plugin writes to os.Stdout/os.Stderr after Serve comes
		// over go-plugin's stdio stream: log it under the plugin's name
		// and keep it for crash reports. The stderr pipe goes to the same
		// kind of logger through the runner, never through go-plugin.
		SyncStdout: &lineLogger{log: pluginLog, tail: inst.stderr, stream: "stdout"},
		SyncStderr: &lineLogger{log: pluginLog, tail: inst.stderr, stream: "stderr"},
		// A result over the cap fails its stream before it is buffered;
		// the protobuf envelope adds a few bytes to the JSON.
		GRPCDialOptions:  wire.DialOptions(int(cfg.MaxResultBytes) + 64),
		UnixSocketConfig: socketConfig(state.sock, cfg.PluginUser),
		// The plugin gets go-plugin's variables and the allow-list of
		// plugin_env.go, never the host's whole environment.
		SkipHostEnv: true,
		// go-plugin hands over a spec command holding the environment (magic
		// cookie, socket dir); the real command runs the host-owned copy of
		// the binary, in the host's working directory.
		RunnerFunc: func(_ hclog.Logger, spec *exec.Cmd, _ string) (runner.Runner, error) {
			// The policy's variables and secrets come last: this plugin's
			// only, never logged.
			given := slices.Concat(pluginEnv(nil, name, cfg.PluginEnv, os.Environ()), pol.env, secrets)
			lspec := launcher.Spec{
				Path: proc.argv[0], Args: proc.argv[1:], User: cfg.PluginUser,
				// PluginFileEnv: the file in the plugins folder (the process
				// runs a host-owned copy), so that a script finds what lies
				// beside it, such as its SDK, without system-wide files.
				// The host's certificate comes last, so that no variable
				// of the host's environment or the policy replaces it.
				Env: slices.Concat(spec.Env, given, proc.env, []string{PluginFileEnv + "=" + absPath(f.path), certEnv}),
			}
			if sv.cgroups != nil {
				cg, cerr := sv.cgroups.Child(name)
				if cerr != nil {
					return nil, fmt.Errorf("cgroup: %w", cerr)
				}
				lspec.Cgroup = cg
			}
			if err := enforceGroupLimits(pol.spec, lspec.Cgroup, sv.noCgroups); err != nil {
				if lspec.Cgroup != nil {
					lspec.Cgroup.Remove()
				}
				return nil, err
			}
			if !cfg.NoDataChannel {
				if err := inst.offerChannel(&lspec); err != nil {
					return nil, err
				}
			}
			// Unmarked lines on the pipe are debug, as go-plugin logs them.
			r, err := newProcessRunner(name, f.path, lspec, &lineLogger{log: pluginLog, tail: inst.stderr, stream: "stderr", level: hclog.Debug})
			if err == nil && lspec.Cgroup == nil {
				r.keeper = sv.keeper.Load() // nil until the keeper runs: startKeeper tracks those
			}
			inst.runner = r
			inst.starting.Store(r)
			if ctx.Err() != nil {
				r.kill() // given up before it started: Start refuses
			}
			return r, err
		},
	})
	return nil
}

// process is what startInstance runs. For a plugin file: argv naming
// host-owned copies (the launcher in front when needed) and the extra
// environment. For a declared plugin: its launch (decl.Launch, encoded;
// with a lock, naming the verified copies) and the launcher's copy to
// put in front of its programs (nil when the policy needs none). Both:
// the identity and how to release the copies.
type process struct {
	argv, env []string
	launch    string
	launcher  []string
	// sum identifies the process: the program's sha256, or for a
	// declared plugin the sha256 of its launch.
	sum     string
	release func()
}

// prepare copies f's program into the state folder (by sha256: the exact
// bytes that run, checked against the lock, pins.go) and, when spec needs
// it, puts the launcher (a copy too) in front of it (Config.Launcher);
// for a declared plugin it prepares its launch (prepareDeclared).
// Errors: f's fault, a copy that fails, a file the lock does not pin, no
// launcher; nothing is left acquired.
func prepare(sv *supervisor, name string, f fileRef, spec sandbox.Spec) (process, error) {
	if f.fault != "" {
		return process{}, errors.New(f.fault)
	}
	if f.launch != "" {
		return prepareDeclared(sv, name, f, spec)
	}
	prog, sum, err := sv.state.acquire(f.path)
	if err != nil {
		return process{}, fmt.Errorf("copy binary: %w", err)
	}
	sums := []string{sum}
	release := func() {
		for _, s := range sums {
			sv.state.release(s)
		}
	}
	if err := sv.pins.checkFiles(name, f, sum, nil); err != nil {
		release()
		return process{}, err
	}
	argv, env, err := launcher.Wrap(sv.cfg.Launcher, spec, []string{prog}, nil)
	if err != nil {
		release()
		return process{}, err
	}
	if argv[0] != prog { // the launcher runs first: from its own copy
		lcopy, lsum, err := sv.state.acquire(argv[0])
		if err != nil {
			release()
			return process{}, fmt.Errorf("copy launcher: %w", err)
		}
		sums = append(sums, lsum)
		argv[0] = lcopy
	}
	return process{argv: argv, env: env, sum: sum, release: sync.OnceFunc(release)}, nil
}

// prepareDeclared prepares declared plugin f's launch: with a lock the
// verified copies of the files its programs execute (checked against the
// lock again, and readable in the sandbox), and the launcher's copy when
// spec needs the launcher. Errors: as prepare's.
func prepareDeclared(sv *supervisor, name string, f fileRef, spec sandbox.Spec) (process, error) {
	p := process{launch: f.launch, sum: f.sum}
	var files verified
	var sums []string
	release := func() {
		for _, s := range sums {
			sv.state.release(s)
		}
		if files.release != nil {
			files.release()
		}
	}
	var err error
	if sv.pins != nil {
		if p.launch, files, err = sv.pins.verifiedLaunch(sv.state, name, f.launch); err != nil {
			release()
			return process{}, fmt.Errorf("verified copies: %w", err)
		}
	}
	if err := sv.pins.checkFiles(name, f, "", files.sums); err != nil {
		release()
		return process{}, err
	}
	if spec.NeedsLauncher() {
		if len(sv.cfg.Launcher) == 0 {
			release()
			_, _, err := launcher.Wrap(nil, spec, nil, nil)
			return process{}, err
		}
		lcopy, lsum, err := sv.state.acquire(sv.cfg.Launcher[0])
		if err != nil {
			release()
			return process{}, fmt.Errorf("copy launcher: %w", err)
		}
		sums = append(sums, lsum)
		p.launcher = slices.Concat([]string{lcopy}, sv.cfg.Launcher[1:])
	}
	p.release = sync.OnceFunc(release)
	return p, nil
}

// load performs the handshake, dispenses the tool, opens its Watch
// stream (before Load, so that no change after Load is missed) and loads
// its document (once per process and per reported change: routes are
// rebuilt from these on every plugin state change).
func (i *instance) load(ctx context.Context, cfg *Config) error {
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
func (i *instance) loadDocument(ctx context.Context, cfg *Config) (*opentool.OpenTool, []*argcheck.Validator, error) {
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

// addPrefix puts the policy's prefix before every function name of doc
// (the plugin still receives its own names: send strips it). Errors: a
// prefixed name longer than OpenTool allows.
func addPrefix(doc *opentool.OpenTool, prefix string) error {
	if prefix == "" {
		return nil
	}
	for k := range doc.Functions {
		f := &doc.Functions[k]
		if len(prefix)+len(f.Name) > maxFunctionName {
			return fmt.Errorf("policy prefix %q: function %q would be longer than %d characters", prefix, f.Name, maxFunctionName)
		}
		f.Name = prefix + f.Name
	}
	return nil
}

// followers are what followDocument hands a plugin's reports to: a new
// catalog, a changed resource's URI, a log message sent outside calls
// (the params of notifications/message), a new document.
type followers struct {
	catalog  func(*catalog)
	updated  func(uri string)
	logged   func(params json.RawMessage)
	document func(*opentool.OpenTool, []*argcheck.Validator)
}

// followDocument waits for the plugin to report changes (its Watch
// stream) and hands each to its follower (to), until the
// process stops or the plugin does not watch. A changed document that
// fails to load or validate is logged and the previous one kept; so is a
// catalog.
func (i *instance) followDocument(ctx context.Context, cfg *Config, to followers) {
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
	return i.runner.pid
}

// exited is closed when the process is gone (a declared plugin: when its
// Run returned).
func (i *instance) exited() <-chan struct{} {
	if i.local != nil {
		return i.local.ended
	}
	return i.runner.exited
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
		st = i.runner.exitStatus()
	}
	if r := i.killReason.Load(); r != nil && st != "" {
		st += "; killed by the host: " + *r
	}
	if st != "" && i.memLimit > 0 && i.stderr.sawOutOfMemory() {
		st += fmt.Sprintf("; over its memory limit (%d MiB)", i.memLimit>>20)
	}
	return st
}

// stderrTail returns the last lines the process wrote to stderr, oldest
// first (at most 20), for the host's log and /health; never for callers.
func (i *instance) stderrTail() []string { return i.stderr.lines() }

// invoke runs call r on this process: it takes a concurrency slot
// (queueing up to Config.MaxQueue calls), does not send a call whose
// caller is already gone, and sends it (send). errNotSent means the call
// never reached this process, which was stopped or has exited: the caller
// may send it to the plugin's next process.
func (i *instance) invoke(ctx context.Context, r *request) error {
	i.calls.Add(1)
	defer i.calls.Add(-1)
	if i.stopped.Load() || i.hasExited() {
		return errNotSent
	}
	if err := i.acquire(ctx, r); err != nil {
		return err
	}
	defer func() { <-i.sem }()
	if ctx.Err() != nil {
		return r.ctxError(ctx, i.name, " before it was sent")
	}
	return i.send(ctx, r)
}

// acquire takes a concurrency slot. When none is free the call queues,
// unless Config.MaxQueue calls already wait (busy at once); a queued call
// whose deadline passes is busy too, one whose caller left is canceled.
func (i *instance) acquire(ctx context.Context, r *request) error {
	select {
	case i.sem <- struct{}{}:
		return nil
	default:
	}
	if i.queued.Add(1) > i.queue {
		i.queued.Add(-1)
		return r.fail(KindBusy, i.name, fmt.Sprintf("busy: %d calls in flight and %d queued", cap(i.sem), i.queue), nil)
	}
	defer i.queued.Add(-1)
	select {
	case i.sem <- struct{}{}:
		return nil
	case <-ctx.Done():
		if errors.Is(ctx.Err(), context.DeadlineExceeded) {
			return r.fail(KindBusy, i.name, fmt.Sprintf("busy: no slot of %d freed before the deadline", cap(i.sem)), nil)
		}
		return r.ctxError(ctx, i.name, " while queued")
	case <-i.exited():
		return errNotSent
	}
}

// errNotSent: the instance was stopped or exited before the call was
// sent to it; the caller may safely retry on the plugin's next instance.
var errNotSent = errors.New("instance gone before the call was sent")

// send sends r on one Invoke stream and hands each result to r.emit. The
// stream's own context outlives ctx: when ctx ends (or emit fails, or a
// result is rejected) the guard sends cancel on the stream and gives the
// plugin Config.CancelGrace to end it before it kills the process. The
// guard is armed before the stream is opened, so a connection that hangs
// while opening it is bounded too.
func (i *instance) send(ctx context.Context, r *request) error {
	g := &guard{inst: i, fn: r.fn}
	stop := context.AfterFunc(ctx, g.cancel)
	defer stop()
	// The stream's context never ends by itself (a Done of nil also
	// spares gRPC a watcher goroutine per stream): it ends when the plugin
	// ends the stream, or the connection breaks (the process exited or
	// the guard killed it).
	inv := wire.Invocation{Name: strings.TrimPrefix(r.target, i.prefix), Args: r.args, Stream: r.stream}
	if r.x != nil {
		inv.Meta = r.x.Meta
	}
	call, err := i.tool.Start(context.WithoutCancel(ctx), inv)
	if err != nil {
		killed := !g.end()
		if !killed && (i.stopped.Load() || i.hasExited()) {
			return errNotSent
		}
		return i.endError(ctx, r, err, 0, killed)
	}
	g.attach(call)
	var first error // why the call was cut short (emit failed, result rejected)
	n := 0
	for {
		ev, err := call.Next()
		if err != nil {
			killed := !g.end()
			if first != nil {
				return first
			}
			return i.endError(ctx, r, err, n, killed)
		}
		if ev.Message != nil {
			if first == nil {
				r.message(ctx, call, ev.Message)
			}
			continue
		}
		item := ev.Data
		if ev.MCP {
			if r.stream {
				first = r.fail(KindResultRejected, i.name, "the plugin sent an MCP result for a streaming call", nil)
				g.cancel()
			}
			r.mcp = true
		}
		n++
		memTrim.note(len(item))
		if first != nil {
			continue // draining after a cancel
		}
		if first = r.accept(i.name, item, n); first == nil {
			first = r.emit(item)
		}
		if first != nil {
			g.cancel()
		}
	}
}

// endError maps how a stream ended to the call's error (nil for success):
// io.EOF is success when a unary call got its result; the tool's own
// error keeps its code; a stream cut by the caller's context, an exit, a
// result over the size cap or a lost connection each get their Kind.
func (i *instance) endError(ctx context.Context, r *request, err error, n int, killed bool) error {
	if errors.Is(err, io.EOF) {
		if n == 0 && !r.stream {
			if ctx.Err() != nil {
				return r.ctxError(ctx, i.name, "")
			}
			return r.fail(KindResultRejected, i.name, "the plugin ended the call without a result", nil)
		}
		return nil
	}
	var te *wire.ToolError
	switch {
	case killed:
		return r.ctxError(ctx, i.name, fmt.Sprintf("; the plugin ignored cancellation for %v and was killed", i.grace))
	case ctx.Err() != nil:
		return r.ctxError(ctx, i.name, "")
	case errors.As(err, &te):
		return &Error{Kind: KindTool, Function: r.fn, Plugin: i.name, Code: te.Code, Message: te.Message}
	case errors.Is(err, wire.ErrResultTooLarge):
		return r.fail(KindResultRejected, i.name, fmt.Sprintf("the plugin's result is larger than the limit of %d bytes", i.maxResult), err)
	case i.exitedSoon():
		return &Error{Kind: KindExited, Function: r.fn, Plugin: i.name, Status: i.exitStatus(),
			Message: fmt.Sprintf("the plugin exited during the call (%s); it is being restarted", i.exitStatus()), Err: err}
	}
	return r.fail(KindTransport, i.name, "the connection to the plugin failed", err)
}

// exitedSoon reports whether the process has exited, waiting up to
// exitNoticeWait: a broken connection is seen a little before go-plugin
// reaps the process, and the exit is the better report.
func (i *instance) exitedSoon() bool {
	if i.hasExited() {
		return true
	}
	t := time.NewTimer(exitNoticeWait)
	defer t.Stop()
	select {
	case <-i.exited():
		return true
	case <-t.C:
		return false
	}
}

// exitNoticeWait bounds exitedSoon's wait (only on a broken connection).
const exitNoticeWait = 100 * time.Millisecond

// guard is the cancel grace of one call in flight: cancel sends cancel
// on the call's stream (at once, or as soon as the stream is attached)
// and arms a timer; when the stream has not ended by then the process is
// killed. end reports false when the timer killed it first.
type guard struct {
	inst  *instance
	fn    string
	state atomic.Int32 // guardRunning, guardEnded or guardKilled

	mu       sync.Mutex
	call     *wire.Call // nil until the stream is open
	canceled bool
}

const (
	guardRunning int32 = iota
	guardEnded
	guardKilled
)

// attach hands the guard the open stream, and sends the cancel that
// was asked for while it opened.
func (g *guard) attach(c *wire.Call) {
	g.mu.Lock()
	g.call = c
	canceled := g.canceled
	g.mu.Unlock()
	if canceled {
		_ = c.Cancel() // a broken stream ends the call anyway
	}
}

// cancel asks the plugin to stop the call and arms the kill timer. Safe
// to call many times and from any goroutine; only the first counts.
func (g *guard) cancel() {
	g.mu.Lock()
	if g.canceled || g.state.Load() != guardRunning {
		g.mu.Unlock()
		return
	}
	g.canceled = true
	c := g.call
	g.mu.Unlock()
	// The kill timer is armed first: a plugin that stopped reading can
	// block the cancel's write, never the kill.
	time.AfterFunc(g.inst.grace, g.expire)
	if c != nil {
		_ = c.Cancel()
	}
}

// expire kills the process when the call is still running.
func (g *guard) expire() {
	if g.state.CompareAndSwap(guardRunning, guardKilled) {
		g.inst.log.Warn("plugin ignored cancellation; killing it", "plugin", g.inst.name, "function", g.fn, "grace", g.inst.grace)
		g.inst.kill()
	}
}

// end marks the stream ended; false when expire got there first.
func (g *guard) end() bool { return g.state.CompareAndSwap(guardRunning, guardEnded) }

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
		i.runner.kill()
	}
	i.release()
}

// kill SIGKILLs the process group at once and releases the binary copy.
func (i *instance) kill() {
	i.endWatch()
	if i.local != nil {
		i.local.kill()
	} else {
		i.runner.kill()
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

// enforceGroupLimits sets the limits of spec that only a cgroup holds on
// the plugin's group cg before the plugin runs in it: cpu_percent
// (cpu.max), and processes (pids.max) when the host runs as root, where
// RLIMIT_NPROC does not bind. A limit that cannot be held fails the start
// with the reason (no silent no-op): no cgroups (noCgroups says why), or
// the controller not available to the host's cgroups.
func enforceGroupLimits(spec sandbox.Spec, cg *cgroup.Group, noCgroups string) error {
	processes := 0
	if spec.Processes > 0 && (cg != nil || os.Geteuid() == 0) {
		processes = spec.Processes // pids.max; without cgroups, as non-root, RLIMIT_NPROC holds
	}
	if spec.CPUPercent == 0 && processes == 0 {
		return nil
	}
	if cg == nil {
		what := fmt.Sprintf("cpu_percent %d", spec.CPUPercent)
		if spec.CPUPercent == 0 {
			what = fmt.Sprintf("processes %d (RLIMIT_NPROC does not bind root)", spec.Processes)
		}
		return fmt.Errorf("limits: %s cannot be enforced: the host runs plugins without cgroups (%s)", what, noCgroups)
	}
	if err := cg.SetLimits(spec.CPUPercent, processes); err != nil {
		return fmt.Errorf("limits: %w", err)
	}
	return nil
}

// socketConfig is go-plugin's socket folder setting: under dir, and with
// a plugin user (Config.PluginUser) group-owned by its group and group
// writable, so that the plugin can create its socket there.
func socketConfig(dir string, user *syscall.Credential) *plugin.UnixSocketConfig {
	c := &plugin.UnixSocketConfig{TempDir: dir}
	if user != nil {
		c.Group = strconv.FormatUint(uint64(user.Gid), 10)
	}
	return c
}

// PluginFileEnv is the variable that gives every plugin process the
// absolute path of its file in the plugins folder (the executable, or the
// declaration of a declared plugin): the process itself runs a host-owned
// copy, and a script finds its SDK or data relative to this path.
const PluginFileEnv = "OPENTOOL_PLUGIN_FILE"

// absPath is p made absolute (p itself when that fails).
func absPath(p string) string {
	if a, err := filepath.Abs(p); err == nil {
		return a
	}
	return p
}

// handshakeError is err, the failed start of f's process, said in the
// user's terms when the process ended or spoke no handshake: the plugin's
// own file (not the host's copy), for a script its interpreter (its #!
// line), its exit status when it exited, and where its stderr went (the
// log and /health's stderr, never the callers). Other errors come back
// as they are.
func (i *instance) handshakeError(f fileRef, err error) error {
	msg := err.Error()
	if i.local != nil || !strings.Contains(msg, "Failed to read any lines from plugin's stdout") && !strings.Contains(msg, "plugin exited before we could connect") {
		return err // a handshake line that is not one: go-plugin's message quotes it, Diagnose names the file
	}
	what := f.path
	if f.launch == "" {
		if interp := shebang(f.path); interp != "" {
			what += ", a script run by " + interp
		}
	}
	ended := "wrote no go-plugin handshake"
	t := time.NewTimer(time.Second) // stdout closed: the exit is near
	defer t.Stop()
	select {
	case <-i.runner.exited:
		ended = "exited (" + i.runner.exitStatus() + ") before the go-plugin handshake"
	case <-t.C:
	}
	hint := "is it built with pluginsdk.Serve, or an SDK of this host, for this OS and architecture?"
	if len(i.stderrTail()) > 0 {
		hint = "what it wrote to stderr is in the host's log and in /health (stderr)"
	}
	return fmt.Errorf("plugin file %s %s: %s", what, ended, hint)
}

// shebang is the interpreter named by the #! line of the file at path
// ("/usr/bin/python3", "/usr/bin/env node"), "" for none.
func shebang(path string) string {
	fd, err := os.Open(path)
	if err != nil {
		return ""
	}
	defer fd.Close()
	b := make([]byte, 256)
	n, _ := io.ReadFull(fd, b)
	line, _, _ := strings.Cut(string(b[:n]), "\n")
	if !strings.HasPrefix(line, "#!") {
		return ""
	}
	return strings.TrimSpace(line[2:])
}

// startError is a failed start with what the process wrote to stderr
// before it failed (shown in the plugin's status, never to callers).
type startError struct {
	err    error
	stderr []string
}

// Error implements error: the cause's message.
func (e *startError) Error() string { return e.err.Error() }

// Unwrap returns the cause.
func (e *startError) Unwrap() error { return e.err }
