package supervise

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"

	"github.com/hashicorp/go-plugin/runner"

	"github.com/opentool-host/opentool-host/process/launcher"
)

// ProcessRunner is the go-plugin runner.Runner the host uses for every
// plugin process. The process is started and owned by package launcher
// (its own process group, the parent-death signal SIGTERM, its cgroup,
// its user); beyond that the runner:
//   - owns what the plugin writes, which is not trusted: go-plugin reads
//     the handshake through handshakeReader (cut to the six fields this
//     host speaks; without the sixth, the certificate of go-plugin's
//     AutoMTLS, the plugin is refused), and never sees stderr, which is copied to the host's
//     own lineLogger (go-plugin's stderr parser panics on some JSON lines);
//   - tells the keeper of the process group when the plugin has no cgroup;
//   - closes exited when the process is gone and keeps its exit status.
//
// SIGTERM, not SIGKILL, is the death signal: a pluginsdk plugin answers it
// by killing its whole process group (its own children too); any other
// program is terminated by SIGTERM's default action. The keeper and
// pluginsdk's parent watch are the further guards.
type ProcessRunner struct {
	name       string
	file       string // the plugin's file in the plugins folder (cmd runs a copy)
	cmd        *launcher.Cmd
	proc       *launcher.Process // nil before Start
	stdout     *handshakeReader
	stderr     io.ReadCloser
	stderrSink io.Writer
	stderrDone chan struct{} // closed when stderr reached EOF
	// keeper, without a cgroup, is told the process group, which it kills
	// if the host dies; nil with a cgroup (the keeper kills the host's
	// cgroup folder whole) or without a keeper.
	Keeper *launcher.Keeper

	PID      int           // the process id, once started (0 before)
	Exited   chan struct{} // closed once Wait returned
	exitOnce sync.Once
	procMu   sync.Mutex // guards proc and killed between Start and kill (which a closing host may call from elsewhere)
	killed   bool       // kill came before Start: Start refuses
}

var _ runner.Runner = (*ProcessRunner)(nil)

// NewProcessRunner prepares spec (its Stdout and Stderr are the runner's)
// as plugin name, whose file in the plugins folder is file; what the process writes to stderr goes to stderrSink,
// which must not fail.
func NewProcessRunner(name, file string, spec launcher.Spec, stderrSink io.Writer) (*ProcessRunner, error) {
	spec.DeathSignal = syscall.SIGTERM
	spec.Stdout, spec.Stderr = nil, nil
	cmd, err := launcher.New(spec)
	if err != nil {
		return nil, err
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	stderr, err := cmd.StderrPipe()
	if err != nil {
		return nil, err
	}
	return &ProcessRunner{
		name: name, file: file, cmd: cmd,
		stdout: newHandshakeReader(stdout), stderr: stderr,
		stderrSink: stderrSink, stderrDone: make(chan struct{}),
		Exited: make(chan struct{}),
	}, nil
}

// Start starts the process and copies its stderr to the sink until EOF.
func (r *ProcessRunner) Start(_ context.Context) error {
	// Under procMu from the check to the assignment, so that a kill
	// either comes first (the process is not started) or finds the
	// process to kill.
	r.procMu.Lock()
	if r.killed {
		r.procMu.Unlock()
		close(r.stderrDone)
		return errors.New("the host is closing: the plugin is not started")
	}
	proc, err := r.cmd.Start()
	if err != nil {
		r.procMu.Unlock()
		close(r.stderrDone)
		var changed *launcher.ChangedError
		if errors.As(err, &changed) {
			return errors.New(changed.Detail()) // the host's status names the copy
		}
		return err
	}
	r.proc, r.PID = proc, proc.Pid()
	r.procMu.Unlock()
	if r.Keeper != nil {
		_ = r.Keeper.Track(r.PID) // the plugin leads its own process group
	}
	go func() {
		defer close(r.stderrDone)
		_, _ = io.Copy(r.stderrSink, r.stderr)
	}()
	return nil
}

// Wait waits for the process to exit (go-plugin calls it once, from its
// own goroutine, after stderr reached EOF: so no thread blocks in wait(2)
// while the plugin runs); the launcher then kills what is left of its
// process group and cgroup, and exited closes.
func (r *ProcessRunner) Wait(_ context.Context) error {
	if r.proc == nil {
		return errors.New("plugin not started")
	}
	err := r.proc.Wait()
	r.exitOnce.Do(func() { close(r.Exited) })
	return err
}

// Kill kills the plugin's whole process group and cgroup with SIGKILL.
func (r *ProcessRunner) Kill(_ context.Context) error {
	if r.proc == nil {
		return nil
	}
	return r.proc.Kill()
}

// Stdout implements runner.Runner.
func (r *ProcessRunner) Stdout() io.ReadCloser { return r.stdout }

// Stderr implements runner.Runner: go-plugin gets a stream that ends when
// the real one does and carries nothing (the host logs stderr itself).
func (r *ProcessRunner) Stderr() io.ReadCloser { return emptyUntil(r.stderrDone) }

// Name is the plugin's name; go-plugin names the stderr logger after it.
func (r *ProcessRunner) Name() string { return r.name }

// ID is the process id.
func (r *ProcessRunner) ID() string { return strconv.Itoa(r.PID) }

// Diagnose implements runner.Runner.
func (r *ProcessRunner) Diagnose(_ context.Context) string {
	return fmt.Sprintf("plugin %q (%s) did not complete the go-plugin handshake: is it built with pluginsdk.Serve for this host's protocol version, for this OS and architecture?", r.name, r.file)
}

// PluginToHost implements runner.AddrTranslator (no translation). go-plugin
// calls it with the handshake's address before it dials: a plugin whose
// handshake has no certificate (an SDK that does not authenticate the
// host) is refused here, never dialed. Errors: ErrNoHostAuth wrapped, in
// one line naming the plugin and the SDK versions that authenticate the
// host.
func (r *ProcessRunner) PluginToHost(n, a string) (string, string, error) {
	if !r.stdout.certified.Load() {
		return "", "", fmt.Errorf("plugin %q (%s) refused: %w: %s", r.name, r.file, ErrNoHostAuth, sdkVersionsHint)
	}
	return n, a, nil
}

// HostToPlugin implements runner.AddrTranslator (no translation).
func (r *ProcessRunner) HostToPlugin(n, a string) (string, string, error) { return n, a, nil }

// ExitStatus returns the exit status text once the process has exited
// ("" before).
func (r *ProcessRunner) ExitStatus() string {
	select {
	case <-r.Exited:
		return r.proc.Status()
	default:
		return ""
	}
}

// KillNow SIGKILLs the process group and cgroup at once; nil-safe,
// nothing before Start (and then Start refuses).
func (r *ProcessRunner) KillNow() {
	if r == nil {
		return
	}
	r.procMu.Lock()
	proc := r.proc
	r.killed = true
	r.procMu.Unlock()
	if proc != nil {
		_ = proc.Kill()
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
// speaks: CORE-VERSION|APP-VERSION|NETWORK|ADDRESS|PROTOCOL|SERVER-CERT.
// The sixth is the plugin's one-time TLS certificate of go-plugin's
// AutoMTLS (base64 DER, no padding).
const handshakeFields = 6

// minCertField is the shortest sixth field go-plugin takes for a
// certificate: it ignores 50 characters or fewer, so must the host.
const minCertField = 51

// ErrNoHostAuth is wrapped by the start error of a plugin whose handshake
// carries no TLS certificate: its SDK does not authenticate the host
// (go-plugin's AutoMTLS), so any process that can reach its socket could
// call it. Such a plugin is refused.
var ErrNoHostAuth = errors.New("the plugin does not authenticate the host (no TLS certificate in its go-plugin handshake, go-plugin AutoMTLS)")

// sdkVersionsHint names the SDK versions that authenticate the host.
const sdkVersionsHint = "rebuild it with an SDK that does: Go pluginsdk of opentool-host from the AutoMTLS release on, Python opentool_plugin >= 0.3.0, Node opentool-plugin >= 1.1.0"

// handshakeReader passes a plugin's stdout to go-plugin with the first line,
// the handshake, cut to handshakeFields fields (a seventh, go-plugin's
// multiplexing flag, is for a feature the host does not use), and
// records whether it carries a server certificate (certified). Lines are
// not held beyond the bufio buffer (4 KiB): a longer first line passes
// through uncut and fails the handshake.
type handshakeReader struct {
	r       *bufio.Reader
	c       io.Closer
	checked bool
	pending []byte
	// certified is set once the first line was read: whether it had a
	// sixth field long enough to be a certificate.
	certified atomic.Bool
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
			var cert bool
			line, cert = cutHandshake(line)
			h.certified.Store(cert)
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
// fields, and whether its sixth field is long enough to be a
// certificate.
func cutHandshake(line []byte) ([]byte, bool) {
	fields := bytes.SplitN(bytes.TrimRight(line, "\r\n"), []byte("|"), handshakeFields+1)
	cert := len(fields) >= handshakeFields && len(fields[handshakeFields-1]) >= minCertField
	if len(fields) <= handshakeFields {
		return line, cert
	}
	return append(bytes.Join(fields[:handshakeFields], []byte("|")), '\n'), cert
}
