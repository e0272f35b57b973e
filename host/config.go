package host

import (
	"time"

	"github.com/hashicorp/go-hclog"
)

// Config configures a Host. Zero fields take the defaults listed.
type Config struct {
	// Dir is the plugins directory scanned for executables named
	// "opentool-plugin-*" (required).
	Dir string

	// Logger receives the host's and the plugins' logs (plugins' stderr is
	// logged under "plugin.NAME"). Default: hclog.NewNullLogger().
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

	// MaxQueue is how many calls may wait for a slot of one plugin beyond
	// MaxConcurrency; a call that finds the queue full fails at once with
	// ErrBusy. Default 4 × MaxConcurrency.
	MaxQueue int

	// PluginEnv names further variables of the host's environment that
	// every plugin receives, beside the allow-list of plugin_env.go (PATH,
	// HOME, TMPDIR, LANG, LC_*, TZ and OPENTOOL_<PLUGIN>_* for plugin
	// PLUGIN). The host's own secrets (OPENTOOL_API_KEYS) are never passed.
	PluginEnv []string

	// PrefixCollisions serves a function whose name another plugin already
	// owns as "PLUGIN__NAME" instead of refusing it. Without it the later
	// duplicate is refused (logged at ERROR and shown in /health); the
	// first owner keeps the name either way.
	PrefixCollisions bool
}

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

func (c Config) withDefaults() Config {
	if c.Logger == nil {
		c.Logger = hclog.NewNullLogger()
	}
	if c.StartTimeout <= 0 {
		c.StartTimeout = 10 * time.Second
	}
	if c.CallTimeout <= 0 {
		c.CallTimeout = 60 * time.Second
	}
	if c.CancelGrace <= 0 {
		c.CancelGrace = 500 * time.Millisecond
	}
	if c.MaxConcurrency <= 0 {
		c.MaxConcurrency = 64
	}
	if c.DrainTimeout <= 0 {
		c.DrainTimeout = 10 * time.Second
	}
	if c.SettleTime <= 0 {
		c.SettleTime = 150 * time.Millisecond
	}
	r := &c.Restart
	if r.InitialBackoff <= 0 {
		r.InitialBackoff = 100 * time.Millisecond
	}
	if r.MaxBackoff <= 0 {
		r.MaxBackoff = 30 * time.Second
	}
	if r.ResetAfter <= 0 {
		r.ResetAfter = 10 * time.Second
	}
	if r.MaxFailures <= 0 {
		r.MaxFailures = 5
	}
	return c
}
