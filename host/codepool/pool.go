// Package codepool keeps warm code runners (cmd/opentool-host-coderunner)
// for run_code (host/codemode.go) and runs one program on one of them:
// each runner process serves one program and is then killed, so that no
// state of one program reaches another; a new one is started in its
// place as the program begins. Every runner is started by the one
// launcher (process/launcher, through the Starter the supervisor gives:
// sandbox launcher, plugin user, cgroup, keeper).
package codepool

import (
	"errors"
	"fmt"
	"io"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/opentool-host/opentool-host/internal/coderun"
	"github.com/opentool-host/opentool-host/process/launcher"
)

// Config is what a Pool starts.
type Config struct {
	// Program is the runner's binary (an absolute path).
	Program string
	// Starter confines each runner as a plugin is confined.
	Starter *launcher.Starter
	// Size is the number of warm runners kept (at least 1).
	Size int
	// MaxMessageBytes bounds one message from a runner (an inner call's
	// arguments, the program's Done), in bytes.
	MaxMessageBytes int
	// MemoryBytes is the memory limit each runner has (for the message
	// of a runner that ended early); 0: none said.
	MemoryBytes int64
	// Log receives the pool's failures to start a runner.
	Log hclog.Logger
}

// Pool holds up to Config.Size started runners waiting for a program.
type Pool struct {
	cfg    Config
	warm   chan *runner
	closed chan struct{}
	once   sync.Once
	wg     sync.WaitGroup
	// started counts the runner processes started, for tests and /health.
	started atomic.Int64
}

// runner is one started runner process waiting for its program.
type runner struct {
	proc  *launcher.Process
	stdin io.WriteCloser
	out   *coderun.Reader
}

// New returns a pool of cfg and starts filling it (in the background:
// a runner that cannot start is logged, and Run then says why).
func New(cfg Config) *Pool {
	cfg.Size = max(cfg.Size, 1)
	if cfg.Log == nil {
		cfg.Log = hclog.NewNullLogger()
	}
	p := &Pool{cfg: cfg, warm: make(chan *runner, cfg.Size), closed: make(chan struct{})}
	for range cfg.Size {
		p.refill()
	}
	return p
}

// Started returns how many runner processes the pool has started.
func (p *Pool) Started() int64 { return p.started.Load() }

// Close kills the warm runners and waits for the refills under way.
// Programs running end with their runner killed by Run's caller's end.
func (p *Pool) Close() {
	p.once.Do(func() { close(p.closed) })
	p.wg.Wait()
	for {
		select {
		case r := <-p.warm:
			r.end()
		default:
			return
		}
	}
}

// refill starts one runner in the background and adds it to the warm
// ones (or ends it when the pool closed or is full).
func (p *Pool) refill() {
	select {
	case <-p.closed:
		return
	default:
	}
	p.wg.Add(1)
	go func() {
		defer p.wg.Done()
		r, err := p.start()
		if err != nil {
			p.cfg.Log.Error("code runner did not start", "program", p.cfg.Program, "error", err)
			return
		}
		select {
		case <-p.closed:
			r.end()
		case p.warm <- r:
		default:
			r.end()
		}
	}()
}

// take returns a warm runner, or starts one when none is warm, and
// starts the one that takes its place. Errors: the pool is closed, the
// runner does not start.
func (p *Pool) take() (*runner, error) {
	select {
	case <-p.closed:
		return nil, errors.New("the code runners are closed (the host is shutting down)")
	default:
	}
	defer p.refill()
	select {
	case r := <-p.warm:
		return r, nil
	default:
		return p.start()
	}
}

// start starts one runner process and waits for its Ready (it runs
// confined then). Errors: the Starter's, the pipes', no Ready.
func (p *Pool) start() (*runner, error) {
	cmd, err := p.cfg.Starter.Command(launcher.Spec{Path: p.cfg.Program, Env: p.cfg.Starter.Env, Stderr: p.cfg.Starter.Stderr, WaitDelay: time.Second})
	if err != nil {
		return nil, err
	}
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	proc, err := cmd.Start()
	if err != nil {
		return nil, err
	}
	p.started.Add(1)
	r := &runner{proc: proc, stdin: stdin, out: coderun.NewReader(stdout, p.cfg.MaxMessageBytes)}
	var hello coderun.FromRunner
	if err := r.out.Read(&hello); err != nil || !hello.Ready {
		r.end()
		return nil, fmt.Errorf("the code runner did not say it was ready (%s; its stderr is in the host's log): %v", r.proc.Status(), err)
	}
	return r, nil
}

// end kills the runner and waits for it.
func (r *runner) end() {
	_ = r.stdin.Close()
	_ = r.proc.Kill()
	_ = r.proc.Wait()
}

// endedError says that the runner ended before its program did: how
// (its exit status) and its memory limit, the likely cause of a Go
// runtime's "out of memory" (exit status 2) or of a kill.
func (p *Pool) endedError(r *runner, cause error) error {
	_ = r.proc.Wait()
	msg := fmt.Sprintf("the code runner ended before the program did (%s)", r.proc.Status())
	if p.cfg.MemoryBytes > 0 {
		msg += fmt.Sprintf("; a program that exhausts memory ends so: the runner's memory limit is %d bytes", p.cfg.MemoryBytes)
	}
	return &RunnerError{Message: msg, Err: cause}
}

// RunnerError is a program's end without its Done: the runner ended,
// or the host killed it at the wall-time limit.
type RunnerError struct {
	// Message is safe to show the caller; Err is the cause, for logs.
	Message string
	Err     error
}

// Error is Message.
func (e *RunnerError) Error() string { return e.Message }

// Unwrap is Err.
func (e *RunnerError) Unwrap() error { return e.Err }

// Pids returns the process ids of the warm runners (tests read their
// /proc/PID/status).
func (p *Pool) Pids() []int {
	var out []int
	var back []*runner
	for {
		select {
		case r := <-p.warm:
			out, back = append(out, r.proc.Pid()), append(back, r)
			continue
		default:
		}
		break
	}
	for _, r := range back {
		select {
		case p.warm <- r:
		default:
			r.end()
		}
	}
	return out
}
