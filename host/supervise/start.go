package supervise

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/hashicorp/go-hclog"
	plugin "github.com/hashicorp/go-plugin"
	"github.com/hashicorp/go-plugin/runner"

	"github.com/opentool-host/opentool-host/host/core"
	"github.com/opentool-host/opentool-host/host/discover"
	"github.com/opentool-host/opentool-host/internal/wire"
	"github.com/opentool-host/opentool-host/process/cgroup"
	"github.com/opentool-host/opentool-host/process/launcher"
	"github.com/opentool-host/opentool-host/process/sandbox"
	"github.com/opentool-host/opentool-host/protocol/opentool"
)

// startInstance starts plugin name from f and loads and validates its
// document, all within cfg.StartTimeout: a plugin file runs as a process
// (startProcess); a declared plugin is served in the host's process
// (startLocal). With a lock (discover/pins.go) the files are checked right before
// the start and the definitions once loaded; serving (the definitions
// served now, or nil) says what changed. On error nothing is left
// running.
func startInstance(ctx context.Context, sv *Supervisor, name string, f discover.FileRef, serving *opentool.OpenTool) (*instance, error) {
	cfg := sv.Cfg
	pol, err := discover.ResolvePolicy(cfg, name, f)
	if err != nil {
		return nil, err
	}
	secrets, err := pol.SecretEnv()
	if err != nil {
		return nil, err
	}
	proc, err := prepare(sv, name, f, pol.Spec)
	if err != nil {
		return nil, err
	}
	inst := &instance{
		name:      name,
		path:      f.Path,
		sum:       proc.sum,
		log:       cfg.Logger.Named("plugin"),
		stderr:    NewTailBuffer(20),
		started:   time.Now(),
		sem:       make(chan struct{}, pol.MaxConcurrency),
		queue:     int64(pol.MaxQueue),
		timeout:   pol.Timeout,
		prefix:    pol.Prefix,
		memLimit:  pol.Spec.MemoryBytes,
		grace:     cfg.CancelGrace,
		maxResult: cfg.MaxResultBytes,
		release:   proc.release,
	}
	if f.Launch != "" {
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
	stopKill := context.AfterFunc(ctx, func() { inst.starting.Load().KillNow() })
	err = inst.load(ctx, cfg)
	stopKill()
	if err != nil {
		err = inst.handshakeError(f, err)
		inst.kill()
		tail := inst.stderrTail()
		if hint := sandboxHint(pol.Spec, cfg.Sandbox.Confine, f.Policy.Path, tail); hint != "" {
			err = fmt.Errorf("%w; %s", err, hint)
		}
		if len(tail) > 0 && ctx.Err() == nil { // not when the host's closing ended it
			inst.log.Error("plugin output before it failed to start", "plugin", name, "file", f.Path, "stderr", tail)
		}
		return nil, &startError{err: err, stderr: tail}
	}
	faults, err := sv.Pins.CheckDefinitions(name, inst.doc, serving)
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
func startProcess(ctx context.Context, sv *Supervisor, inst *instance, f discover.FileRef, pol discover.Policy, secrets []string, proc process) error {
	cfg, state, name := sv.Cfg, sv.State, inst.name
	tlsConfig, certEnv, err := PluginTLS()
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
		SyncStdout: &LineLogger{Log: pluginLog, Tail: inst.stderr, Stream: "stdout"},
		SyncStderr: &LineLogger{Log: pluginLog, Tail: inst.stderr, Stream: "stderr"},
		// A result over the cap fails its stream before it is buffered;
		// the protobuf envelope adds a few bytes to the JSON.
		GRPCDialOptions:  wire.DialOptions(int(cfg.MaxResultBytes) + 64),
		UnixSocketConfig: socketConfig(state.Sock, cfg.PluginUser),
		// The plugin gets go-plugin's variables and the allow-list of
		// core/plugin_env.go, never the host's whole environment.
		SkipHostEnv: true,
		// go-plugin hands over a spec command holding the environment (magic
		// cookie, socket dir); the real command runs the host-owned copy of
		// the binary, in the host's working directory.
		RunnerFunc: func(_ hclog.Logger, spec *exec.Cmd, _ string) (runner.Runner, error) {
			// The policy's variables and secrets come last: this plugin's
			// only, never logged. PluginFileEnv: the file in the plugins
			// folder (the process runs a host-owned copy), so that a
			// script finds what lies beside it, such as its SDK, without
			// system-wide files. The host's certificate comes last, so
			// that no variable of the host's environment or the policy
			// replaces it.
			given := slices.Concat(core.PluginEnv(nil, name, cfg.PluginEnv, os.Environ()), pol.Env, secrets)
			env := slices.Concat(spec.Env, given, proc.env, []string{PluginFileEnv + "=" + absPath(f.Path), certEnv})
			return inst.newRunner(ctx, sv, f, pol, launcher.Spec{Path: proc.argv[0], Args: proc.argv[1:], User: cfg.PluginUser, Env: env, Verify: proc.verify}, pluginLog)
		},
	})
	return nil
}

// newRunner is the go-plugin runner of the process lspec (f's host-owned
// copy, in the plugin's environment): in the plugin's cgroup with its
// limits, offered the data channel, its stderr logged under the plugin's
// name, its process group told to the keeper without a cgroup. A start
// given up (ctx ended) is killed before it runs. Errors: the cgroup, a
// limit it cannot hold, the data channel, the launcher.
func (inst *instance) newRunner(ctx context.Context, sv *Supervisor, f discover.FileRef, pol discover.Policy, lspec launcher.Spec, pluginLog hclog.Logger) (runner.Runner, error) {
	if sv.Cgroups != nil {
		cg, err := sv.Cgroups.Child(inst.name)
		if err != nil {
			return nil, fmt.Errorf("cgroup: %w", err)
		}
		lspec.Cgroup = cg
	}
	if err := enforceGroupLimits(pol.Spec, lspec.Cgroup, sv.NoCgroups); err != nil {
		if lspec.Cgroup != nil {
			lspec.Cgroup.Remove()
		}
		return nil, err
	}
	if !sv.Cfg.NoDataChannel {
		if err := inst.offerChannel(&lspec); err != nil {
			return nil, err
		}
	}
	// Unmarked lines on the pipe are debug, as go-plugin logs them.
	r, err := NewProcessRunner(inst.name, f.Path, lspec, &LineLogger{Log: pluginLog, Tail: inst.stderr, Stream: "stderr", Level: hclog.Debug})
	if err == nil && lspec.Cgroup == nil {
		r.Keeper = sv.Keeper.Load() // nil until the keeper runs: startKeeper tracks those
	}
	inst.runner = r
	inst.starting.Store(r)
	if ctx.Err() != nil {
		r.KillNow() // given up before it started: Start refuses
	}
	return r, err
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
	sum string
	// verify maps the host-made copies in argv or launcher to their
	// sha256, checked again right before each exec (launcher.Spec.Verify).
	verify  map[string]string
	release func()
}

// withVerify returns verify (a launcher.Spec.Verify, may be nil) with
// p's copies added.
func (p process) withVerify(verify map[string]string) map[string]string {
	if len(p.verify) == 0 {
		return verify
	}
	out := maps.Clone(verify)
	if out == nil {
		out = map[string]string{}
	}
	maps.Copy(out, p.verify)
	return out
}

// prepare copies f's program into the state folder (by sha256: the exact
// bytes that run, checked against the lock, discover/pins.go) and, when spec needs
// it, puts the launcher (a copy too) in front of it (Config.Launcher);
// for a declared plugin it prepares its launch (prepareDeclared).
// Errors: f's fault, a copy that fails, a file the lock does not pin, no
// launcher; nothing is left acquired.
func prepare(sv *Supervisor, name string, f discover.FileRef, spec sandbox.Spec) (process, error) {
	if f.Fault != "" {
		return process{}, errors.New(f.Fault)
	}
	if f.Launch != "" {
		return prepareDeclared(sv, name, f, spec)
	}
	prog, sum, err := sv.State.Acquire(f.Path)
	if err != nil {
		return process{}, fmt.Errorf("copy binary: %w", err)
	}
	sums := []string{sum}
	verify := map[string]string{prog: sum}
	release := func() {
		for _, s := range sums {
			sv.State.Release(s)
		}
	}
	if err := sv.Pins.CheckFiles(name, f, sum, nil); err != nil {
		release()
		return process{}, err
	}
	argv, env, err := launcher.Wrap(sv.Cfg.Launcher, spec, []string{prog}, nil)
	if err != nil {
		release()
		return process{}, err
	}
	if argv[0] != prog { // the launcher runs first: from its own copy
		lcopy, lsum, err := sv.State.Acquire(argv[0])
		if err != nil {
			release()
			return process{}, fmt.Errorf("copy launcher: %w", err)
		}
		sums = append(sums, lsum)
		argv[0] = lcopy
		verify[lcopy] = lsum
	}
	return process{argv: argv, env: env, sum: sum, verify: verify, release: sync.OnceFunc(release)}, nil
}

// prepareDeclared prepares declared plugin f's launch: with a lock the
// verified copies of the files its programs execute (checked against the
// lock again, and readable in the sandbox), and the launcher's copy when
// spec needs the launcher. Errors: as prepare's.
func prepareDeclared(sv *Supervisor, name string, f discover.FileRef, spec sandbox.Spec) (process, error) {
	p := process{launch: f.Launch, sum: f.Sum}
	var files discover.Verified
	var sums []string
	release := func() {
		for _, s := range sums {
			sv.State.Release(s)
		}
		if files.Release != nil {
			files.Release()
		}
	}
	var err error
	if sv.Pins != nil {
		if p.launch, files, err = sv.Pins.VerifiedLaunch(sv.State, name, f.Launch); err != nil {
			release()
			return process{}, fmt.Errorf("verified copies: %w", err)
		}
	}
	if err := sv.Pins.CheckFiles(name, f, "", files.Sums); err != nil {
		release()
		return process{}, err
	}
	if spec.NeedsLauncher() {
		if len(sv.Cfg.Launcher) == 0 {
			release()
			_, _, err := launcher.Wrap(nil, spec, nil, nil)
			return process{}, err
		}
		lcopy, lsum, err := sv.State.Acquire(sv.Cfg.Launcher[0])
		if err != nil {
			release()
			return process{}, fmt.Errorf("copy launcher: %w", err)
		}
		sums = append(sums, lsum)
		p.launcher = slices.Concat([]string{lcopy}, sv.Cfg.Launcher[1:])
		p.verify = map[string]string{lcopy: lsum}
	}
	p.release = sync.OnceFunc(release)
	return p, nil
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
func (i *instance) handshakeError(f discover.FileRef, err error) error {
	msg := err.Error()
	if i.local != nil || !strings.Contains(msg, "Failed to read any lines from plugin's stdout") && !strings.Contains(msg, "plugin exited before we could connect") {
		return err // a handshake line that is not one: go-plugin's message quotes it, Diagnose names the file
	}
	what := f.Path
	if f.Launch == "" {
		if interp := strings.Join(sandbox.Shebang(f.Path), " "); interp != "" {
			what += ", a script run by " + interp
		}
	}
	ended := "wrote no go-plugin handshake"
	t := time.NewTimer(time.Second) // stdout closed: the exit is near
	defer t.Stop()
	select {
	case <-i.runner.Exited:
		ended = "exited (" + i.runner.ExitStatus() + ") before the go-plugin handshake"
	case <-t.C:
	}
	hint := "is it built with pluginsdk.Serve, or an SDK of this host, for this OS and architecture?"
	if len(i.stderrTail()) > 0 {
		hint = "what it wrote to stderr is in the host's log and in /health (stderr)"
	}
	return fmt.Errorf("plugin file %s %s: %s", what, ended, hint)
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
