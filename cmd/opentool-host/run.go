package main

import (
	"context"
	"os"
	"os/signal"
	"path/filepath"
	"slices"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/opentool-host/opentool-host/cmd/opentool-host/internal/cliflags"
	"github.com/opentool-host/opentool-host/cmd/opentool-host/internal/hostflags"
	"github.com/opentool-host/opentool-host/cmd/opentool-host/internal/selfexec"
	"github.com/opentool-host/opentool-host/declared"
	"github.com/opentool-host/opentool-host/frontend/frontdoor"
	"github.com/opentool-host/opentool-host/frontend/httpguard"
	"github.com/opentool-host/opentool-host/frontend/mcpapi"
	"github.com/opentool-host/opentool-host/frontend/opentoolapi"
	"github.com/opentool-host/opentool-host/host/access"
	"github.com/opentool-host/opentool-host/host/core"
	"github.com/opentool-host/opentool-host/host/tasks"
	"github.com/opentool-host/opentool-host/internal/mcpsession"
	"github.com/opentool-host/opentool-host/internal/version"
)

// DefaultAddr is the reference OpenTool SDKs' default address, on loopback.
const DefaultAddr = "127.0.0.1:9627"

func runCommand() *cli.Command {
	flags := []cli.Flag{
		hostflags.DirFlag(true),
		&cli.StringFlag{Name: "addr", Value: DefaultAddr, Usage: "`HOST:PORT` to listen on (loopback by default)", EnvVars: []string{"OPENTOOL_ADDR"}},
		&cli.BoolFlag{Name: "watch", Value: true, Usage: "hot reload: watch --dir and start, replace or stop plugins as files change"},
		&cli.DurationFlag{Name: "drain-delay", Usage: "on SIGTERM, how long to go on serving new requests (each answered with Connection: close) after readiness (GET /health?ready=1) turns 503 \"draining\", so that load balancers and Kubernetes endpoints drop this replica before it stops listening (>= 0). Default 0: the host stops at once (the container image and manifests/ set 5s). SIGINT, or a second SIGTERM, skips what is left of it. " +
			"Kubernetes: terminationGracePeriodSeconds >= preStop sleep + drain-delay + shutdown-timeout + 5 s (plugins killed, exit)", Action: cliflags.NonNegative("drain-delay")},
		&cli.DurationFlag{Name: "shutdown-timeout", Value: 15 * time.Second, Usage: "on SIGINT/SIGTERM, after --drain-delay: longest wait for calls in flight and for plugins to stop (> 0); what is left then is killed", Action: cliflags.Positive("shutdown-timeout")},
		&cli.Int64Flag{Name: "max-body", Value: opentoolapi.DefaultMaxBodyBytes, Usage: "largest request body in `BYTES` (>= 1)", Action: cliflags.AtLeast[int64]("max-body", 1)},
		&cli.DurationFlag{Name: "read-timeout", Value: 30 * time.Second, Usage: "longest a client may take to send a request (headers and body); slower clients are cut off (> 0)", Action: cliflags.Positive("read-timeout")},
		&cli.DurationFlag{Name: "write-timeout", Value: httpguard.DefaultWriteTimeout, Usage: "longest a client may take to read one response or one stream frame (> 0)", Action: cliflags.Positive("write-timeout")},
		&cli.BoolFlag{Name: "mcp-stateless", Usage: "serve /mcp without sessions, for replicas behind a load balancer: any replica answers any request, and notifications/cancelled still cancels the call it names when it reaches the replica running it. " +
			"Without sessions, older clients get no tools/list_changed pushed (2026-07-28 clients get it over subscriptions/listen) and a server's sampling and elicitation requests cannot reach the client. Default: sessions (Mcp-Session-Id, a GET stream), every request of a session to this process"},
		&cli.BoolFlag{Name: "mcp-sessions", Hidden: true, Usage: "sessions are the default; kept so that older command lines still start"},
		&cli.StringFlag{Name: "metrics-addr", Usage: "also serve /metrics alone on `HOST:PORT`, without API keys (for a scraper on a private network); /metrics on --addr is always there, behind the keys"},
		&cli.StringFlag{Name: "audit-log", Usage: "append one JSON line per call to `FILE` (\"-\": stderr): time, key name, front end, function, plugin, duration, outcome, sizes; never argument or result values"},
		&cli.BoolFlag{Name: "locked", Usage: "enforce DIR/opentool.lock (write it with 'opentool-host lock'): refuse files that are not pinned or do not match, checked before every start; hold plugins whose function definitions changed until 'opentool-host lock --update NAME'"},
		&cli.BoolFlag{Name: "accept-definition-changes", Usage: "with --locked, serve changed function definitions at once (logged) instead of holding them"},
		&cli.StringSliceFlag{Name: "api-key", Usage: "accept `KEY` as \"Authorization: Bearer KEY\" (repeatable; env: comma-separated); none: no auth", EnvVars: []string{"OPENTOOL_API_KEYS"}},
		&cli.StringFlag{Name: "api-keys-file", Usage: "accept the keys of JSON `FILE` ({\"keys\":[{\"name\",\"key\"|\"sha256\",\"allow\":[GLOB|\"plugin:GLOB\"],\"rate\"}]}), each seeing and calling only what it allows; reloaded when it changes and on SIGHUP", EnvVars: []string{"OPENTOOL_API_KEYS_FILE"}},
		&cli.Int64Flag{Name: "max-result-memory", Value: core.DefaultMaxResultMemory, Usage: "most `BYTES` of results the host holds at once for /opentool/call and /otc/call responses not yet written (a slow reader keeps its result until it has read it), across every connection (>= 1); a call whose result would exceed it fails as busy", Action: cliflags.AtLeast[int64]("max-result-memory", 1)},
		&cli.IntFlag{Name: "max-batch", Value: mcpapi.DefaultMaxBatch, Usage: "most messages one POST to /mcp may carry as a JSON-RPC batch, `N` (>= 1); each takes a rate-limit token. Clients of MCP 2025-06-18 and later may send no batch", Action: cliflags.AtLeast("max-batch", 1)},
		&cli.IntFlag{Name: "max-streams", Value: frontdoor.DefaultMaxStreams, Usage: "most long-lived responses open at once, `N` (>= 1): /events, /opentool/streamCall, MCP GET streams and subscriptions/listen; more get 503", Action: cliflags.AtLeast("max-streams", 1)},
		&cli.IntFlag{Name: "max-streams-per-key", Value: frontdoor.DefaultMaxStreamsPerKey, Usage: "most of those one API key may hold open, `N` (>= 1); more get 429", Action: cliflags.AtLeast("max-streams-per-key", 1)},
		&cli.IntFlag{Name: "mcp-max-sessions", Value: mcpapi.DefaultMaxSessions, Usage: "most MCP sessions held at once (sessions are the default), `N` (>= 1); an initialize beyond it gets 503", Action: cliflags.AtLeast("mcp-max-sessions", 1)},
		&cli.IntFlag{Name: "mcp-max-sessions-per-key", Aliases: []string{"max-sessions-per-key"}, Value: mcpapi.DefaultMaxSessionsPerKey, Usage: "most of those one API key may hold at once, `N` (>= 1; every key, one that sees everything too), so that one key cannot take every session from the others: the default is a tenth of --mcp-max-sessions' default (an agent keeps one per connection). An initialize beyond it gets 429; without API keys only --mcp-max-sessions applies", Action: cliflags.AtLeast("mcp-max-sessions-per-key", 1)},
		&cli.DurationFlag{Name: "mcp-session-idle", Value: mcpapi.DefaultSessionIdle, Usage: "close an MCP session that has had no request for this long (> 0)", Action: cliflags.Positive("mcp-session-idle")},
		&cli.StringSliceFlag{Name: "allowed-host", Usage: "also accept `NAME` in the Host header (repeatable), e.g. a reverse proxy's or a Kubernetes Service's name. Always accepted: localhost, loopback addresses and the listen address (every address of this machine when listening on 0.0.0.0 or ::); any other Host gets 403, so that a web page cannot reach the host through DNS rebinding"},
		&cli.StringSliceFlag{Name: "allowed-origin", Usage: "also accept requests whose Origin header is `SCHEME://HOST[:PORT]` (repeatable), e.g. a web app that calls tools from the browser. Always accepted: no Origin, and the host's own origin; any other Origin gets 403"},
		&cli.StringFlag{Name: "task-store", Value: tasks.StoreMemory, Usage: "where the tasks of long calls are kept: `STORE` is memory (this process) or a Redis URL redis://[:PASSWORD@]HOST:PORT/DB (rediss:// for TLS) that every replica is given, so that any of them answers for a task; " +
			"the host does not start when Redis does not answer within 10 s", EnvVars: []string{"OPENTOOL_TASK_STORE"}, Action: taskStore},
		&cli.BoolFlag{Name: "insecure-no-auth", Usage: "serve without API keys although --addr is not loopback (e.g. behind a proxy that authenticates): anyone who reaches the port may call every tool. Without it, such an --addr needs --api-key or --api-keys-file"},
	}
	flags = hostflags.Flags("info", slices.Concat(flags, oauthFlags(), taskFlags(), toolSearchFlags(), codeModeFlags())...)
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
			"SIGTERM: readiness turns 503 \"draining\", new requests are served for --drain-delay (none by default), then the\n" +
			"listener closes, calls in flight finish (--shutdown-timeout) and every plugin stops. SIGINT does the same without the delay.\n" +
			"SIGHUP rescans --dir and reloads --api-keys-file.",
		Flags:  cliflags.Categorize(flags, serveCategories),
		Action: runAction,
	}
}

// serveCategories are the help's headings of the flags of run and mcp
// beside the host's (hostflags), by flag name; --dir, --addr and --watch
// come first, without one.
var serveCategories = map[string]string{
	"drain-delay": "Shutdown", "shutdown-timeout": "Shutdown",
	"max-body": "Listening", "read-timeout": "Listening", "write-timeout": "Listening", "max-result-memory": "Listening",
	"max-streams": "Listening", "max-streams-per-key": "Listening",
	"api-key": "Security", "api-keys-file": "Security", "insecure-no-auth": "Security", "allowed-host": "Security",
	"allowed-origin": "Security", "locked": "Security", "accept-definition-changes": "Security",
	"mcp-stateless": "MCP", "mcp-sessions": "MCP", "max-batch": "MCP", "mcp-max-sessions": "MCP",
	"mcp-max-sessions-per-key": "MCP", "mcp-session-idle": "MCP",
	"metrics-addr": "Observability", "audit-log": "Observability",
	"task-store": "Tasks", "task-after": "Tasks", "task-ttl": "Tasks", "task-lease": "Tasks",
	"task-max-per-key": "Tasks", "task-max-bytes-per-key": "Tasks",
	"tool-search": "Tool search", "tool-search-threshold": "Tool search",
	"oauth-issuer": "OAuth", "oauth-resource": "OAuth", "oauth-introspection": "OAuth",
	"oauth-introspection-client": "OAuth", "oauth-introspection-secret-file": "OAuth", "oauth-token-key": "OAuth",
	"code-mode": "Code mode", "code-runner": "Code mode", "code-timeout": "Code mode", "code-max-calls": "Code mode",
}

// runAction turns run's flags into the front door's configuration
// (frontdoor.Config, which holds the host's) and serves until a signal.
func runAction(c *cli.Context) error {
	hcfg, err := hostflags.Config(c)
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
		return cliflags.UsageError(c, "--mcp-stateless and --mcp-sessions contradict each other: sessions are the default, --mcp-stateless turns them off")
	}
	keys, err := apiKeys(c)
	if err != nil {
		return err
	}
	oauthCfg, err := oauthConfig(c, hcfg.Secrets)
	if err != nil {
		return err
	}
	var served atomic.Pointer[frontdoor.Server]
	reg, sealed, err := logins(c, hcfg, &served)
	if err != nil {
		return err
	}
	dopts := declared.Options{Registry: reg, Logins: reg}
	if sealed {
		dopts.Tokens = reg.Store() // per-user credentials need tokens kept sealed
	}
	hcfg.Declared = declared.ServeWith(dopts)
	// Signals are caught from here on: one that arrives while the
	// plugins start waits in sigs for Serve (before, SIGINT right after
	// "serving" could kill the process with its default action).
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP)
	srv, err := frontdoor.New(frontdoor.Config{
		Host: hcfg, Addr: c.String("addr"), Version: version.Version,
		APIKeys: keys, APIKeysFile: c.String("api-keys-file"), InsecureNoAuth: c.Bool("insecure-no-auth"), OAuth: oauthCfg,
		AllowedHosts: c.StringSlice("allowed-host"), AllowedOrigins: c.StringSlice("allowed-origin"),
		MaxBodyBytes: c.Int64("max-body"), ReadTimeout: c.Duration("read-timeout"), WriteTimeout: c.Duration("write-timeout"),
		MaxStreams: c.Int("max-streams"), MaxStreamsPerKey: c.Int("max-streams-per-key"),
		MCP: mcpapi.HTTPOptions{Sessions: !c.Bool("mcp-stateless"), MaxBatch: c.Int("max-batch"),
			MaxSessions: c.Int("mcp-max-sessions"), MaxSessionsPerKey: c.Int("mcp-max-sessions-per-key"), SessionIdle: c.Duration("mcp-session-idle")},
		MetricsAddr: c.String("metrics-addr"), AuditLog: c.String("audit-log"),
		DrainDelay: c.Duration("drain-delay"), ShutdownTimeout: c.Duration("shutdown-timeout"),
		TaskStore: c.String("task-store"),
		Tasks:     taskConfig(c),
		// The start's pages of the program go back to the system (about
		// 9.5 MiB of RSS, docs/performance.md "Memory").
		TrimProgram: true,
		Logins:      reg,
	})
	if err != nil {
		return exitError(err)
	}
	served.Store(srv)
	return exitError(srv.Run(sigs))
}

// taskStore is --task-store's Action: tasks.CheckStore, without
// connecting.
func taskStore(c *cli.Context, v string) error {
	if err := tasks.CheckStore(v); err != nil {
		return cliflags.UsageError(c, "invalid value for --task-store: "+err.Error())
	}
	return nil
}

// apiKeys returns the keys of --api-key / OPENTOOL_API_KEYS
// (access.TrimKeys); an empty OPENTOOL_API_KEYS means no keys. Errors
// (exit 2): keys given all blank (--api-key "", OPENTOOL_API_KEYS=" , ").
func apiKeys(c *cli.Context) ([]string, error) {
	raw := c.StringSlice("api-key")
	if env, ok := os.LookupEnv("OPENTOOL_API_KEYS"); ok && env == "" && len(raw) == 1 && raw[0] == "" {
		return nil, nil // OPENTOOL_API_KEYS= (empty): no keys
	}
	keys, err := access.TrimKeys(raw)
	if err != nil {
		return nil, cli.Exit("--api-key / OPENTOOL_API_KEYS: "+err.Error()+"; give a non-empty key or leave it unset to turn auth off", 2)
	}
	return keys, nil
}

// taskFlags are the task flags of run and mcp (run adds --task-store).
func taskFlags() []cli.Flag {
	return []cli.Flag{
		&cli.DurationFlag{Name: "task-after", Value: tasks.DefaultAfter, Usage: "how long a call whose client allows a task (Prefer: respond-async on /opentool/call; on MCP, /mcp or stdio, a tools/call whose _meta declares the MCP Tasks extension) runs before it is answered with a task to poll instead of its result (>= 0; 0: at once)", Action: cliflags.NonNegative("task-after")},
		&cli.DurationFlag{Name: "task-ttl", Value: tasks.DefaultTTL, Usage: "how long a task and its result are kept after it was created (> 0)", Action: cliflags.Positive("task-ttl")},
		&cli.DurationFlag{Name: "task-lease", Value: tasks.DefaultLease, Usage: "how long a task running on a replica that stopped renewing it (killed, cut off from the store) stays working before it is failed; renewed every third of it, which is also how soon a cancel from another replica reaches the call (>= 100ms)", Action: cliflags.AtLeastDuration("task-lease", 100*time.Millisecond)},
		&cli.IntFlag{Name: "task-max-per-key", Value: tasks.DefaultMaxPerOwner, Usage: "most tasks one API key (over stdio: the client) holds until they expire, `N` (>= 1); beyond it, a call that allows a task is answered when it ends", Action: cliflags.AtLeast("task-max-per-key", 1)},
		&cli.Int64Flag{Name: "task-max-bytes-per-key", Value: tasks.DefaultMaxBytesPerOwner, Usage: "most `BYTES` of results one API key's tasks hold until they expire (>= 1); beyond it, as for --task-max-per-key", Action: cliflags.AtLeast[int64]("task-max-bytes-per-key", 1)},
	}
}

// taskConfig is the task manager's configuration of taskFlags.
func taskConfig(c *cli.Context) tasks.Config {
	return tasks.Config{After: c.Duration("task-after"), TTL: c.Duration("task-ttl"), Lease: c.Duration("task-lease"),
		MaxPerOwner: c.Int("task-max-per-key"), MaxBytesPerOwner: c.Int64("task-max-bytes-per-key")}
}

// toolSearchFlags are the tool search flags of run and mcp.
func toolSearchFlags() []cli.Flag {
	return []cli.Flag{
		&cli.BoolFlag{Name: "tool-search", Usage: "serve two more functions on every front end (MCP, OpenTool, OTC): search_tools (BM25 over the names, descriptions and parameters of the functions the key may call) and call_tool (call any of them by name), for clients whose context window cannot hold the whole catalog"},
		&cli.IntFlag{Name: "tool-search-threshold", Usage: "with --tool-search, every listing (tools/list, /opentool/load and export, /otc/tools) gives a key that may call more than `N` functions only search_tools and call_tool (0: every function is listed)", Action: cliflags.AtLeast("tool-search-threshold", 0)},
	}
}

// toolSearch puts the tool search flags into cfg (core.Config.ToolSearch,
// ToolSearchThreshold). Errors (exit 2): a threshold without
// --tool-search.
func toolSearch(c *cli.Context, cfg *core.Config) error {
	if c.Int("tool-search-threshold") > 0 && !c.Bool("tool-search") {
		return cliflags.UsageError(c, "--tool-search-threshold needs --tool-search (the functions it would list instead)")
	}
	cfg.ToolSearch, cfg.ToolSearchThreshold = c.Bool("tool-search"), c.Int("tool-search-threshold")
	return codeMode(c, cfg)
}

// codeModeFlags are the code mode flags of run and mcp (host/codemode.go).
func codeModeFlags() []cli.Flag {
	return []cli.Flag{
		&cli.BoolFlag{Name: "code-mode", Usage: "serve one more function on every front end, run_code: a JavaScript program that calls the caller's tools (each call checked, limited and audited as the caller's own), run in a sandboxed code runner process, returning one JSON value"},
		&cli.StringFlag{Name: "code-runner", Usage: "the code runner's binary for --code-mode (default: opentool-host-coderunner beside this executable)"},
		&cli.DurationFlag{Name: "code-timeout", Usage: "with --code-mode, a program's wall time (0: 30s)", Action: cliflags.AtLeastDuration("code-timeout", 0)},
		&cli.IntFlag{Name: "code-max-calls", Usage: "with --code-mode, the tool calls one program may make (0: 1000)", Action: cliflags.AtLeast("code-max-calls", 0)},
	}
}

// codeMode puts the code mode flags into cfg (core.Config.CodeMode,
// CodeRunner, CodeTimeout, CodeMaxCalls). Errors (exit 2): a code mode
// flag without --code-mode, no code runner.
func codeMode(c *cli.Context, cfg *core.Config) error {
	if !c.Bool("code-mode") {
		for _, name := range []string{"code-runner", "code-timeout", "code-max-calls"} {
			if c.IsSet(name) {
				return cliflags.UsageError(c, "--"+name+" needs --code-mode")
			}
		}
		return nil
	}
	cfg.CodeMode, cfg.CodeRunner = true, c.String("code-runner")
	cfg.CodeTimeout, cfg.CodeMaxCalls = c.Duration("code-timeout"), c.Int("code-max-calls")
	if cfg.CodeRunner == "" {
		cfg.CodeRunner = selfexec.CodeRunnerPath()
	}
	if cfg.CodeRunner == "" {
		return cliflags.UsageError(c, "--code-mode needs the code runner: opentool-host-coderunner beside this executable (make build puts it there), or --code-runner PATH")
	}
	abs, err := filepath.Abs(cfg.CodeRunner)
	if err != nil {
		return cliflags.UsageError(c, "--code-runner: "+err.Error())
	}
	cfg.CodeRunner = abs
	return nil
}

func mcpCommand() *cli.Command {
	flags := []cli.Flag{
		hostflags.DirFlag(true),
		&cli.BoolFlag{Name: "watch", Value: true, Usage: "hot reload: watch --dir and start, replace or stop plugins as files change (the client gets tools/list_changed)"},
		&cli.DurationFlag{Name: "shutdown-timeout", Value: 15 * time.Second, Usage: "at the end of input or on SIGINT/SIGTERM, longest wait for calls in flight (> 0)", Action: cliflags.Positive("shutdown-timeout")},
	}
	flags = hostflags.Flags("warn", slices.Concat(flags, taskFlags(), toolSearchFlags(), codeModeFlags())...)
	return &cli.Command{
		Name:      "mcp",
		Usage:     "serve every plugin in --dir to one MCP client over stdin/stdout",
		UsageText: "opentool-host mcp --dir plugins [--log-level warn] [--log-json]",
		Description: "For the config of a desktop MCP client (Claude Desktop, Cursor, VS Code): the client starts\n" +
			"this command and speaks MCP (newline-delimited JSON-RPC) on its stdin and stdout. stdout carries\n" +
			"nothing but MCP; logs go to stderr. Each function is a tool; a streaming function's items are\n" +
			"collected into {\"items\":[...]}, with a progress notification per item when asked for.\n" +
			"MCP tasks are served as on /mcp: core tasks of 2025-11-25 (params.task, tasks/get|result|list|cancel,\n" +
			"notifications/tasks/status) and the Tasks extension (after --task-after), kept in memory for --task-ttl.\n" +
			"The host stops (calls in flight drained, every plugin stopped) when stdin ends or on SIGINT/SIGTERM.",
		Flags:  cliflags.Categorize(flags, serveCategories),
		Action: mcpAction,
	}
}

func mcpAction(c *cli.Context) error {
	cfg, err := hostflags.Config(c) // its logger writes to stderr
	if err != nil {
		return err
	}
	cfg.Watch = c.Bool("watch")
	if err := toolSearch(c, &cfg); err != nil {
		return err
	}
	sole := &mcpsession.Sole{} // the one client: the servers' requests outside calls go to it
	cfg.Declared = declared.ServeFor(sole)
	sig, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	return exitError(frontdoor.ServeStdio(sig, frontdoor.StdioConfig{Host: cfg, ShutdownTimeout: c.Duration("shutdown-timeout"), Tasks: taskConfig(c), Sole: sole}))
}
