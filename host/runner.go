package host

import (
	"bufio"
	"bytes"
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

	"github.com/opentool-host/opentool-host/internal/cgroup"
	"github.com/opentool-host/opentool-host/internal/keeper"
)

// processRunner is the go-plugin runner.Runner the host uses for every
// plugin process. Beyond go-plugin's own command runner it:
//   - puts the plugin in its own process group, so that killing it also
//     kills the children it started;
//   - sets the Linux parent-death signal (SIGTERM, procattr_linux.go), so
//     the plugin dies with the host even when the host is SIGKILLed; the
//     signal follows the OS thread that started the child, so every child
//     is started from one spawner goroutine locked to a thread that never
//     exits;
//   - owns what the plugin writes, which is not trusted: go-plugin reads
//     the handshake through handshakeReader (cut to the five fields this
//     host speaks), and never sees stderr, which is copied to the host's
//     own lineLogger (go-plugin's stderr parser panics on some JSON lines);
//   - closes exited when the process is gone and keeps its exit status.
type processRunner struct {
	name       string
	cmd        *exec.Cmd
	stdout     io.ReadCloser
	stderr     io.ReadCloser
	stderrSink io.Writer
	stderrDone chan struct{} // closed when stderr reached EOF
	cg         *cgroup.Group // the process tree's cgroup (nil: process group only)
	// keeper, without a cgroup, is told the process group, which it kills
	// if the host dies (package keeper); nil with a cgroup (the keeper
	// kills the host's cgroup folder whole) or without a keeper.
	keeper *keeper.Keeper

	pid      int
	exited   chan struct{}
	waitOnce sync.Once
	waitErr  error
}

var _ runner.Runner = (*processRunner)(nil)

// newProcessRunner prepares cmd (not started) as plugin name; what the
// process writes to stderr goes to stderrSink, which must not fail. With
// cg the process is cloned into that cgroup, and killing the plugin
// kills the cgroup (descendants that left the process group included).
// With user the process runs as that user and group (Config.PluginUser).
func newProcessRunner(name string, cmd *exec.Cmd, stderrSink io.Writer, cg *cgroup.Group, user *syscall.Credential) (*processRunner, error) {
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	stderr, err := cmd.StderrPipe()
	if err != nil {
		return nil, err
	}
	setProcAttr(cmd)
	if user != nil {
		cmd.SysProcAttr.Credential = &syscall.Credential{Uid: user.Uid, Gid: user.Gid, NoSetGroups: true}
	}
	if cg != nil {
		cmd.SysProcAttr.UseCgroupFD, cmd.SysProcAttr.CgroupFD = true, cg.FD()
	}
	return &processRunner{
		name: name, cmd: cmd, cg: cg,
		stdout: newHandshakeReader(stdout), stderr: stderr,
		stderrSink: stderrSink, stderrDone: make(chan struct{}),
		exited: make(chan struct{}),
	}, nil
}

// Start starts the process on the spawner thread and copies its stderr to
// the sink until EOF.
func (r *processRunner) Start(_ context.Context) error {
	err := spawn(r.cmd)
	for _, f := range r.cmd.ExtraFiles {
		_ = f.Close() // the plugin's ends (the data channel) are its own now
	}
	if err != nil {
		close(r.stderrDone)
		if r.cg != nil {
			r.cg.Remove()
		}
		return err
	}
	r.pid = r.cmd.Process.Pid
	if r.keeper != nil {
		_ = r.keeper.Track(r.pid) // the plugin leads its own process group
	}
	go func() {
		defer close(r.stderrDone)
		_, _ = io.Copy(r.stderrSink, r.stderr)
	}()
	return nil
}

// Wait waits for the process to exit (go-plugin calls it once, from its
// own goroutine), then kills what is left of its process group.
func (r *processRunner) Wait(_ context.Context) error {
	r.waitOnce.Do(func() {
		r.waitErr = r.cmd.Wait()
		killGroup(r.pid)
		if r.cg != nil {
			r.cg.Remove() // what left the process group dies too
		}
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
	if r.cg != nil {
		r.cg.Kill()
	}
	err := r.cmd.Process.Kill()
	if errors.Is(err, os.ErrProcessDone) {
		return nil
	}
	return err
}

// Stdout implements runner.Runner.
func (r *processRunner) Stdout() io.ReadCloser { return r.stdout }

// Stderr implements runner.Runner: go-plugin gets a stream that ends when
// the real one does and carries nothing (the host logs stderr itself).
func (r *processRunner) Stderr() io.ReadCloser { return emptyUntil(r.stderrDone) }

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

// emptyUntil is a reader with no data that returns io.EOF once done is
// closed (until then Read blocks).
type emptyUntil chan struct{}

func (e emptyUntil) Read([]byte) (int, error) {
	<-e
	return 0, io.EOF
}

func (e emptyUntil) Close() error { return nil }

// handshakeFields is how many '|' fields of the handshake line this host
// speaks: CORE-VERSION|APP-VERSION|NETWORK|ADDRESS|PROTOCOL.
const handshakeFields = 5

// handshakeReader passes a plugin's stdout to go-plugin with the first line,
// the handshake, cut to handshakeFields fields. A sixth field would be a
// TLS certificate go-plugin installs into a TLS config this host does not
// have (a nil dereference, the host down) and a seventh a multiplexing
// flag the host does not use. Lines are not held beyond the bufio buffer
// (4 KiB): a longer first line passes through uncut and fails the
// handshake.
type handshakeReader struct {
	r       *bufio.Reader
	c       io.Closer
	checked bool
	pending []byte
}

func newHandshakeReader(rc io.ReadCloser) *handshakeReader {
	return &handshakeReader{r: bufio.NewReaderSize(rc, 4096), c: rc}
}

// Read implements io.Reader.
func (h *handshakeReader) Read(p []byte) (int, error) {
	if !h.checked {
		h.checked = true
		line, err := h.r.ReadSlice('\n')
		if err == nil {
			line = cutHandshake(line)
		}
		h.pending = append([]byte(nil), line...)
		if len(h.pending) == 0 && err != nil && !errors.Is(err, bufio.ErrBufferFull) {
			return 0, err
		}
	}
	if len(h.pending) > 0 {
		n := copy(p, h.pending)
		h.pending = h.pending[n:]
		return n, nil
	}
	return h.r.Read(p)
}

// Close implements io.Closer.
func (h *handshakeReader) Close() error { return h.c.Close() }

// cutHandshake returns line (with its newline) cut to handshakeFields
// fields.
func cutHandshake(line []byte) []byte {
	fields := bytes.SplitN(bytes.TrimRight(line, "\r\n"), []byte("|"), handshakeFields+1)
	if len(fields) <= handshakeFields {
		return line
	}
	return append(bytes.Join(fields[:handshakeFields], []byte("|")), '\n')
}
