package frontdoor

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"net"
	"net/http"
	"os"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/opentool-host/opentool-host/declared/oauthlogin"
	"github.com/opentool-host/opentool-host/frontend/audit"
	"github.com/opentool-host/opentool-host/frontend/httpguard"
	"github.com/opentool-host/opentool-host/frontend/mcpapi"
	"github.com/opentool-host/opentool-host/frontend/metrics"
	"github.com/opentool-host/opentool-host/frontend/opentoolapi"
	"github.com/opentool-host/opentool-host/frontend/otc"
	"github.com/opentool-host/opentool-host/frontend/route"
	"github.com/opentool-host/opentool-host/frontend/statusui"
	"github.com/opentool-host/opentool-host/host"
	"github.com/opentool-host/opentool-host/host/access"
	"github.com/opentool-host/opentool-host/host/core"
	"github.com/opentool-host/opentool-host/host/tasks"
)

// Config is everything between the socket and host.Call: what `opentool-host
// run` turns its flags into. Zero values are the packages' defaults
// unless said otherwise.
type Config struct {
	// Host is the host's configuration; OnCall is set by the server
	// (metrics, then the audit log).
	Host core.Config
	// Addr is the HOST:PORT to listen on.
	Addr string
	// Version is the host's version, as /opentool/version reports it.
	Version string

	// APIKeys are the keys of --api-key (none and no APIKeysFile: no
	// authentication, which only a loopback Addr or InsecureNoAuth
	// allows); APIKeysFile is --api-keys-file (access.Config.File).
	APIKeys     []string
	APIKeysFile string
	// OAuth also accepts OAuth access tokens (OAuthConfig).
	OAuth OAuthConfig
	// InsecureNoAuth allows serving without keys beyond loopback.
	InsecureNoAuth bool
	// AllowedHosts and AllowedOrigins extend the request guard
	// (httpguard.RequestGuard).
	AllowedHosts, AllowedOrigins []string

	// MaxBodyBytes caps a request body (bytes); ReadTimeout bounds reading
	// a request, WriteTimeout writing one response or stream frame.
	MaxBodyBytes              int64
	ReadTimeout, WriteTimeout time.Duration
	// MaxStreams and MaxStreamsPerKey cap the open streams (Streams).
	MaxStreams, MaxStreamsPerKey int
	// MCP is /mcp's configuration (sessions, batches; MaxBodyBytes and
	// WriteTimeout are taken from above).
	MCP mcpapi.HTTPOptions
	// MetricsAddr, when set, also serves /metrics alone there (no keys,
	// behind the request guard).
	MetricsAddr string
	// AuditLog, when set, is the audit log's file ("-": stderr).
	AuditLog string

	// DrainDelay is how long to go on serving after SIGTERM with readiness
	// at 503 "draining" (0: none, the listener closes at once; SIGINT
	// skips it); ShutdownTimeout bounds the wait for calls in flight and
	// plugins after it.
	DrainDelay, ShutdownTimeout time.Duration

	// TaskStore is where the tasks of long calls are kept (--task-store,
	// tasks.OpenStore): "" or "memory" for this process's memory, or a
	// Redis URL redis://[:PASSWORD@]HOST:PORT/DB (rediss:// for TLS) that
	// replicas share, so that any of them answers for a task.
	TaskStore string
	// Tasks configures the task manager, one per server, shared by the
	// front ends (--task-after, --task-ttl, --task-lease,
	// --task-max-per-key, --task-max-bytes-per-key); NewFront sets its
	// Store (from TaskStore), Logger and, when empty, Replica (this
	// machine's name and the process id). Zero fields take the tasks
	// package's defaults, except After: zero turns every call that allows
	// a task into one at once (run's default is tasks.DefaultAfter).
	Tasks tasks.Config
	// TrimProgram gives back, once the plugins have started and before
	// readiness turns ready, the resident pages of this process's program
	// file that the start read (memtrim.Program: about 9.5 MiB of the
	// host's RSS; each page serving needs is read again at its first
	// use). run sets it; in-process servers (tests, benchmarks) leave it
	// false, so that their test binary's pages stay.
	TrimProgram bool

	// Logins, when set, serves the login step of the servers declared by
	// URL with the authorization code grant (loginRoutes): the public
	// oauthlogin.CallbackPath and the CLI's /oauth/login/{server} and
	// /oauth/status. Host.Declared must be declared.ServeWith the same
	// registry.
	Logins *oauthlogin.Registry
}

// ConfigError is a refusal of the configuration itself (an exposure
// without keys, a bad --allowed-origin, a bad keys file): the command
// line exits with status 2 for it, 1 for anything else.
type ConfigError struct{ Err error }

// Error implements error.
func (e *ConfigError) Error() string { return e.Err.Error() }

// Unwrap returns the cause.
func (e *ConfigError) Unwrap() error { return e.Err }

// Server is the host behind its front door: provisioned by New, started
// by Start, run until a signal by Serve. Whatever New or Start set up is
// undone in one place (Server.unwind) when a later step fails.
type Server struct {
	cfg   Config
	log   hclog.Logger
	ln    net.Listener
	h     *host.Host
	guard *access.Guard
	obs   *observers
	ready *Readiness
	srv   *http.Server
	errc  chan error // the HTTP server's end (Start serves)
	// hostUp is set once the host's start has succeeded (Start's last
	// steps remain): a signal from then on drains, as one while serving.
	hostUp atomic.Bool
	fresh  *freshConns
	ctx    context.Context
	cancel context.CancelFunc
	// undo runs in reverse order on failure and after Serve.
	undo []func()
}

// New provisions the server: the listener (its errors say when the port
// is in use), the keys, the exposure check, the host (not started), the
// audit log and the metrics. Errors: *ConfigError for a refused
// configuration, others for what could not be set up; nothing is left
// open.
func New(cfg Config) (_ *Server, err error) {
	ctx, cancel := context.WithCancel(context.Background())
	s := &Server{cfg: cfg, log: cfg.Host.Logger, obs: &observers{}, ctx: ctx, cancel: cancel}
	if s.log == nil {
		s.log = hclog.NewNullLogger()
	}
	s.undo = append(s.undo, cancel)
	defer func() {
		if err != nil {
			s.unwind()
		}
	}()
	if cfg.AuditLog != "" {
		if s.obs.audit, err = audit.Open(cfg.AuditLog); err != nil {
			return nil, fmt.Errorf("audit log: %w", err)
		}
		s.undo = append(s.undo, func() { _ = s.obs.audit.Close() })
	}
	if s.ln, err = net.Listen("tcp", cfg.Addr); err != nil {
		if errors.Is(err, syscall.EADDRINUSE) {
			return nil, fmt.Errorf("listen: %s is in use by another process: stop it, or serve on another address with --addr HOST:PORT (make run ADDR=HOST:PORT)", cfg.Addr)
		}
		return nil, fmt.Errorf("listen: %w", err)
	}
	s.undo = append(s.undo, func() { _ = s.ln.Close() })
	verifier, err := cfg.OAuth.verifier(s.ln.Addr())
	if err != nil {
		return nil, &ConfigError{err}
	}
	s.guard, err = access.New(access.Config{Keys: cfg.APIKeys, File: cfg.APIKeysFile, Logger: s.log.Named("access"), OAuth: verifier,
		Tag: func(ctx context.Context, name string) context.Context {
			return core.WithCaller(ctx, core.Caller{Key: name})
		}})
	if err != nil {
		return nil, &ConfigError{err}
	}
	if err := exposure(s.ln.Addr(), s.guard.Enabled(), cfg.InsecureNoAuth); err != nil {
		return nil, &ConfigError{fmt.Errorf("--addr %s: %w", cfg.Addr, err)}
	}
	if !s.guard.Enabled() && !isLoopback(s.ln.Addr()) {
		s.log.Warn("serving without API keys beyond loopback (--insecure-no-auth): anyone who reaches this port may call every tool", "addr", s.ln.Addr().String())
	}
	hcfg := cfg.Host
	hcfg.OnCall = s.obs.observe
	if s.h, err = host.New(hcfg); err != nil {
		return nil, err
	}
	s.undo = append(s.undo, func() { _ = s.h.Close(context.Background()) })
	s.obs.metrics = metrics.New(s.h) // before Start: no call is observed before it is set
	s.undo = append(s.undo, s.obs.metrics.Close)
	if cfg.MetricsAddr != "" {
		if err := serveMetrics(ctx, cfg.MetricsAddr, s.obs.metrics, cfg.AllowedHosts, s.log.Named("metrics")); err != nil {
			return nil, fmt.Errorf("--metrics-addr: %w", err)
		}
	}
	return s, nil
}

// Addr is the address the server listens on.
func (s *Server) Addr() net.Addr { return s.ln.Addr() }

// Rescan rescans the host's plugins folder (host.Host.Rescan): a login
// that put a token has its server connect at once. Before Start it does
// nothing.
func (s *Server) Rescan(ctx context.Context) error {
	if !s.hostUp.Load() {
		return nil
	}
	return s.h.Rescan(ctx)
}

// Start serves at once and then starts every plugin (host.Host.Start):
// the listener answers while the plugins come up, readiness says
// "starting" until they are (or failed), and a call to a function of a
// plugin still starting waits for it. Errors: as New's, or the host's
// Start; the server is then unwound.
func (s *Server) Start() (err error) {
	defer func() {
		if err != nil {
			s.unwind()
		}
	}()
	started := time.Now()
	front, err := NewFront(s.ctx, s.h, s.ln.Addr(), s.guard, s.obs.metrics, s.cfg)
	if err != nil {
		return err
	}
	// After the host's drain (Serve's shutdown) and before its close: the
	// calls of tasks run on this replica have ended or are cancelled, and
	// their outcome is stored.
	s.undo = append(s.undo, front.Close)
	s.ready = front.Readiness
	stopTracing, err := setupTracing(s.ctx)
	if err != nil {
		return err
	}
	s.undo = append(s.undo, func() { _ = stopTracing(context.Background()) })
	s.fresh = newFreshConns()
	s.srv = &http.Server{
		Handler:           front.Handler,
		ReadHeaderTimeout: 10 * time.Second,
		// A request body must arrive within ReadTimeout: a client that
		// trickles it is cut off (the response has its own per-write
		// deadline, httpguard.SetWriteDeadline).
		ReadTimeout:    s.cfg.ReadTimeout,
		IdleTimeout:    120 * time.Second,
		MaxHeaderBytes: 64 << 10,
		ConnState:      s.fresh.track,
	}
	for _, f := range front.OnShutdown {
		s.srv.RegisterOnShutdown(f)
	}
	s.ready.SetStarting(true)
	s.errc = make(chan error, 1)
	go func() { s.errc <- s.srv.Serve(s.ln) }()
	s.undo = append(s.undo, func() { _ = s.srv.Close() })
	s.log.Info("listening; starting plugins", "url", "http://"+s.ln.Addr().String()+opentoolapi.BasePath)
	if err := s.h.Start(s.ctx); err != nil {
		return err
	}
	s.hostUp.Store(true)
	front.Started()
	if s.cfg.TrimProgram {
		s.trimProgram()
	}
	s.ready.SetStarting(false)
	served := 0
	for _, p := range s.h.Plugins() {
		if p.State.Serving() {
			served++
		}
	}
	s.log.Info("serving", "url", "http://"+s.ln.Addr().String()+opentoolapi.BasePath, "api_keys", len(s.guard.Names()),
		"key_names", strings.Join(s.guard.Names(), ","), "plugins", served, "functions", len(s.h.Functions()),
		"startup_ms", time.Since(started).Milliseconds())
	return nil
}

// Front is every front end of a host behind the one chain: what Server
// serves, and what tests and benchmarks serve on listeners of their own.
type Front struct {
	// Handler is the host's whole HTTP handler (Handler).
	Handler http.Handler
	// Readiness answers readiness and drains.
	Readiness *Readiness
	// Started brings every front end's own view of the host's functions
	// (MCP's tool list, which follows the host asynchronously) up to
	// date; the server calls it once the plugins have started, before
	// readiness turns ready.
	Started func()
	// OnShutdown are for http.Server.RegisterOnShutdown: MCP streams that
	// only wait for notifications, and /events streams, end at once.
	OnShutdown []func()
	// Tasks runs long calls as tasks for the front ends (Config.Tasks).
	Tasks *tasks.Manager
	// Close closes what NewFront opened: the task manager (the calls of
	// tasks still running here are cancelled and their outcome stored)
	// and its store. Call it once the host has drained its calls.
	Close func()
}

// NewFront builds the front ends of h (OpenTool, OTC, MCP, the status
// page, /metrics from m) behind the chain (Chain, Handler) with c's
// limits, and the task manager they share (c.TaskStore, c.Tasks); listen
// is the listener's address (the request guard accepts it as a Host),
// guard the API keys. ctx ends MCP's list_changed follower and the keys
// file's watcher. Errors: *ConfigError for a request guard setting that
// is not valid (an --allowed-origin that is not an origin) or a task
// store that is not one; the task store not answering (a Redis server
// down, within 10 s). Call Front.Close when done.
func NewFront(ctx context.Context, h *host.Host, listen net.Addr, guard *access.Guard, m *metrics.Metrics, c Config) (_ *Front, err error) {
	log := c.Host.Logger
	if log == nil {
		log = hclog.NewNullLogger()
	}
	tm, closeTasks, err := newTasks(ctx, c, log.Named("tasks"))
	if err != nil {
		return nil, err
	}
	defer func() {
		if err != nil {
			closeTasks()
		}
	}()
	ready := &Readiness{Plugins: h.Plugins, WriteTimeout: c.WriteTimeout}
	api := opentoolapi.New(h, opentoolapi.Config{Version: c.Version, MaxBodyBytes: c.MaxBodyBytes, Logger: log.Named("http"), WriteTimeout: c.WriteTimeout, Ready: ready.Status, Tasks: tm})
	mcps := mcpapi.New(h, mcpapi.Config{MaxResultBytes: c.Host.MaxResultBytes, Logger: log.Named("mcp"), Tasks: tm, KeyCount: guard.Count})
	go mcps.Follow(ctx)
	_ = guard.Watch(ctx) // logs its own failure; SIGHUP still reloads
	ui := statusui.New(h, statusui.Config{Version: c.Version, WriteTimeout: c.WriteTimeout, Logger: log.Named("ui"), Gatherer: m.Registry(), Logins: statusLogins(c.Logins)})
	mo := c.MCP
	mo.MaxBodyBytes, mo.WriteTimeout = c.MaxBodyBytes, c.WriteTimeout
	o := otc.New(h, otc.Config{MaxBodyBytes: c.MaxBodyBytes, MaxResultBytes: c.Host.MaxResultBytes, Logger: log.Named("otc"), WriteTimeout: c.WriteTimeout})
	routes := slices.Concat(api.Routes(), o.Routes(), mcps.Handler(mo).Routes(), m.Routes(), ui.Routes(), mcpapi.MetadataRoutes(guard), loginRoutes(c.Logins))
	chain := Chain{
		Trace:     traced(),
		Readiness: ready,
		Guard:     &httpguard.RequestGuard{Listen: listen, AllowedHosts: c.AllowedHosts, AllowedOrigins: c.AllowedOrigins},
		Auth:      guard.Middleware,
		Logger:    log.Named("access"),
		Streams:   &Streams{Max: c.MaxStreams, MaxPerKey: c.MaxStreamsPerKey},
		Results:   h,
	}
	handler, err := Handler(routes, chain)
	if err != nil {
		return nil, &ConfigError{err}
	}
	return &Front{Handler: handler, Readiness: ready, Started: mcps.Sync, OnShutdown: []func(){mcps.Shutdown, ui.Shutdown}, Tasks: tm, Close: closeTasks}, nil
}

// taskStoreTimeout bounds connecting to the task store at start.
const taskStoreTimeout = 10 * time.Second

// newTasks opens c.TaskStore and starts the task manager of c.Tasks on
// it; the returned function closes both, once. Errors: *ConfigError for a
// TaskStore that is not one, else the store's (not answering).
func newTasks(ctx context.Context, c Config, log hclog.Logger) (*tasks.Manager, func(), error) {
	if err := tasks.CheckStore(c.TaskStore); err != nil {
		return nil, nil, &ConfigError{fmt.Errorf("--task-store: %w", err)}
	}
	tasks.SetRedisLogger(log.Named("redis"))
	sctx, cancel := context.WithTimeout(ctx, taskStoreTimeout)
	defer cancel()
	store, err := tasks.OpenStore(sctx, c.TaskStore)
	if err != nil {
		return nil, nil, fmt.Errorf("--task-store: %w", err)
	}
	cfg := c.Tasks
	cfg.Store, cfg.Logger = store, log
	if cfg.Replica == "" {
		name, _ := os.Hostname()
		cfg.Replica = fmt.Sprintf("%s pid %d", name, os.Getpid())
	}
	tm, err := tasks.NewManager(cfg)
	if err != nil {
		_ = store.Close()
		return nil, nil, err
	}
	var once sync.Once
	return tm, func() {
		once.Do(func() {
			tm.Close()
			_ = store.Close()
		})
	}, nil
}

// Serve serves until SIGINT or SIGTERM arrives on sigs (SIGHUP rescans
// the plugins folder and reloads the keys file), then stops: readiness
// answers 503 "draining" and every response says Connection: close; with
// DrainDelay set, new requests are still served for that long (none
// after SIGINT; a second signal cuts it short); then the listener
// closes, calls in flight finish within ShutdownTimeout and every plugin
// stops. Errors: the HTTP server failed.
func (s *Server) Serve(sigs <-chan os.Signal) error { return s.serve(nil, sigs) }

// serve is Serve, stopping on sig at once when it is not nil (a signal
// that came as Start returned).
func (s *Server) serve(sig os.Signal, sigs <-chan os.Signal) error {
	defer s.unwind()
	errc := s.errc
	for sig == nil {
		select {
		case err := <-errc:
			return fmt.Errorf("http server: %w", err)
		case sg := <-sigs:
			if sg == syscall.SIGHUP {
				s.hup()
				continue
			}
			sig = sg
		}
	}
	stopStart := time.Now()
	s.ready.Drain()
	delay := s.cfg.DrainDelay
	if sig == syscall.SIGINT {
		delay = 0 // Ctrl-C: nobody balances an interactive run
	}
	if delay > 0 { // only when asked for: an idle desktop host stops at once
		s.log.Info("draining: readiness answers 503, still serving", "signal", sig.String(), "drain_delay", delay)
		waitDrainDelay(delay, sigs, errc, s.hup, s.log)
	}
	s.log.Info("shutting down: listener closed, waiting for calls in flight", "signal", sig.String())
	unused := shutdown(s.ctx, s.srv, s.fresh, s.h, s.cfg.ShutdownTimeout, s.log)
	s.log.Info("stopped", "stop_ms", time.Since(stopStart).Milliseconds(), "unused_conns_closed", unused)
	return nil
}

// Run is Start then Serve, with sigs heard from the start: SIGINT or
// SIGTERM while the plugins still start (a plugin that hangs at start
// holds Start up to its start timeout) stops the start and unwinds at
// once instead of after it; SIGHUP then waits for the first scan. It
// returns nil after a stop by signal. Errors: Start's or Serve's.
func (s *Server) Run(sigs <-chan os.Signal) error {
	started := make(chan error, 1)
	go func() { started <- s.Start() }()
	for {
		select {
		case err := <-started:
			if err != nil {
				return err
			}
			return s.Serve(sigs)
		case sig := <-sigs:
			if sig == syscall.SIGHUP {
				continue // the first scan is under way
			}
			if s.hostUp.Load() { // the start ended as the signal came: serving, drain
				if err := <-started; err != nil {
					return err
				}
				return s.serve(sig, sigs)
			}
			s.log.Info("signal while the plugins start: stopping", "signal", sig.String())
			s.cancel() // the host's start gives up
			if err := <-started; err == nil {
				s.unwind() // it finished first: undo it all the same
			}
			return nil
		}
	}
}

// hup is SIGHUP: reload the keys file and rescan the plugins folder.
func (s *Server) hup() {
	s.log.Info("SIGHUP: rescanning plugins dir")
	_ = s.guard.Reload() // logs its own failure; the keys in force stay
	go func() {
		if err := s.h.Rescan(s.ctx); err != nil {
			s.log.Error("rescan failed", "error", err)
		}
	}()
}

// unwind undoes what New and Start set up, last first; it runs once.
func (s *Server) unwind() {
	for i := len(s.undo) - 1; i >= 0; i-- {
		s.undo[i]()
	}
	s.undo = nil
}

// isLoopback reports whether a listener on addr is reachable from this
// machine only (127.0.0.0/8, ::1).
func isLoopback(addr net.Addr) bool {
	ta, ok := addr.(*net.TCPAddr)
	return ok && ta.IP.IsLoopback()
}

// exposure refuses to serve without API keys (auth false) on an address
// beyond loopback (0.0.0.0, ::, a LAN address, a name resolving to one),
// unless insecure (--insecure-no-auth) says so on purpose.
func exposure(addr net.Addr, auth, insecure bool) error {
	if auth || insecure || isLoopback(addr) {
		return nil
	}
	return fmt.Errorf("listening on %s, beyond loopback, without API keys: anyone who reaches the port could call every tool. "+
		"Give --api-key or --api-keys-file (OPENTOOL_API_KEYS, OPENTOOL_API_KEYS_FILE), "+
		"or --insecure-no-auth to serve without keys on purpose (e.g. behind a proxy that authenticates)", addr)
}

// statusLogins is statusui.Config.Logins of logins (nil: none): the
// logins of loginRoutes' GET /oauth/status for the caller (a per-user
// server's the caller's own), each without a token with the command that
// begins it and the link of the caller's login waiting for its person;
// a shared login's link only to an unrestricted key, as only it may make
// that login.
func statusLogins(logins *oauthlogin.Registry) func(*http.Request) []statusui.Login {
	if logins == nil {
		return nil
	}
	return func(r *http.Request) []statusui.Login {
		g := access.GrantFrom(r.Context())
		out := []statusui.Login{}
		for _, st := range logins.Statuses(g.Name()) {
			if !g.AllowsPlugin(st.Server) {
				continue
			}
			l := statusui.Login{Status: st}
			if !st.LoggedIn {
				l.Command = "opentool-host auth login " + st.Server
				if st.Principal != "" || !g.Restricted() {
					l.Link = logins.Link(st.Server, st.Principal)
				}
			}
			out = append(out, l)
		}
		return out
	}
}

// loginRoutes are the routes of logins (nil: none): the callback, public
// (the person's browser has no key; the login's unguessable state is
// what lets its response in), and the CLI's, behind the keys: a caller
// sees the logins of the plugins it may use as a whole
// (access.AllowedPlugin), and only an unrestricted key (the operator's,
// or no keys) logs a server in or out, since a shared login is the
// account every caller's calls are made as.
func loginRoutes(logins *oauthlogin.Registry) []route.Route {
	if logins == nil {
		return nil
	}
	routes := []route.Route{{Pattern: "GET " + oauthlogin.CallbackPath, Handler: http.HandlerFunc(logins.Callback), Public: true}}
	may := func(r *http.Request, server string, change bool) bool {
		g := access.GrantFrom(r.Context())
		if change {
			return !g.Restricted()
		}
		return g.AllowsPlugin(server)
	}
	hs := logins.Handlers(may, func(r *http.Request) string { return access.GrantFrom(r.Context()).Name() })
	for _, p := range slices.Sorted(maps.Keys(hs)) {
		routes = append(routes, route.Route{Pattern: p, Handler: hs[p], Meter: route.One})
	}
	return routes
}
