package host

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"sync"
	"syscall"

	"github.com/hashicorp/go-plugin/runner"
)

// processRunner is the go-plugin runner.Runner the host uses for every
// plugin process. Beyond go-plugin's own command runner it:
//   - puts the plugin in its own process group, so that killing it also
//     kills the children it started;
//   - sets the Linux parent-death signal (SIGKILL), so the plugin dies with
//     the host even when the host is SIGKILLed; the signal follows the OS
//     thread that started the child, so every child is started from one
//     spawner goroutine locked to a thread that never exits;
//   - closes exited when the process is gone and keeps its exit status.
type processRunner struct {
	name   string
	cmd    *exec.Cmd
	stdout io.ReadCloser
	stderr io.ReadCloser

	pid      int
	exited   chan struct{}
	waitOnce sync.Once
	waitErr  error
}

var _ runner.Runner = (*processRunner)(nil)

func newProcessRunner(name string, cmd *exec.Cmd) (*processRunner, error) {
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	stderr, err := cmd.StderrPipe()
	if err != nil {
		return nil, err
	}
	setProcAttr(cmd)
	return &processRunner{name: name, cmd: cmd, stdout: stdout, stderr: stderr, exited: make(chan struct{})}, nil
}

// Start starts the process on the spawner thread.
func (r *processRunner) Start(_ context.Context) error {
	if err := spawn(r.cmd); err != nil {
		return err
	}
	r.pid = r.cmd.Process.Pid
	return nil
}

// Wait waits for the process to exit (go-plugin calls it once, from its
// own goroutine), then kills what is left of its process group.
func (r *processRunner) Wait(_ context.Context) error {
	r.waitOnce.Do(func() {
		r.waitErr = r.cmd.Wait()
		killGroup(r.pid)
		close(r.exited)
	})
	<-r.exited
	return r.waitErr
}

// Kill kills the plugin's whole process group with SIGKILL.
func (r *processRunner) Kill(_ context.Context) error {
	if r.cmd.Process == nil {
		return nil
	}
	killGroup(r.pid)
	err := r.cmd.Process.Kill()
	if errors.Is(err, os.ErrProcessDone) {
		return nil
	}
	return err
}

// Stdout implements runner.Runner.
func (r *processRunner) Stdout() io.ReadCloser { return r.stdout }

// Stderr implements runner.Runner.
func (r *processRunner) Stderr() io.ReadCloser { return r.stderr }

// Name is the plugin's name; go-plugin names the stderr logger after it.
func (r *processRunner) Name() string { return r.name }

// ID is the process id.
func (r *processRunner) ID() string { return strconv.Itoa(r.pid) }

// Diagnose implements runner.Runner.
func (r *processRunner) Diagnose(_ context.Context) string {
	return fmt.Sprintf("plugin %q (%s) did not complete the go-plugin handshake: is it built with pluginsdk.Serve for this host's protocol version, for this OS and architecture?", r.name, r.cmd.Path)
}

// PluginToHost implements runner.AddrTranslator (no translation).
func (r *processRunner) PluginToHost(n, a string) (string, string, error) { return n, a, nil }

// HostToPlugin implements runner.AddrTranslator (no translation).
func (r *processRunner) HostToPlugin(n, a string) (string, string, error) { return n, a, nil }

// exitStatus returns the exit status text once the process has exited
// ("" before).
func (r *processRunner) exitStatus() string {
	select {
	case <-r.exited:
		if r.waitErr == nil {
			return "exit status 0"
		}
		return r.waitErr.Error()
	default:
		return ""
	}
}

// forkMu keeps forks and open-for-write binary copies apart: a child
// forked while a copy is open for writing inherits the fd until it execs,
// and exec of that copy then fails with ETXTBSY (golang/go#22315).
var forkMu sync.RWMutex

type spawnRequest struct {
	cmd  *exec.Cmd
	done chan error
}

var (
	spawnOnce sync.Once
	spawnCh   chan spawnRequest
)

// spawn starts cmd from the dedicated spawner thread. The thread is locked
// and its goroutine never returns, so the thread never exits and the
// parent-death signal of its children fires only when the host dies.
func spawn(cmd *exec.Cmd) error {
	spawnOnce.Do(func() {
		spawnCh = make(chan spawnRequest)
		go func() {
			runtime.LockOSThread()
			for req := range spawnCh {
				forkMu.Lock()
				err := req.cmd.Start()
				forkMu.Unlock()
				req.done <- err
			}
		}()
	})
	done := make(chan error, 1)
	spawnCh <- spawnRequest{cmd: cmd, done: done}
	return <-done
}

// killGroup sends SIGKILL to process group pgid (the plugin and its
// children). Errors (group already gone) are ignored.
func killGroup(pgid int) {
	if pgid > 0 {
		_ = syscall.Kill(-pgid, syscall.SIGKILL)
	}
}
