package main

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/signal"
	"os/user"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/opentool-host/opentool-host/frontdoor"
	"github.com/opentool-host/opentool-host/host"
	"github.com/opentool-host/opentool-host/httpapi"
	"github.com/opentool-host/opentool-host/internal/httpguard"
	"github.com/opentool-host/opentool-host/internal/version"
	"github.com/opentool-host/opentool-host/mcpapi"
	"github.com/opentool-host/opentool-host/tasks"
)

// DefaultAddr is the reference OpenTool SDKs' default address, on loopback.
const DefaultAddr = "127.0.0.1:9627"

func hostFlags() []cli.Flag {
	return append([]cli.Flag{
		&cli.DurationFlag{Name: "call-timeout", Value: 60 * time.Second, Usage: "longest a call may run before it fails (> 0)", Action: positive("call-timeout")},
		&cli.IntFlag{Name: "max-concurrency", Value: 64, Usage: "`N` calls one plugin may run at once (>= 1); more wait in its queue until their deadline", Action: atLeast("max-concurrency", 1)},
		&cli.IntFlag{Name: "max-queue", Value: 0, Usage: "`N` calls that may wait for one plugin beyond --max-concurrency (>= 0); more fail at once as busy", Action: atLeast("max-queue", 0), DefaultText: "0, meaning 4 x --max-concurrency"},
		&cli.Int64Flag{Name: "max-result", Value: host.DefaultMaxResultBytes, Usage: "largest result (or streamed item) a plugin may return, in `BYTES` (>= 1); larger ones fail the call", Action: atLeast[int64]("max-result", 1)},
		&cli.DurationFlag{Name: "start-timeout", Value: 10 * time.Second, Usage: "longest a plugin may take to handshake and load (> 0)", Action: positive("start-timeout")},
		&cli.StringSliceFlag{Name: "plugin-env", Usage: "also pass the host's environment variable `NAME` to every plugin (repeatable); by default a plugin gets only an allow-list (PATH, HOME, LANG, LC_*, TZ, ..., OPENTOOL_<PLUGIN>_*)"},
		&cli.StringSliceFlag{Name: "mcp-config", Usage: "also run the MCP servers of desktop client config `FILE` as it is (repeatable): Claude Desktop's claude_desktop_config.json, Claude Code's .mcp.json, Cursor's or VS Code's mcp.json, Windsurf's mcp_config.json. " +
			"Being the operator's file, its ${env:VAR} and ${VAR} read the host's environment and its envFile may be any file, which a drop-in NAME.mcp.json of --dir may not do. A bad entry fails alone; re-read on SIGHUP"},
		&cli.BoolFlag{Name: "prefix-collisions", Usage: "serve a function whose name another plugin already serves as PLUGIN__NAME instead of refusing it"},
		&cli.StringFlag{Name: "state-dir", Usage: "parent of the host's state folder (binary copies, sockets); default $TMPDIR/opentool-host"},
		&cli.StringFlag{Name: "plugin-user", Usage: "run every plugin process as `USER` (a name or a uid; its primary group) instead of the host's own user; the host must run as root. Recommended whenever the host runs as root: a root plugin without --sandbox is trusted"},
		&cli.BoolFlag{Name: "no-cgroups", Usage: "run plugins without a cgroup each, even where the host could make them: process groups and the keeper still take every plugin down with the host, but a descendant that leaves its process group (setsid) is then not killed, and policies asking for cpu_percent or processes limits fail"},
		&cli.StringFlag{Name: "plugin-transport", Value: "auto", Usage: "how calls reach plugins: `auto` (the data channel where a plugin offers it, as the Go SDK does; gRPC otherwise) or grpc (always gRPC)", EnvVars: []string{host.TransportEnv}, Action: oneOf("plugin-transport", "auto", "grpc")},
	}, append(sandboxFlags(), secretFlags()...)...)
}

func hostConfig(c *cli.Context) (host.Config, error) {
	log, err := newLogger(c)
	if err != nil {
		return host.Config{}, err
	}
	spec, err := sandboxSpec(c)
	if err != nil {
		return host.Config{}, err
	}
	secrets, err := secretsConfig(c)
	if err != nil {
		return host.Config{}, err
	}
	pluginUser, err := pluginUserConfig(c.String("plugin-user"))
	if err != nil {
		return host.Config{}, err
	}
	var mcpConfigs []string
	for _, f := range c.StringSlice("mcp-config") {
		abs, err := filepath.Abs(f)
		if err != nil {
			return host.Config{}, cli.Exit(fmt.Sprintf("--mcp-config %s: %v", f, err), 2)
		}
		mcpConfigs = append(mcpConfigs, abs)
	}
	return host.Config{
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
		Adapter:          adapterArgv(),
		Launcher:         launcherArgv(),
		Keeper:           keeperArgv(),
		Sandbox:          spec,
		NoDataChannel:    c.String("plugin-transport") == "grpc",
		Secrets:          secrets,
		PluginUser:       pluginUser,
		NoCgroups:        c.Bool("no-cgroups"),
		MCPConfigs:       mcpConfigs,
	}, nil
}

// pluginUserConfig resolves --plugin-user (a user name or a uid) to its
// uid and primary gid; nil for "". Errors (exit 2): an unknown user.
func pluginUserConfig(v string) (*syscall.Credential, error) {
	if v == "" {
		return nil, nil
	}
	u, err := user.Lookup(v)
	if err != nil {
		if u, err = user.LookupId(v); err != nil {
			if n, nerr := strconv.ParseUint(v, 10, 32); nerr == nil {
				return &syscall.Credential{Uid: uint32(n), Gid: uint32(n)}, nil // a uid without a passwd entry
			}
			return nil, cli.Exit(fmt.Sprintf("--plugin-user %s: no such user", v), 2)
		}
	}
	uid, _ := strconv.ParseUint(u.Uid, 10, 32)
	gid, _ := strconv.ParseUint(u.Gid, 10, 32)
	return &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}, nil
}

// newHost is host.New with a missing plugins folder explained: where it
// looked and how to choose another. Every command that starts a host
// uses it.
func newHost(cfg host.Config) (*host.Host, error) {
	h, err := host.New(cfg)
	if errors.Is(err, fs.ErrNotExist) && cfg.Dir != "" {
		if _, serr := os.Stat(cfg.Dir); errors.Is(serr, fs.ErrNotExist) {
			abs, _ := filepath.Abs(cfg.Dir)
			return nil, fmt.Errorf("plugins folder %s not found (looked for %s): --dir defaults to ./plugins in the working folder; give --dir PATH or create the folder", cfg.Dir, abs)
		}
	}
	return h, err
}

// oneOf is a flag Action that accepts only the given values.
func oneOf(name string, values ...string) func(*cli.Context, string) error {
	return func(_ *cli.Context, v string) error {
		if slices.Contains(values, v) {
			return nil
		}
		return fmt.Errorf("--%s must be one of %s, not %q", name, strings.Join(values, ", "), v)
	}
}

// adapterArgv is the command that runs one declared plugin (an MCP
// server, command tools): this binary, re-executed as "adapter"
// (host.Config.Adapter). Nil when the binary's path is unknown; declared
// plugins then fail with that reason.
func adapterArgv() []string {
	exe, err := os.Executable()
	if err != nil {
		return nil
	}
	return []string{exe, "adapter"}
}

func runCommand() *cli.Command {
	flags := []cli.Flag{
		dirFlag(true),
		&cli.StringFlag{Name: "addr", Value: DefaultAddr, Usage: "`HOST:PORT` to listen on (loopback by default)", EnvVars: []string{"OPENTOOL_ADDR"}},
		&cli.BoolFlag{Name: "watch", Value: true, Usage: "hot reload: watch --dir and start, replace or stop plugins as files change"},
		&cli.DurationFlag{Name: "drain-delay", Value: DefaultDrainDelay, Usage: "on SIGTERM, how long to go on serving new requests (each answered with Connection: close) after readiness (GET /health?ready=1) turns 503 \"draining\", so that load balancers and Kubernetes endpoints drop this replica before it stops listening (>= 0). SIGINT, or a second SIGTERM, skips what is left of it. " +
			"Kubernetes: terminationGracePeriodSeconds >= preStop sleep + drain-delay + shutdown-timeout + 5 s (plugins killed, exit)", Action: nonNegative("drain-delay")},
		&cli.DurationFlag{Name: "shutdown-timeout", Value: 15 * time.Second, Usage: "on SIGINT/SIGTERM, after --drain-delay: longest wait for calls in flight and for plugins to stop (> 0); what is left then is killed", Action: positive("shutdown-timeout")},
		&cli.Int64Flag{Name: "max-body", Value: httpapi.DefaultMaxBodyBytes, Usage: "largest request body in `BYTES` (>= 1)", Action: atLeast[int64]("max-body", 1)},
		&cli.DurationFlag{Name: "read-timeout", Value: 30 * time.Second, Usage: "longest a client may take to send a request (headers and body); slower clients are cut off (> 0)", Action: positive("read-timeout")},
		&cli.DurationFlag{Name: "write-timeout", Value: httpguard.DefaultWriteTimeout, Usage: "longest a client may take to read one response or one stream frame (> 0)", Action: positive("write-timeout")},
		&cli.BoolFlag{Name: "mcp-stateless", Usage: "serve /mcp without sessions, for replicas behind a load balancer: any replica answers any request, and notifications/cancelled still cancels the call it names when it reaches the replica running it. " +
			"Without sessions, older clients get no tools/list_changed pushed (2026-07-28 clients get it over subscriptions/listen) and a server's sampling and elicitation requests cannot reach the client. Default: sessions (Mcp-Session-Id, a GET stream), every request of a session to this process"},
		&cli.BoolFlag{Name: "mcp-sessions", Hidden: true, Usage: "sessions are the default; kept so that older command lines still start"},
		&cli.StringFlag{Name: "metrics-addr", Usage: "also serve /metrics alone on `HOST:PORT`, without API keys (for a scraper on a private network); /metrics on --addr is always there, behind the keys"},
		&cli.StringFlag{Name: "audit-log", Usage: "append one JSON line per call to `FILE` (\"-\": stderr): time, key name, front end, function, plugin, duration, outcome, sizes; never argument or result values"},
		&cli.BoolFlag{Name: "locked", Usage: "enforce DIR/opentool.lock (write it with 'opentool-host lock'): refuse files that are not pinned or do not match, checked before every start; hold plugins whose function definitions changed until 'opentool-host lock --update NAME'"},
		&cli.BoolFlag{Name: "accept-definition-changes", Usage: "with --locked, serve changed function definitions at once (logged) instead of holding them"},
		&cli.StringSliceFlag{Name: "api-key", Usage: "accept `KEY` as \"Authorization: Bearer KEY\" (repeatable; env: comma-separated); none: no auth", EnvVars: []string{"OPENTOOL_API_KEYS"}},
		&cli.StringFlag{Name: "api-keys-file", Usage: "accept the keys of JSON `FILE` ({\"keys\":[{\"name\",\"key\"|\"sha256\",\"allow\":[GLOB|\"plugin:GLOB\"],\"rate\"}]}), each seeing and calling only what it allows; reloaded when it changes and on SIGHUP", EnvVars: []string{"OPENTOOL_API_KEYS_FILE"}},
		&cli.Int64Flag{Name: "max-result-memory", Value: host.DefaultMaxResultMemory, Usage: "most `BYTES` of results the host holds at once for /opentool/call and /otc/call responses not yet written (a slow reader keeps its result until it has read it), across every connection (>= 1); a call whose result would exceed it fails as busy", Action: atLeast[int64]("max-result-memory", 1)},
		&cli.IntFlag{Name: "max-batch", Value: mcpapi.DefaultMaxBatch, Usage: "most messages one POST to /mcp may carry as a JSON-RPC batch, `N` (>= 1); each takes a rate-limit token. Clients of MCP 2025-06-18 and later may send no batch", Action: atLeast("max-batch", 1)},
		&cli.IntFlag{Name: "max-streams", Value: frontdoor.DefaultMaxStreams, Usage: "most long-lived responses open at once, `N` (>= 1): /events, /opentool/streamCall, MCP GET streams and subscriptions/listen; more get 503", Action: atLeast("max-streams", 1)},
		&cli.IntFlag{Name: "max-streams-per-key", Value: frontdoor.DefaultMaxStreamsPerKey, Usage: "most of those one API key may hold open, `N` (>= 1); more get 429", Action: atLeast("max-streams-per-key", 1)},
		&cli.IntFlag{Name: "mcp-max-sessions", Value: mcpapi.DefaultMaxSessions, Usage: "most MCP sessions held at once (sessions are the default), `N` (>= 1); an initialize beyond it gets 503", Action: atLeast("mcp-max-sessions", 1)},
		&cli.DurationFlag{Name: "mcp-session-idle", Value: mcpapi.DefaultSessionIdle, Usage: "close an MCP session that has had no request for this long (> 0)", Action: positive("mcp-session-idle")},
		&cli.StringSliceFlag{Name: "allowed-host", Usage: "also accept `NAME` in the Host header (repeatable), e.g. a reverse proxy's or a Kubernetes Service's name. Always accepted: localhost, loopback addresses and the listen address (every address of this machine when listening on 0.0.0.0 or ::); any other Host gets 403, so that a web page cannot reach the host through DNS rebinding"},
		&cli.StringSliceFlag{Name: "allowed-origin", Usage: "also accept requests whose Origin header is `SCHEME://HOST[:PORT]` (repeatable), e.g. a web app that calls tools from the browser. Always accepted: no Origin, and the host's own origin; any other Origin gets 403"},
		&cli.StringFlag{Name: "task-store", Value: tasks.StoreMemory, Usage: "where the tasks of long calls are kept: `STORE` is memory (this process) or a Redis URL redis://[:PASSWORD@]HOST:PORT/DB (rediss:// for TLS) that every replica is given, so that any of them answers for a task; " +
			"the host does not start when Redis does not answer within 10 s", EnvVars: []string{"OPENTOOL_TASK_STORE"}, Action: taskStore},
		&cli.DurationFlag{Name: "task-after", Value: tasks.DefaultAfter, Usage: "how long a call whose client allows a task (Prefer: respond-async on /opentool/call; on /mcp, a tools/call whose _meta declares the MCP Tasks extension) runs before it is answered with a task to poll instead of its result (>= 0; 0: at once)", Action: nonNegative("task-after")},
		&cli.DurationFlag{Name: "task-ttl", Value: tasks.DefaultTTL, Usage: "how long a task and its result are kept after it was created (> 0)", Action: positive("task-ttl")},
		&cli.DurationFlag{Name: "task-lease", Value: tasks.DefaultLease, Usage: "how long a task running on a replica that stopped renewing it (killed, cut off from the store) stays working before it is failed; renewed every third of it, which is also how soon a cancel from another replica reaches the call (>= 100ms)", Action: atLeastDuration("task-lease", 100*time.Millisecond)},
		&cli.IntFlag{Name: "task-max-per-key", Value: tasks.DefaultMaxPerOwner, Usage: "most tasks one API key holds until they expire, `N` (>= 1); beyond it, a call that allows a task is answered when it ends", Action: atLeast("task-max-per-key", 1)},
		&cli.Int64Flag{Name: "task-max-bytes-per-key", Value: tasks.DefaultMaxBytesPerOwner, Usage: "most `BYTES` of results one API key's tasks hold until they expire (>= 1); beyond it, as for --task-max-per-key", Action: atLeast[int64]("task-max-bytes-per-key", 1)},
		&cli.BoolFlag{Name: "insecure-no-auth", Usage: "serve without API keys although --addr is not loopback (e.g. behind a proxy that authenticates): anyone who reaches the port may call every tool. Without it, such an --addr needs --api-key or --api-keys-file"},
	}
	flags = append(flags, toolSearchFlags()...)
	flags = append(flags, hostFlags()...)
	flags = append(flags, logFlags("info")...)
	return &cli.Command{
		Name:      "run",
		Usage:     "start every plugin in --dir and serve their functions over HTTP",
		UsageText: "opentool-host run --dir plugins [--addr 127.0.0.1:9627] [--log-level info] [--log-json]",
		Description: "Serves GET /opentool/version, POST /opentool/call, POST /opentool/streamCall, GET /opentool/load and GET /health.\n" +
			"GET /opentool/export?format=openai|openai-chat|anthropic|opentool gives LLM API tool definitions;\n" +
			"a call sent with Prefer: respond-async that outlives --task-after is answered 202 with a task to poll at\n" +
			"GET /opentool/tasks/ID (DELETE cancels it), kept in --task-store for --task-ttl (on /mcp: the MCP Tasks extension);\n" +
			"GET /otc/health, GET /otc/tools and POST /otc/call serve the Open Tool Calling standard;\n" +
			"/mcp serves the Model Context Protocol (streamable HTTP).\n" +
			"GET / is a live status page (GET /events: lifecycle events as server-sent events; GET /status.json).\n" +
			"With --api-key (or OPENTOOL_API_KEYS), every route requires Authorization: Bearer KEY, but for the status page and\n" +
			"GET /health?ready=1 (readiness: 200 {\"status\":\"ready\"} when every plugin is ready or failed for good, else 503 \"starting\" or \"draining\").\n" +
			"An --addr beyond loopback needs API keys, or --insecure-no-auth.\n" +
			"SIGTERM: readiness turns 503 \"draining\", new requests are served for --drain-delay, then the listener closes,\n" +
			"calls in flight finish (--shutdown-timeout) and every plugin stops. SIGINT does the same without the delay.\n" +
			"SIGHUP rescans --dir and reloads --api-keys-file.",
		Flags:  flags,
		Action: runAction,
	}
}

// runAction turns run's flags into the front door's configuration
// (frontdoor.Config, which holds the host's) and serves until a signal.
func runAction(c *cli.Context) error {
	hcfg, err := hostConfig(c)
	if err != nil {
		return err
	}
	hcfg.Watch = c.Bool("watch")
	hcfg.MaxResultMemory = c.Int64("max-result-memory")
	hcfg.Locked, hcfg.AcceptDefinitionChanges = c.Bool("locked"), c.Bool("accept-definition-changes")
	if err := toolSearch(c, &hcfg); err != nil {
		return err
	}
	if c.Bool("mcp-stateless") && c.Bool("mcp-sessions") {
		return usageError(c, "--mcp-stateless and --mcp-sessions contradict each other: sessions are the default, --mcp-stateless turns them off")
	}
	keys, err := apiKeys(c)
	if err != nil {
		return err
	}
	// Signals are caught from here on: one that arrives while the
	// plugins start waits in sigs for Serve (before, SIGINT right after
	// "serving" could kill the process with its default action).
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP)
	srv, err := frontdoor.New(frontdoor.Config{
		Host: hcfg, NewHost: newHost, Addr: c.String("addr"), Version: version.Version,
		APIKeys: keys, APIKeysFile: c.String("api-keys-file"), InsecureNoAuth: c.Bool("insecure-no-auth"),
		AllowedHosts: c.StringSlice("allowed-host"), AllowedOrigins: c.StringSlice("allowed-origin"),
		MaxBodyBytes: c.Int64("max-body"), ReadTimeout: c.Duration("read-timeout"), WriteTimeout: c.Duration("write-timeout"),
		MaxStreams: c.Int("max-streams"), MaxStreamsPerKey: c.Int("max-streams-per-key"),
		MCP: mcpapi.HTTPOptions{Sessions: !c.Bool("mcp-stateless"), MaxBatch: c.Int("max-batch"),
			MaxSessions: c.Int("mcp-max-sessions"), SessionIdle: c.Duration("mcp-session-idle")},
		MetricsAddr: c.String("metrics-addr"), AuditLog: c.String("audit-log"),
		DrainDelay: c.Duration("drain-delay"), ShutdownTimeout: c.Duration("shutdown-timeout"),
		TaskStore: c.String("task-store"),
		Tasks: tasks.Config{After: c.Duration("task-after"), TTL: c.Duration("task-ttl"), Lease: c.Duration("task-lease"),
			MaxPerOwner: c.Int("task-max-per-key"), MaxBytesPerOwner: c.Int64("task-max-bytes-per-key")},
	})
	if err != nil {
		return exitError(err)
	}
	return exitError(srv.Run(sigs))
}

// exitError is err as the command's exit: status 2 for a refused
// configuration (frontdoor.ConfigError), 1 otherwise; nil for nil.
func exitError(err error) error {
	var ce *frontdoor.ConfigError
	switch {
	case err == nil:
		return nil
	case errors.As(err, &ce):
		return cli.Exit(err.Error(), 2)
	}
	return cli.Exit(err.Error(), 1)
}

// DefaultDrainDelay is --drain-delay's default: long enough for
// Kubernetes endpoints and kube-proxy (or a load balancer polling
// readiness every second or two) to drop the replica.
const DefaultDrainDelay = 5 * time.Second

// nonNegative is a flag Action refusing durations of --name below 0.
func nonNegative(name string) func(*cli.Context, time.Duration) error {
	return func(c *cli.Context, d time.Duration) error {
		if d < 0 {
			return usageError(c, fmt.Sprintf("invalid value %v for --%s: must be at least 0", d, name))
		}
		return nil
	}
}

// atLeastDuration is a flag Action refusing durations of --name below
// min.
func atLeastDuration(name string, min time.Duration) func(*cli.Context, time.Duration) error {
	return func(c *cli.Context, d time.Duration) error {
		if d < min {
			return usageError(c, fmt.Sprintf("invalid value %v for --%s: must be at least %v", d, name, min))
		}
		return nil
	}
}

// taskStore is --task-store's Action: tasks.CheckStore, without
// connecting.
func taskStore(c *cli.Context, v string) error {
	if err := tasks.CheckStore(v); err != nil {
		return usageError(c, "invalid value for --task-store: "+err.Error())
	}
	return nil
}

// apiKeys returns the keys of --api-key / OPENTOOL_API_KEYS, trimmed, with
// empty entries (e.g. a trailing comma) dropped. An empty
// OPENTOOL_API_KEYS means no keys; giving only blank keys (--api-key "",
// OPENTOOL_API_KEYS=" , ") is an error, so that auth is never silently off.
func apiKeys(c *cli.Context) ([]string, error) {
	raw := c.StringSlice("api-key")
	if env, ok := os.LookupEnv("OPENTOOL_API_KEYS"); ok && env == "" && len(raw) == 1 && raw[0] == "" {
		return nil, nil // OPENTOOL_API_KEYS= (empty): no keys
	}
	var keys []string
	for _, k := range raw {
		if k = strings.TrimSpace(k); k != "" {
			keys = append(keys, k)
		}
	}
	if len(raw) > 0 && len(keys) == 0 {
		return nil, cli.Exit("--api-key / OPENTOOL_API_KEYS: every key is empty; give a non-empty key or leave it unset to turn auth off", 2)
	}
	return keys, nil
}

// toolSearchFlags are the tool search flags of run and mcp.
func toolSearchFlags() []cli.Flag {
	return []cli.Flag{
		&cli.BoolFlag{Name: "tool-search", Usage: "serve two more functions on every front end (MCP, OpenTool, OTC): search_tools (BM25 over the names, descriptions and parameters of the functions the key may call) and call_tool (call any of them by name), for clients whose context window cannot hold the whole catalog"},
		&cli.IntFlag{Name: "tool-search-threshold", Usage: "with --tool-search, every listing (tools/list, /opentool/load and export, /otc/tools) gives a key that may call more than `N` functions only search_tools and call_tool (0: every function is listed)", Action: atLeast("tool-search-threshold", 0)},
	}
}

// toolSearch puts the tool search flags into cfg (host.Config.ToolSearch,
// ToolSearchThreshold). Errors (exit 2): a threshold without
// --tool-search.
func toolSearch(c *cli.Context, cfg *host.Config) error {
	if c.Int("tool-search-threshold") > 0 && !c.Bool("tool-search") {
		return usageError(c, "--tool-search-threshold needs --tool-search (the functions it would list instead)")
	}
	cfg.ToolSearch, cfg.ToolSearchThreshold = c.Bool("tool-search"), c.Int("tool-search-threshold")
	return nil
}
