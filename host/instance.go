package host

import (
	"context"
	"errors"
	"fmt"
	"os/exec"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/go-hclog"
	plugin "github.com/hashicorp/go-plugin"
	"github.com/hashicorp/go-plugin/runner"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/opentool-host/opentool-host/argcheck"
	"github.com/opentool-host/opentool-host/opentool"
	"github.com/opentool-host/opentool-host/pluginsdk"
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
	tool   *pluginsdk.GRPCClient
	doc    *opentool.OpenTool    // the validated document, $refs inlined
	args   []*argcheck.Validator // per doc.Functions; nil: not validated
	stderr *tailBuffer

	started time.Time
	sem     chan struct{} // concurrency limit
	calls   atomic.Int64  // in-flight calls and streams
	nextID  atomic.Uint64

	grace   time.Duration
	release func()
	stopped atomic.Bool // stop was asked: exit is not a crash
}

// startInstance copies the binary into the state folder, starts it,
// performs the handshake, dispenses the tool and loads and validates its
// document, all within cfg.StartTimeout. On error nothing is left running.
func startInstance(ctx context.Context, cfg *Config, state *stateDir, name, path string) (*instance, error) {
	copyPath, sum, err := state.acquire(path)
	if err != nil {
		return nil, fmt.Errorf("copy binary: %w", err)
	}
	inst := &instance{
		name:    name,
		path:    path,
		sum:     sum,
		log:     cfg.Logger.Named("plugin"),
		stderr:  newTailBuffer(20),
		started: time.Now(),
		sem:     make(chan struct{}, cfg.MaxConcurrency),
		grace:   cfg.CancelGrace,
		release: sync.OnceFunc(func() { state.release(sum) }),
	}
	inst.client = plugin.NewClient(&plugin.ClientConfig{
		HandshakeConfig:  pluginsdk.Handshake,
		Plugins:          pluginsdk.PluginSet(nil),
		AllowedProtocols: []plugin.Protocol{plugin.ProtocolGRPC},
		Logger:           inst.log,
		StartTimeout:     cfg.StartTimeout,
		Stderr:           inst.stderr,
		// What the plugin writes to os.Stdout/os.Stderr after Serve comes
		// over go-plugin's stdio stream: log it under the plugin's name
		// and keep it for crash reports.
		SyncStdout:       &lineLogger{log: cfg.Logger.Named("plugin").Named(name), tail: inst.stderr, stream: "stdout"},
		SyncStderr:       &lineLogger{log: cfg.Logger.Named("plugin").Named(name), tail: inst.stderr, stream: "stderr"},
		GRPCDialOptions:  append(pluginsdk.GRPCDialOptions(), pluginsdk.PoolDialOptions()...),
		UnixSocketConfig: &plugin.UnixSocketConfig{TempDir: state.sock},
		// go-plugin hands over a spec command holding the environment (magic
		// cookie, socket dir); the real command runs the host-owned copy of
		// the binary, in the host's working directory.
		RunnerFunc: func(_ hclog.Logger, spec *exec.Cmd, _ string) (runner.Runner, error) {
			cmd := exec.Command(copyPath)
			cmd.Env = spec.Env // the host's environment plus go-plugin's
			r, err := newProcessRunner(name, cmd)
			inst.runner = r
			return r, err
		},
	})
	fail := func(err error) (*instance, error) {
		inst.kill()
		return nil, err
	}
	rpc, err := inst.client.Client()
	if err != nil {
		return fail(fmt.Errorf("handshake: %w%s", err, inst.stderrNote()))
	}
	raw, err := rpc.Dispense(pluginsdk.PluginName)
	if err != nil {
		return fail(fmt.Errorf("dispense: %w", err))
	}
	inst.tool = raw.(*pluginsdk.GRPCClient)

	lctx, cancel := context.WithTimeout(ctx, cfg.StartTimeout)
	defer cancel()
	docJSON, err := inst.tool.Load(lctx)
	if err != nil {
		return fail(fmt.Errorf("load: %w%s", err, inst.stderrNote()))
	}
	doc, err := opentool.Parse(docJSON)
	if err != nil {
		return fail(fmt.Errorf("invalid document: %w", err))
	}
	// Inline and compile once per process: routes are rebuilt from these
	// on every plugin state change.
	inlined, err := doc.Inline()
	if err != nil {
		return fail(fmt.Errorf("invalid document: %w", err))
	}
	inst.doc = inlined
	inst.args = make([]*argcheck.Validator, len(inlined.Functions))
	for k := range inlined.Functions {
		f := &inlined.Functions[k]
		v, err := argcheck.Compile(f)
		if err != nil {
			cfg.Logger.Warn("cannot compile parameter schema; serving without argument validation", "plugin", name, "function", f.Name, "error", err)
		}
		inst.args[k] = v
	}
	return inst, nil
}

// pid returns the process id, or 0 before start.
func (i *instance) pid() int {
	if i.runner == nil {
		return 0
	}
	return i.runner.pid
}

// exited is closed when the process is gone.
func (i *instance) exited() <-chan struct{} { return i.runner.exited }

// hasExited reports whether the process is gone.
func (i *instance) hasExited() bool {
	select {
	case <-i.runner.exited:
		return true
	default:
		return false
	}
}

// call runs one call on this process. It waits for a concurrency slot up
// to ctx's deadline (ErrBusy), sends the call, and when ctx ends first it
// sends Cancel and gives the plugin CancelGrace to return before it kills
// the process. Errors: *pluginsdk.Error (the tool's own), *ExitError,
// ErrBusy, ErrTimeout, ErrCanceled, or a transport error.
func (i *instance) call(ctx context.Context, fn string, args []byte) ([]byte, error) {
	i.calls.Add(1)
	defer i.calls.Add(-1)
	if i.stopped.Load() || i.hasExited() {
		return nil, errNotSent
	}
	if err := i.acquire(ctx); err != nil {
		return nil, err
	}
	defer func() { <-i.sem }()

	id := i.nextID.Add(1)
	// The RPC's own context outlives ctx by the grace period: when ctx
	// ends, Cancel asks the plugin to stop and the RPC keeps waiting for
	// it to return; a plugin still busy at the end of the grace is killed.
	rpcCtx := context.WithoutCancel(ctx)
	// state: 0 the RPC runs, 1 it returned, 2 the grace timer killed the
	// plugin. Whichever moves it from 0 first decides.
	var state atomic.Int32
	stop := context.AfterFunc(ctx, func() {
		go func() {
			cctx, cancel := context.WithTimeout(rpcCtx, i.grace)
			defer cancel()
			_, _ = i.tool.Cancel(cctx, id)
		}()
		time.AfterFunc(i.grace, func() {
			if state.CompareAndSwap(0, 2) {
				i.log.Warn("plugin ignored cancellation; killing it", "plugin", i.name, "function", fn, "grace", i.grace)
				i.kill()
			}
		})
	})
	res, err := i.tool.Call(rpcCtx, fn, args, id)
	killed := !state.CompareAndSwap(0, 1)
	stop()
	if err == nil {
		return res, nil
	}
	var te *pluginsdk.Error
	if errors.As(err, &te) {
		if cerr := ctx.Err(); cerr != nil {
			return nil, ctxError(ctx, cerr)
		}
		return nil, te
	}
	if cerr := ctx.Err(); cerr != nil {
		if killed {
			return nil, &PluginError{Plugin: i.name, Err: fmt.Errorf("%w; the plugin ignored cancellation for %v and was killed", ctxError(ctx, cerr), i.grace)}
		}
		return nil, ctxError(ctx, cerr)
	}
	if i.hasExitedAfter(100 * time.Millisecond) {
		return nil, i.exitError()
	}
	if s, ok := status.FromError(err); ok && s.Code() == codes.Unavailable {
		return nil, &PluginError{Plugin: i.name, Err: fmt.Errorf("connection lost: %s", s.Message())}
	}
	return nil, &PluginError{Plugin: i.name, Err: err}
}

// acquire takes a concurrency slot, waiting up to ctx's deadline.
func (i *instance) acquire(ctx context.Context) error {
	select {
	case i.sem <- struct{}{}:
		return nil
	default:
	}
	select {
	case i.sem <- struct{}{}:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("%w: %d calls already in flight on plugin %q", ErrBusy, cap(i.sem), i.name)
	case <-i.exited():
		return errNotSent
	}
}

// errNotSent: the instance was stopped or exited before the call was
// sent to it; the caller may safely retry on the plugin's next instance.
var errNotSent = errors.New("instance gone before the call was sent")

// streamCall runs one streaming call on this process, handing each JSON
// item to onItem. Errors are as for call.
func (i *instance) streamCall(ctx context.Context, fn string, args []byte, onItem func([]byte) error) error {
	i.calls.Add(1)
	defer i.calls.Add(-1)
	if i.stopped.Load() || i.hasExited() {
		return errNotSent
	}
	if err := i.acquire(ctx); err != nil {
		return err
	}
	defer func() { <-i.sem }()
	err := i.tool.StreamCall(ctx, fn, args, onItem)
	if err == nil {
		return nil
	}
	var te *pluginsdk.Error
	if errors.As(err, &te) {
		return te
	}
	if cerr := ctx.Err(); cerr != nil {
		return ctxError(ctx, cerr)
	}
	if i.hasExitedAfter(100 * time.Millisecond) {
		return i.exitError()
	}
	if _, ok := status.FromError(err); ok {
		return &PluginError{Plugin: i.name, Err: err}
	}
	return err // onItem's own error
}

// hasExitedAfter waits up to d for the process to exit, for a transport
// error that races with the exit notification.
func (i *instance) hasExitedAfter(d time.Duration) bool {
	if i.hasExited() {
		return true
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-i.exited():
		return true
	case <-t.C:
		return false
	}
}

func ctxError(ctx context.Context, err error) error {
	if errors.Is(err, context.DeadlineExceeded) {
		return ErrTimeout
	}
	if c := context.Cause(ctx); c != nil && !errors.Is(c, context.Canceled) {
		return fmt.Errorf("%w: %v", ErrCanceled, c)
	}
	return ErrCanceled
}

// exitError describes the exit of this process.
func (i *instance) exitError() *ExitError {
	return &ExitError{Plugin: i.name, PID: i.pid(), Status: i.runner.exitStatus(), Stderr: i.stderr.lines()}
}

func (i *instance) stderrNote() string {
	if l := i.stderr.lines(); len(l) > 0 {
		return fmt.Sprintf(" (last stderr: %s)", l[len(l)-1])
	}
	return ""
}

// drain waits up to timeout for in-flight calls, then stops the process.
// Setting stopped before reading the in-flight count pairs with call's
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
// up to 2 s before SIGKILL) and releases its binary copy.
func (i *instance) stop() {
	i.stopped.Store(true)
	i.client.Kill()
	if i.runner != nil && i.runner.pid > 0 {
		killGroup(i.runner.pid)
	}
	i.release()
}

// kill SIGKILLs the process group at once and releases the binary copy.
func (i *instance) kill() {
	if i.runner != nil && i.runner.pid > 0 {
		killGroup(i.runner.pid)
	}
	i.client.Kill()
	i.release()
}
