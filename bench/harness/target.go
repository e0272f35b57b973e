package harness

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"runtime"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/opentool-host/opentool-host/frontend/opentoolapi"
	"github.com/opentool-host/opentool-host/frontend/route"
	"github.com/opentool-host/opentool-host/host"
	"github.com/opentool-host/opentool-host/host/core"
	"github.com/opentool-host/opentool-host/testkit/base"
)

// Target is a host under test serving HTTP on loopback: a real
// "opentool-host run" process (HostProcess) or an in-process host
// (InProcess).
type Target interface {
	// URL is the base URL, "http://127.0.0.1:PORT".
	URL() string
	// StateDir is the parent state folder given to the host; its plugin
	// processes run binaries from under it.
	StateDir() string
	// PID is the host's process id.
	PID() int
	// Stats reads the host process's RSS, threads, fds (and goroutines
	// when known).
	Stats() ProcStats
	// Alive reports whether the host process is still running.
	Alive() bool
	// Stop shuts the host down as an operator would (SIGTERM, or Close)
	// and waits for it, up to ctx's deadline.
	Stop(ctx context.Context) error
}

// HostProcess is a real "opentool-host run" process.
type HostProcess struct {
	cmd      *exec.Cmd
	url      string
	stateDir string
	out      *lockedBuffer
	done     chan struct{}
	waitErr  error
}

var _ Target = (*HostProcess)(nil)

// HostOptions are the flags StartHostProcess passes to "run".
type HostOptions struct {
	// Dir is --dir.
	Dir string
	// StateDir is --state-dir.
	StateDir string
	// Addr is --addr; empty picks a free loopback port.
	Addr string
	// Args are extra flags, e.g. "--call-timeout", "2s".
	Args []string
}

// HostEnvVar names the variable whose space-separated KEY=VALUE pairs
// StartHostProcess adds to the environment of every host process it
// starts, and of no other process of the run (the load generator, the
// floors, the benchmark process): an A/B of a runtime setting of the host
// alone, e.g. BENCH_HOST_ENV='GOGC=400 GOMAXPROCS=1' (docs/performance.md).
const HostEnvVar = "BENCH_HOST_ENV"

// HostEnv returns base with the pairs of extra (KEY=VALUE, separated by
// white space) appended, a later pair of a key winning over an earlier
// one as exec.Cmd's Env has it; base itself when extra has none. Errors:
// a word that is not KEY=VALUE (no "=", or nothing before it), naming
// HostEnvVar: the setting would not reach the host, and the run would
// measure without it.
func HostEnv(base []string, extra string) ([]string, error) {
	var add []string
	for _, kv := range strings.Fields(extra) {
		if strings.IndexByte(kv, '=') <= 0 {
			return nil, fmt.Errorf("%s: %q is not KEY=VALUE", HostEnvVar, kv)
		}
		add = append(add, kv)
	}
	if add == nil {
		return base, nil
	}
	return append(slices.Clip(base), add...), nil // a copy: base stays as it is
}

// StartHostProcess starts bin ("bin/opentool-host") with "run" and the
// options. It does not wait for the host to serve; see WaitHealthy.
func StartHostProcess(bin string, o HostOptions) (*HostProcess, error) {
	if o.Addr == "" {
		a, err := base.FreeAddr()
		if err != nil {
			return nil, err
		}
		o.Addr = a
	}
	args := append([]string{"run", "--dir", o.Dir, "--addr", o.Addr, "--state-dir", o.StateDir, "--log-level", "warn", "--drain-delay", "0"}, o.Args...)
	env, err := HostEnv(os.Environ(), os.Getenv(HostEnvVar))
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(bin, args...)
	cmd.Env = env
	out := &lockedBuffer{}
	cmd.Stdout, cmd.Stderr = out, out
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	p := &HostProcess{cmd: cmd, url: "http://" + o.Addr, stateDir: o.StateDir, out: out, done: make(chan struct{})}
	go func() {
		p.waitErr = cmd.Wait()
		close(p.done)
	}()
	return p, nil
}

// URL implements Target.
func (p *HostProcess) URL() string { return p.url }

// StateDir implements Target.
func (p *HostProcess) StateDir() string { return p.stateDir }

// PID implements Target.
func (p *HostProcess) PID() int { return p.cmd.Process.Pid }

// Stats implements Target (goroutines are not known: -1).
func (p *HostProcess) Stats() ProcStats { return ReadProcStats(p.PID()) }

// Alive implements Target.
func (p *HostProcess) Alive() bool {
	select {
	case <-p.done:
		return false
	default:
		return Alive(p.PID())
	}
}

// Output returns what the host wrote to stdout and stderr so far.
func (p *HostProcess) Output() string { return p.out.String() }

// Stop sends SIGTERM and waits for the exit; at ctx's deadline it sends
// SIGKILL and returns an error.
func (p *HostProcess) Stop(ctx context.Context) error {
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.done:
		if p.waitErr != nil {
			return fmt.Errorf("host exited: %w", p.waitErr)
		}
		return nil
	case <-ctx.Done():
		_ = p.cmd.Process.Kill()
		<-p.done
		return fmt.Errorf("host did not stop after SIGTERM: %w", ctx.Err())
	}
}

type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

// Write implements io.Writer, keeping at most the first 4 MiB.
func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.b.Len() > 4<<20 { // keep the head; a runaway log is not kept
		return len(p), nil
	}
	return l.b.Write(p)
}

// String returns what was written.
func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// InProcess is a host.Host with opentoolapi served on loopback in this
// process, so that goroutines can be counted (and the race detector sees
// the host).
type InProcess struct {
	H        *host.Host
	srv      *http.Server
	url      string
	stateDir string
	errc     chan error
}

var _ Target = (*InProcess)(nil)

// StartInProcess starts a host with cfg (cfg.StateDir is required) and
// serves its HTTP API on a free loopback port.
func StartInProcess(ctx context.Context, cfg core.Config) (*InProcess, error) {
	if cfg.StateDir == "" {
		return nil, errors.New("harness: StateDir is required")
	}
	h, err := host.New(cfg)
	if err != nil {
		return nil, err
	}
	if err := h.Start(ctx); err != nil {
		_ = h.Close(ctx)
		return nil, err
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		_ = h.Close(ctx)
		return nil, err
	}
	srv := &http.Server{Handler: route.Mux(opentoolapi.New(h, opentoolapi.Config{Version: "bench"}).Routes()), ReadHeaderTimeout: 10 * time.Second}
	p := &InProcess{H: h, srv: srv, url: "http://" + ln.Addr().String(), stateDir: cfg.StateDir, errc: make(chan error, 1)}
	go func() { p.errc <- srv.Serve(ln) }()
	return p, nil
}

// URL implements Target.
func (p *InProcess) URL() string { return p.url }

// StateDir implements Target.
func (p *InProcess) StateDir() string { return p.stateDir }

// PID implements Target: this process.
func (p *InProcess) PID() int { return os.Getpid() }

// Stats implements Target, with runtime.NumGoroutine.
func (p *InProcess) Stats() ProcStats {
	s := ReadProcStats(os.Getpid())
	s.Goroutines = runtime.NumGoroutine()
	return s
}

// Alive implements Target: the HTTP server is still serving.
func (p *InProcess) Alive() bool {
	select {
	case <-p.errc:
		return false
	default:
		return true
	}
}

// Stop shuts the HTTP server down and closes the host.
func (p *InProcess) Stop(ctx context.Context) error {
	err := p.srv.Shutdown(ctx)
	if cerr := p.H.Close(ctx); cerr != nil && err == nil {
		err = cerr
	}
	return err
}

// GetHealth fetches GET /health of the host at url.
func GetHealth(ctx context.Context, c *http.Client, url string) (*opentoolapi.Health, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url+"/health", nil)
	if err != nil {
		return nil, err
	}
	resp, err := c.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("GET /health: HTTP %d", resp.StatusCode)
	}
	var h opentoolapi.Health
	if err := json.NewDecoder(resp.Body).Decode(&h); err != nil {
		return nil, fmt.Errorf("GET /health: %w", err)
	}
	return &h, nil
}

// ReadyCount returns how many plugins of h are ready.
func ReadyCount(h *opentoolapi.Health) int {
	n := 0
	for _, p := range h.Plugins {
		if p.State.Serving() {
			n++
		}
	}
	return n
}

// WaitHealthy polls GET /health until want plugins are ready, up to
// timeout, and returns the time it took.
func WaitHealthy(t Target, c *http.Client, want int, timeout time.Duration) (time.Duration, error) {
	var last string
	d, err := base.Poll(timeout, 5*time.Millisecond, func() bool {
		ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
		defer cancel()
		h, err := GetHealth(ctx, c, t.URL())
		if err != nil {
			last = err.Error()
			return false
		}
		n := ReadyCount(h)
		last = fmt.Sprintf("%d of %d plugins ready", n, len(h.Plugins))
		return n >= want
	})
	if err != nil {
		return d, fmt.Errorf("waiting for %d ready plugins: %w (last: %s)", want, err, last)
	}
	return d, nil
}
