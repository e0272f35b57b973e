// Package hostflags is the command line of core.Config: the flags of
// every opentool-host command that starts plugins (run, mcp, list, call,
// export, lock, pull) and the one function that turns them into the
// host's configuration, so that each command takes the same flags with
// the same meaning.
package hostflags

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/urfave/cli/v2"

	"github.com/opentool-host/opentool-host/cmd/opentool-host/internal/cliflags"
	"github.com/opentool-host/opentool-host/cmd/opentool-host/internal/selfexec"
	"github.com/opentool-host/opentool-host/declared"
	"github.com/opentool-host/opentool-host/host/core"
	"github.com/opentool-host/opentool-host/process/launcher"
	"github.com/opentool-host/opentool-host/process/sandbox"
	"github.com/opentool-host/opentool-host/protocol/decl"
)

// Flags returns the flags of a command that starts plugins: own (the
// command's own flags) first, then those that fill core.Config (Config),
// then --log-level (default logLevel: trace, debug, info, warn, error or
// off) and --log-json.
//
// Each host flag is shown under its category (categories).
func Flags(logLevel string, own ...cli.Flag) []cli.Flag {
	return cliflags.Categorize(hostFlags(logLevel, own), categories)
}

// LocalFlags returns the flags of a command that starts plugins for one
// job and stops them (list, call, export, lock, pull: a one-shot host
// with --dir): those of Flags, but for the help of serving many calls at
// once, which the command takes but does not show (--max-concurrency,
// --max-queue, --plugin-transport), nor --call-timeout and --max-result
// unless it makes calls (calls).
func LocalFlags(logLevel string, calls bool, own ...cli.Flag) []cli.Flag {
	flags := cliflags.Hide(Flags(logLevel, own...), "max-concurrency", "max-queue", "plugin-transport")
	if !calls {
		flags = cliflags.Hide(flags, "call-timeout", "max-result")
	}
	return flags
}

// categories are the help's headings of the host flags, by flag name.
var categories = map[string]string{
	"start-timeout": "Plugins", "plugin-env": "Plugins", "mcp-config": "Plugins", "prefix-collisions": "Plugins",
	"state-dir": "Plugins", "no-cgroups": "Plugins", "plugin-transport": "Plugins",
	"call-timeout": "Limits", "max-concurrency": "Limits", "max-queue": "Limits", "max-result": "Limits",
	"plugin-memory-mb": "Limits", "plugin-cpu-seconds": "Limits", "plugin-processes": "Limits",
	"sandbox": "Sandbox", "sandbox-read": "Sandbox", "sandbox-write": "Sandbox", "sandbox-deny-network": "Sandbox", "require-sandbox": "Sandbox", "plugin-user": "Sandbox",
	"secret": "Secrets", "secret-for": "Secrets", "secrets-file": "Secrets",
	"log-level": "Observability", "log-json": "Observability",
}

// hostFlags are own, then the flags of Flags, uncategorized.
func hostFlags(logLevel string, own []cli.Flag) []cli.Flag {
	return slices.Concat(own, []cli.Flag{
		&cli.DurationFlag{Name: "call-timeout", Value: 60 * time.Second, Usage: "longest a call may run before it fails (> 0)", Action: cliflags.Positive("call-timeout")},
		&cli.IntFlag{Name: "max-concurrency", Value: 64, Usage: "`N` calls one plugin may run at once (>= 1); more wait in its queue until their deadline", Action: cliflags.AtLeast("max-concurrency", 1)},
		&cli.IntFlag{Name: "max-queue", Value: 0, Usage: "`N` calls that may wait for one plugin beyond --max-concurrency (>= 0); more fail at once as busy", Action: cliflags.AtLeast("max-queue", 0), DefaultText: "0, meaning 4 x --max-concurrency"},
		&cli.Int64Flag{Name: "max-result", Value: core.DefaultMaxResultBytes, Usage: "largest result (or streamed item) a plugin may return, in `BYTES` (>= 1); larger ones fail the call", Action: cliflags.AtLeast[int64]("max-result", 1)},
		&cli.DurationFlag{Name: "start-timeout", Value: 10 * time.Second, Usage: "longest a plugin may take to handshake and load (> 0)", Action: cliflags.Positive("start-timeout")},
		&cli.StringSliceFlag{Name: "plugin-env", Usage: "also pass the host's environment variable `NAME` to every plugin (repeatable; never an OPENTOOL_* name, the host's own); by default a plugin gets only an allow-list (PATH, HOME, LANG, LC_*, TZ, ...) and the variables set for it alone: OPENTOOL__<PLUGIN>__VAR reaches plugin PLUGIN (upper-cased, - as _) alone, as OPENTOOL_<PLUGIN>_VAR"},
		&cli.StringSliceFlag{Name: "mcp-config", Usage: "also run the MCP servers of desktop client config `FILE` as it is (repeatable): Claude Desktop's claude_desktop_config.json, Claude Code's .mcp.json, Cursor's or VS Code's mcp.json, Windsurf's mcp_config.json. " +
			"Being the operator's file, its ${env:VAR} and ${VAR} read the host's environment and its envFile may be any file, which a drop-in NAME.mcp.json of --dir may not do. A bad entry fails alone; re-read on SIGHUP"},
		&cli.BoolFlag{Name: "prefix-collisions", Value: true, Usage: "serve a function whose name another plugin already owns as PLUGIN__NAME (logged with that name, shown by list and /health); --prefix-collisions=false refuses it instead. The owner keeps the plain name across restarts (remembered under --state-dir)"},
		&cli.StringFlag{Name: "state-dir", Usage: "parent of the host's state folder (binary copies, sockets), removed at exit, and of the owners of function names, kept for the next start (owners-HASH.json); default $TMPDIR/opentool-host"},
		&cli.StringFlag{Name: "plugin-user", Usage: "run every plugin process as `USER` (a name or a uid; its primary group) instead of the host's own user; the host must run as root. Recommended whenever the host runs as root: a root plugin without --sandbox is trusted"},
		&cli.BoolFlag{Name: "no-cgroups", Usage: "run plugins without a cgroup each, even where the host could make them: process groups and the keeper still take every plugin down with the host, but a descendant that leaves its process group (setsid) is then not killed, and policies asking for cpu_percent or processes limits fail"},
		&cli.StringFlag{Name: "plugin-transport", Value: "auto", Usage: "how calls reach plugins: `auto` (the data channel where a plugin offers it, as the Go SDK does; gRPC otherwise) or grpc (always gRPC)", EnvVars: []string{core.TransportEnv}, Action: cliflags.OneOf("plugin-transport", "auto", "grpc")},
	}, sandboxFlags(), secretFlags(), []cli.Flag{
		&cli.StringFlag{Name: "log-level", Value: logLevel, Usage: "log level: trace, debug, info, warn, error or off", EnvVars: []string{"OPENTOOL_LOG_LEVEL"}},
		&cli.BoolFlag{Name: "log-json", Usage: "write logs as JSON lines", EnvVars: []string{"OPENTOOL_LOG_JSON"}},
	})
}

// Config turns the flags of Flags and --dir into the host's
// configuration, its logger writing to stderr. Errors (cli.Exit with
// status 2): a flag value the host cannot take (an unknown --log-level or
// --plugin-user, --sandbox-read or --sandbox-write without --sandbox, a
// bad --secret or --secret-for, a --secret-for of an undeclared secret).
func Config(c *cli.Context) (core.Config, error) {
	log, err := newLogger(c)
	if err != nil {
		return core.Config{}, err
	}
	spec, writable, err := sandboxSpec(c)
	if err != nil {
		return core.Config{}, err
	}
	secrets, err := secretsConfig(c)
	if err != nil {
		return core.Config{}, err
	}
	pluginUser, err := launcher.LookupUser(c.String("plugin-user"))
	if err != nil {
		return core.Config{}, cli.Exit("--plugin-user "+err.Error(), 2)
	}
	mcpConfigs, err := absPaths(c, "mcp-config")
	if err != nil {
		return core.Config{}, err
	}
	return core.Config{
		Dir:              c.String("dir"),
		Logger:           log,
		CallTimeout:      c.Duration("call-timeout"),
		MaxConcurrency:   c.Int("max-concurrency"),
		MaxQueue:         c.Int("max-queue"),
		MaxResultBytes:   c.Int64("max-result"),
		StartTimeout:     c.Duration("start-timeout"),
		PluginEnv:        c.StringSlice("plugin-env"),
		PrefixCollisions: c.Bool("prefix-collisions"),
		StateDir:         c.String("state-dir"),
		Declared:         declared.Serve,
		Launcher:         selfexec.Argv(selfexec.Launch),
		Keeper:           selfexec.KeeperArgv(),
		Sandbox:          spec,
		SandboxWrite:     writable,
		NoDataChannel:    c.String("plugin-transport") == "grpc",
		Secrets:          secrets,
		PluginUser:       pluginUser,
		NoCgroups:        c.Bool("no-cgroups"),
		MCPConfigs:       mcpConfigs,
	}, nil
}

// sandboxFlags are the host flags that fill core.Config.Sandbox: the
// confinement every plugin gets, and the most a plugin's policy file may
// allow.
func sandboxFlags() []cli.Flag {
	return []cli.Flag{
		&cli.BoolFlag{Name: "sandbox", Usage: "confine every plugin with Landlock: it may read only system folders, a script's interpreter and this host's SDK, --sandbox-read paths and what its policy adds, and write only its policy's paths within --sandbox-write"},
		&cli.StringSliceFlag{Name: "sandbox-read", Usage: "with --sandbox, let every plugin read (and execute) `PATH` too (repeatable; relative to the working directory)"},
		&cli.StringSliceFlag{Name: "sandbox-write", Usage: "with --sandbox, let a plugin's policy (sandbox.write) grant writes within `PATH` (repeatable; relative to the working directory); by itself it lets no plugin write"},
		&cli.BoolFlag{Name: "sandbox-deny-network", Usage: "deny every plugin TCP bind and connect (Landlock ABI 4, Linux 6.7); a policy may allow connect_tcp ports"},
		&cli.BoolFlag{Name: "require-sandbox", Usage: "fail a plugin's start when the kernel cannot apply all of its sandbox, instead of running it with what can be applied (logged)"},
		&cli.Int64Flag{Name: "plugin-memory-mb", Usage: "cap each plugin process's address space at `MiB` (RLIMIT_AS; a Go plugin built with cgo needs about 2048); 0: no cap", Action: cliflags.AtLeast[int64]("plugin-memory-mb", 0)},
		&cli.Int64Flag{Name: "plugin-cpu-seconds", Usage: "cap each plugin process's CPU time at `SECONDS` (RLIMIT_CPU: SIGXCPU, then SIGKILL); 0: no cap", Action: cliflags.AtLeast[int64]("plugin-cpu-seconds", 0)},
		&cli.IntFlag{Name: "plugin-processes", Usage: "cap processes and threads at `N` (RLIMIT_NPROC: counts all of the user's, and does not bind root); 0: no cap", Action: cliflags.AtLeast("plugin-processes", 0)},
	}
}

// sandboxSpec returns core.Config.Sandbox and core.Config.SandboxWrite
// from the flags of sandboxFlags, with --sandbox-read and
// --sandbox-write paths made absolute. Errors: either without
// --sandbox, or a path that cannot be made absolute.
func sandboxSpec(c *cli.Context) (sandbox.Spec, []string, error) {
	s := sandbox.Spec{
		Confine:     c.Bool("sandbox"),
		DenyNetwork: c.Bool("sandbox-deny-network"),
		Require:     c.Bool("require-sandbox"),
		MemoryBytes: c.Int64("plugin-memory-mb") << 20,
		CPUSeconds:  c.Int64("plugin-cpu-seconds"),
		Processes:   c.Int("plugin-processes"),
	}
	for _, name := range []string{"sandbox-read", "sandbox-write"} {
		if len(c.StringSlice(name)) > 0 && !s.Confine {
			return s, nil, cliflags.UsageError(c, "--"+name+" needs --sandbox")
		}
	}
	var err error
	if s.Read, err = absPaths(c, "sandbox-read"); err != nil {
		return s, nil, err
	}
	writable, err := absPaths(c, "sandbox-write")
	if err != nil {
		return s, nil, err
	}
	return s, writable, s.Check()
}

// absPaths returns the paths of the repeatable flag --name made absolute
// (from the working directory). Errors: a path that cannot be made
// absolute (a usage error).
func absPaths(c *cli.Context, name string) ([]string, error) {
	var out []string
	for _, p := range c.StringSlice(name) {
		abs, err := filepath.Abs(p)
		if err != nil {
			return nil, cliflags.UsageError(c, fmt.Sprintf("--%s %s: %v", name, p, err))
		}
		out = append(out, abs)
	}
	return out, nil
}

// secretFlags are the operator's secrets and the plugins each is
// granted to: the only values a plugin's policy may hand its plugin
// ("secrets": {"VAR": "NAME"}).
func secretFlags() []cli.Flag {
	return []cli.Flag{
		&cli.StringSliceFlag{Name: "secret", Usage: "declare secret `NAME=env:VAR` (the host's variable VAR) or NAME=file:PATH (a file, trailing newlines removed), read at each plugin start (repeatable). " +
			"It reaches only the plugins --secret-for grants it to, when their NAME.policy.json names it (\"secrets\": {\"VAR\": \"NAME\"}): a policy of any other plugin naming it fails that plugin; OPENTOOL_* variables and the API keys file can never be secrets"},
		&cli.GenericFlag{Name: "secret-for", Value: &cliflags.Repeated{}, Usage: "grant the declared secret NAME to the plugins `NAME=PLUGIN,...` (exact plugin names, comma-separated; repeatable): only their NAME.policy.json may name it"},
		&cli.StringFlag{Name: "secrets-file", Usage: "declare the secrets of JSON `FILE` ({\"secrets\": {\"NAME\": {\"env\": \"VAR\" | \"file\": \"PATH\", \"plugins\": [\"PLUGIN\"]}}}; relative paths from the file's folder; \"plugins\" grants as --secret-for does), as --secret does"},
	}
}

// secretsConfig is decl.OperatorSecrets of --secret, --secret-for and
// --secrets-file (exit 2 for its errors).
func secretsConfig(c *cli.Context) (map[string]decl.Secret, error) {
	own := []string{c.String("api-keys-file"), os.Getenv("OPENTOOL_API_KEYS_FILE"), c.String("secrets-file")}
	out, err := decl.OperatorSecrets(c.StringSlice("secret"), c.Generic("secret-for").(*cliflags.Repeated).Values, c.String("secrets-file"), own)
	if err != nil {
		return nil, cli.Exit(err.Error(), 2)
	}
	return out, nil
}

// newLogger builds the host logger from --log-level and --log-json; logs go
// to stderr.
func newLogger(c *cli.Context) (hclog.Logger, error) {
	lvl := hclog.LevelFromString(c.String("log-level"))
	if lvl == hclog.NoLevel {
		return nil, cli.Exit(fmt.Sprintf("--log-level %q: want trace, debug, info, warn, error or off", c.String("log-level")), 2)
	}
	return hclog.New(&hclog.LoggerOptions{
		Name:       "opentool-host",
		Level:      lvl,
		JSONFormat: c.Bool("log-json"),
		Output:     os.Stderr,
		Color:      hclog.ColorOff,
	}), nil
}

// DirFlag returns --dir (-d, OPENTOOL_PLUGIN_DIR), the plugins folder:
// ./plugins by default when required, else no default.
func DirFlag(required bool) *cli.StringFlag {
	f := &cli.StringFlag{Name: "dir", Aliases: []string{"d"}, Usage: "plugins `DIR`ectory holding opentool-plugin-* executables", EnvVars: []string{"OPENTOOL_PLUGIN_DIR"}}
	if !required {
		return f
	}
	f.Value = "plugins"
	return f
}
