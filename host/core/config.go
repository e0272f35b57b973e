package core

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"syscall"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/opentool-host/opentool-host/internal/wire"
	"github.com/opentool-host/opentool-host/process/launcher"
	"github.com/opentool-host/opentool-host/process/sandbox"
	"github.com/opentool-host/opentool-host/protocol/decl"
)

// Config configures a Host. Zero fields take the defaults listed.
type Config struct {
	// Dir is the plugins directory (required), scanned for executables
	// named "opentool-plugin-NAME" and for MCP server declarations named
	// "NAME.mcp.json" (each declared server is a plugin; see Adapter).
	Dir string

	// Logger receives the host's and the plugins' logs (plugins' stderr is
	// logged under "plugin.NAME"); go-plugin's lines that repeat a failed
	// start's or a crash's one ERROR line reach it at debug level.
	// Default: hclog.NewNullLogger().
	Logger hclog.Logger

	// StateDir is the parent of the host-owned state folder (copies of
	// plugin binaries keyed by sha256, and go-plugin's unix sockets). A
	// folder "host-PID" is made in it and removed by Close; folders left by
	// dead hosts are swept at start-up. Default: os.TempDir()/opentool-host.
	StateDir string

	// StartTimeout bounds a plugin's handshake plus its Load call.
	// Default 10 s.
	StartTimeout time.Duration

	// CallTimeout bounds one call when the caller's context has no earlier
	// deadline. Default 60 s.
	CallTimeout time.Duration

	// CancelGrace is how long a plugin may take to return after a call's
	// context ended (timeout or caller gone) before the host kills and
	// restarts it. Default 500 ms.
	CancelGrace time.Duration

	// MaxConcurrency is the number of calls one plugin may run at once;
	// further calls queue until their deadline and then fail with ErrBusy.
	// Default 64.
	MaxConcurrency int

	// DrainTimeout bounds how long a replaced or removed plugin may finish
	// its in-flight calls before it is stopped. Default 10 s.
	DrainTimeout time.Duration

	// Restart tunes restarts of plugins that die.
	Restart RestartPolicy

	// Watch turns on hot reload: the host watches Dir with fsnotify and
	// starts, replaces and stops plugins as their files change.
	Watch bool

	// SettleTime is how long a changed file's size and mtime must stay the
	// same (and its exec bit be set) before it is started. Default 150 ms.
	SettleTime time.Duration

	// MaxResultBytes caps one result (or one streamed item) a plugin may
	// return, in bytes; a larger one is refused before it is buffered and
	// the caller gets an error of KindResultRejected. Default 16 MiB
	// (DefaultMaxResultBytes).
	MaxResultBytes int64

	// PluginUser, when set, runs every plugin process (and what it
	// starts) as this user and group instead of the host's
	// (--plugin-user): the host must be root to switch. The state folder
	// is then traversable and the binary copies executable by others, and
	// the socket folder belongs to that user. Nil: the host's own user
	// (a root plugin without --sandbox is trusted: see docs/security.md).
	PluginUser *syscall.Credential

	// Keeper is the command of the host's keeper process (the small
	// keeper program, or the host's binary re-executed as "keeper":
	// package keeper, launcher.StartKeeper), which kills every
	// plugin process tree when the host dies, whatever killed it and
	// whatever the plugins do with signals. Nil: no keeper (plugins then
	// rely on their parent-death signal and pluginsdk's own cleanup).
	Keeper []string

	// Secrets are the secrets the operator declares (--secret,
	// --secrets-file): name → where it is read from (absolute file
	// paths) and the plugins it is granted to (--secret-for; Plugins).
	// A plugin's policy may set variables to declared secrets granted
	// to that plugin only ("secrets": {"VAR": "NAME"}); a policy naming
	// another fails its plugin before it runs, and nothing in the
	// plugins folder can name a host variable or a file. A secret with
	// no Plugins reaches no plugin (New logs it). Checked by New: no
	// OPENTOOL_* variable, no bad plugin name, and relative paths are
	// refused.
	Secrets map[string]decl.Secret

	// MaxResultMemory caps the bytes of results the host holds at once
	// for requests whose responses are not written yet (a slow reader
	// keeps its result until it has read it), across every connection.
	// A call whose result would exceed it fails with KindBusy. Only calls
	// made with a scope (Host.WithResultScope, as the front door makes for
	// every HTTP request) count. Default DefaultMaxResultMemory (256 MiB).
	MaxResultMemory int64

	// MaxQueue is how many calls may wait for a slot of one plugin beyond
	// MaxConcurrency; a call that finds the queue full fails at once with
	// ErrBusy. Default 4 × MaxConcurrency.
	MaxQueue int

	// PluginEnv names further variables of the host's environment that
	// every plugin receives, beside the allow-list of plugin_env.go (PATH,
	// HOME, TMPDIR, LANG, LC_*, TZ, and OPENTOOL__<PLUGIN>__VAR as
	// OPENTOOL_<PLUGIN>_VAR for plugin PLUGIN only: launcher.PluginVars). Names of the host's
	// namespace (OPENTOOL_*: its settings, such as OPENTOOL_API_KEYS and
	// OPENTOOL_TASK_STORE) are refused: Validate's error says so.
	PluginEnv []string

	// PrefixCollisions serves a function whose name another plugin already
	// owns as "PLUGIN__NAME" instead of refusing it. Without it the later
	// duplicate is refused (logged at ERROR and shown in /health); the
	// first owner keeps the name either way, also across restarts (the
	// owners are remembered under StateDir, owners.go). The CLI turns it
	// on by default (--prefix-collisions=false turns it off).
	PrefixCollisions bool

	// Declared serves one declared plugin (a server of "NAME.mcp.json" or
	// the tools of "NAME.tools.json" in Dir; package protocol/decl) in
	// the host's own process: normally declared.Serve. It gets the
	// plugin's decl.Launch (with a lock, naming the verified copies), the
	// launcher.Starter through which every program of the plugin starts
	// (the plugin's environment allow-list, policy, sandbox launcher,
	// user, cgroup, keeper) and the plugin's logger; the host supervises
	// what it returns as it supervises a plugin process (Run's end is
	// the plugin's exit). Nil: declared plugins fail to start with a
	// reason saying so.
	Declared func(l decl.Launch, s *launcher.Starter, log hclog.Logger) wire.Local

	// MCPConfigs are desktop MCP client configs the operator names (run
	// --mcp-config FILE): absolute paths of files outside Dir, read as
	// drop-in NAME.mcp.json files are (each server a plugin, its entry
	// failing alone; package internal/decl, desktop.go) but as the
	// operator's: their ${env:VAR}, ${VAR} and ${userHome} read the
	// host's environment, and their envFile may be any file (a drop-in
	// file may do neither). A server name one of them declares wins over
	// any file of Dir. They are read at Start and at every Rescan
	// (SIGHUP), not watched. New refuses a file inside Dir, one that
	// cannot be read, or one that has a fault as a whole.
	MCPConfigs []string

	// Sandbox is the confinement every plugin gets (limits, Landlock,
	// network) and the most a plugin's policy declaration
	// (NAME.policy.json) may allow: a policy only narrows it (discover/policy.go).
	// The zero Spec confines nothing.
	Sandbox sandbox.Spec
	// SandboxWrite are absolute, clean paths within which a policy's
	// sandbox.write may let its plugin write when Sandbox.Confine is set
	// (--sandbox-write). They are a ceiling, not a grant: a plugin whose
	// policy names none of them writes none of them. New refuses a
	// relative one, or any without Sandbox.Confine.
	SandboxWrite []string

	// Locked enforces DIR/opentool.lock (package lockfile; see discover/pins.go):
	// a file that is not pinned or does not match is not started, and a
	// plugin whose function definitions changed is held. New fails when
	// there is no lock file.
	Locked bool

	// AcceptDefinitionChanges serves changed function definitions of a
	// Locked host at once, logging the change, instead of holding them.
	AcceptDefinitionChanges bool

	// OnCall, when set, receives every finished call (metrics, traces,
	// the audit log): on the caller's goroutine after the call ended, so
	// it must be quick and must not block. ctx is the call's context
	// (its Caller, its trace).
	OnCall func(ctx context.Context, rec CallRecord)

	// NoCgroups runs plugins without a cgroup each (see package
	// process/cgroup): killing a plugin then kills its process group
	// only, so a descendant that called setsid survives it. By default
	// the host uses cgroups wherever it can make them.
	NoCgroups bool

	// NoDataChannel sends every call over gRPC Invoke streams, even to a
	// plugin that offers the data channel (package internal/wire,
	// frame.go: the Go SDK does). By default each plugin process gets one
	// and a plugin that speaks it takes its calls there: the same
	// cancellation, grace kill, limits, streaming and crash reports at a
	// fraction of gRPC's cost per call. Load, Watch and shutdown are
	// always gRPC. The environment variable TransportEnv set to "grpc"
	// sets it too (the CLI's --plugin-transport reads the same variable),
	// so that a whole test suite can run on gRPC.
	NoDataChannel bool

	// ToolSearch serves the host's own functions search_tools and
	// call_tool beside the plugins' (--tool-search; builtin.go): a
	// search over the functions the caller may call, and a call of any of
	// them by name.
	ToolSearch bool

	// ToolSearchThreshold, with ToolSearch, makes the function listings
	// of every front end (package catalog) show a key that may call more
	// than this many of the plugins' functions only search_tools and
	// call_tool (--tool-search-threshold); 0 lists every function.
	// Negative is refused.
	ToolSearchThreshold int

	// CodeMode serves the host's own function run_code (--code-mode,
	// host/codemode.go): a JavaScript program that calls the caller's
	// tools, run in a confined code runner (CodeRunner), each inner call
	// the caller's own call.
	CodeMode bool
	// CodeRunner is the code runner's binary (cmd/opentool-host-coderunner,
	// an absolute path), needed with CodeMode.
	CodeRunner string
	// CodeTimeout is a program's wall time (0: DefaultCodeTimeout, 30 s).
	CodeTimeout time.Duration
	// CodeMaxCalls is how many inner tool calls a program may make (0:
	// DefaultCodeMaxCalls, 1,000).
	CodeMaxCalls int
	// CodeMemoryBytes is each code runner's memory limit, in bytes
	// (sandbox.Spec.MemoryBytes: cgroup memory.max, else RLIMIT_AS of
	// its address space, of which the Go runtime reserves some 600 MiB;
	// 0: DefaultCodeMemoryBytes, 1 GiB).
	CodeMemoryBytes int64

	// Launcher is the command (argv) that applies a plugin's sandbox.Spec
	// in the plugin's own process before it runs the plugin: normally the
	// host's binary re-executed as [os.Executable(), "launch"]. Empty:
	// plugins whose Spec needs it fail to start with a reason saying so.
	Launcher []string
}

// The defaults of a run_code program's limits (Config.CodeTimeout,
// CodeMaxCalls, CodeMemoryBytes).
const (
	DefaultCodeTimeout     = 30 * time.Second
	DefaultCodeMaxCalls    = 1000
	DefaultCodeMemoryBytes = 1 << 30
)

// DefaultMaxResultMemory is the default of Config.MaxResultMemory
// (256 MiB).
const DefaultMaxResultMemory = 256 << 20

// DefaultMaxResultBytes is the default of Config.MaxResultBytes (16 MiB).
const DefaultMaxResultBytes = 16 << 20

// RestartPolicy is the exponential backoff with jitter used to restart a
// plugin that died. Zero fields take the defaults listed.
type RestartPolicy struct {
	// InitialBackoff is the first retry delay; each retry doubles it and a
	// random jitter of up to +50% is added. Default 100 ms.
	InitialBackoff time.Duration
	// MaxBackoff caps the delay. Default 30 s.
	MaxBackoff time.Duration
	// ResetAfter: a plugin that stayed up this long has its backoff and
	// crash count reset. Default 10 s.
	ResetAfter time.Duration
	// MaxFailures is how many consecutive crashes or failed starts mark a
	// plugin failed (a crash loop). It is retried when its file changes or
	// on a rescan (SIGHUP). Default 5.
	MaxFailures int
}

// WithDefaults returns c with its zero fields set to their defaults, or
// an error naming the first field that is out of range (negative
// durations and counts are refused, never replaced by a default).
func (c Config) WithDefaults() (Config, error) {
	if err := c.check(); err != nil {
		return c, err
	}
	if os.Getenv(TransportEnv) == "grpc" {
		c.NoDataChannel = true
	}
	if c.Logger == nil {
		c.Logger = hclog.NewNullLogger()
	}
	c.Logger = Quiet(c.Logger) // one line per failure (quietlog.go)
	setDefault(&c.StartTimeout, 10*time.Second)
	setDefault(&c.CallTimeout, 60*time.Second)
	setDefault(&c.CancelGrace, 500*time.Millisecond)
	setDefault(&c.DrainTimeout, 10*time.Second)
	setDefault(&c.SettleTime, 150*time.Millisecond)
	setDefault(&c.MaxConcurrency, 64)
	setDefault(&c.MaxQueue, 4*c.MaxConcurrency)
	setDefault(&c.MaxResultBytes, DefaultMaxResultBytes)
	setDefault(&c.MaxResultMemory, DefaultMaxResultMemory)
	r := &c.Restart
	setDefault(&r.InitialBackoff, 100*time.Millisecond)
	setDefault(&r.MaxBackoff, 30*time.Second)
	setDefault(&r.ResetAfter, 10*time.Second)
	setDefault(&r.MaxFailures, 5)
	return c, nil
}

// setDefault sets *v to def when it is zero.
func setDefault[T int | int64 | time.Duration](v *T, def T) {
	if *v == 0 {
		*v = def
	}
}

// check refuses negative settings and plugin env names that are not
// allowed (see plugin_env.go).
func (c Config) check() error {
	durations := map[string]time.Duration{
		"StartTimeout": c.StartTimeout, "CallTimeout": c.CallTimeout, "CancelGrace": c.CancelGrace,
		"DrainTimeout": c.DrainTimeout, "SettleTime": c.SettleTime,
		"Restart.InitialBackoff": c.Restart.InitialBackoff, "Restart.MaxBackoff": c.Restart.MaxBackoff,
		"Restart.ResetAfter": c.Restart.ResetAfter, "CodeTimeout": c.CodeTimeout,
	}
	if c.PluginUser != nil && os.Geteuid() != 0 {
		return fmt.Errorf("host: PluginUser (--plugin-user) needs the host to run as root, to switch users; this host runs as uid %d", os.Geteuid())
	}
	for _, name := range slices.Sorted(maps.Keys(c.Secrets)) {
		s := c.Secrets[name]
		if err := decl.CheckSecretDecl("secret "+name, name, s); err != nil {
			return fmt.Errorf("host: %w", err)
		}
		if s.File != "" && !filepath.IsAbs(s.File) {
			return fmt.Errorf("host: secret %s: file %q must be an absolute path", name, s.File)
		}
	}
	if err := checkSandboxWrite(c.Sandbox, c.SandboxWrite); err != nil {
		return err
	}
	for name, d := range durations {
		if d < 0 {
			return fmt.Errorf("host: %s must be positive (0 for the default), got %v", name, d)
		}
	}
	counts := map[string]int64{
		"MaxConcurrency": int64(c.MaxConcurrency), "MaxQueue": int64(c.MaxQueue),
		"MaxResultBytes": c.MaxResultBytes, "MaxResultMemory": c.MaxResultMemory, "Restart.MaxFailures": int64(c.Restart.MaxFailures),
		"ToolSearchThreshold": int64(c.ToolSearchThreshold),
		"CodeMaxCalls":        int64(c.CodeMaxCalls), "CodeMemoryBytes": c.CodeMemoryBytes,
	}
	for name, n := range counts {
		if n < 0 {
			return fmt.Errorf("host: %s must not be negative (0 for the default), got %d", name, n)
		}
	}
	return CheckPluginEnv(c.PluginEnv)
}

// checkSandboxWrite refuses SandboxWrite paths without Sandbox.Confine,
// and paths that are not clean and absolute.
func checkSandboxWrite(spec sandbox.Spec, paths []string) error {
	if len(paths) == 0 {
		return nil
	}
	if !spec.Confine {
		return errors.New("host: SandboxWrite (--sandbox-write) needs Sandbox.Confine (--sandbox): without the host's sandbox a policy's sandbox.write needs no ceiling")
	}
	if err := (sandbox.Spec{Write: paths}).Check(); err != nil {
		return fmt.Errorf("host: SandboxWrite (--sandbox-write): %w", err)
	}
	return nil
}

// TransportEnv is the environment variable that, set to "grpc", sends
// every call over gRPC (Config.NoDataChannel); "auto" or unset: the data
// channel where a plugin offers it.
const TransportEnv = "OPENTOOL_PLUGIN_TRANSPORT"
