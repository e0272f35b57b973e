// Package statusui serves a live status page of a host and the two
// endpoints it reads:
//
//   - GET /events: the host's lifecycle events (host.Host.Subscribe) as
//     server-sent events, one "event: TYPE" and "data: {JSON Event}" per
//     event, a comment line every Config.Heartbeat; see events.go.
//   - GET /status.json: every plugin's status and every served function
//     with its call counts and latency quantiles from the host's
//     Prometheus metrics; see status.go.
//   - GET / and GET /ui/NAME (public routes): the page itself (static/, embedded): plain
//     HTML, CSS and JavaScript that poll /status.json, follow /events and
//     offer a "try it" form per function (POST /opentool/call).
//
// The page and its files hold no data and are served to anyone, with a
// Content-Security-Policy of default-src 'self'; /events and
// /status.json are behind the API keys of the other routes (the front
// door serves Server.Routes behind them, or Config.Auth), and the page
// asks for a key when they answer 401.
package statusui

import (
	"bytes"
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"io/fs"
	"net/http"
	"path"
	"strings"
	"sync"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/opentool-host/opentool-host/frontend/keyview"
	"github.com/opentool-host/opentool-host/frontend/route"
	"github.com/opentool-host/opentool-host/host"
	"github.com/opentool-host/opentool-host/host/core"
)

// Source is what the status page needs from a host. *host.Host
// implements it.
type Source interface {
	// Source is every plugin's status and the served functions, which
	// the page shows as each key may see them; see host.Host.Plugins and
	// Functions.
	keyview.Source
	// Subscribe streams lifecycle events; see host.Host.Subscribe.
	Subscribe(buf int) (<-chan core.Event, func())
}

var _ Source = (*host.Host)(nil)

// DefaultHeartbeat is how often GET /events writes a comment line when
// no event comes, so that clients and proxies see the stream alive.
const DefaultHeartbeat = 15 * time.Second

// DefaultEventBuffer is how many events one /events client may fall
// behind before it misses events.
const DefaultEventBuffer = 64

// Config configures the status page. Zero fields take the defaults
// listed.
type Config struct {
	// Version is the host version the page shows.
	Version string
	// Gatherer gives the host's Prometheus metrics
	// (opentool_calls_total, opentool_call_duration_seconds) for the
	// per-function numbers of /status.json. Nil: the functions are listed
	// without numbers.
	Gatherer prometheus.Gatherer
	// Auth wraps the data endpoints (/events, /status.json) with an
	// authentication, e.g. httpguard.RequireAPIKey with the API keys. Nil:
	// none of its own (the front door authenticates every route that is
	// not public).
	Auth func(http.Handler) http.Handler
	// Heartbeat is how often /events writes a comment when idle. Default
	// DefaultHeartbeat (15 s).
	Heartbeat time.Duration
	// EventBuffer is how many events one /events client may fall behind
	// before it loses events. Default DefaultEventBuffer.
	EventBuffer int
	// WriteTimeout is how long a client has to take one response or one
	// event; a client that does not read is cut off then. Default 30 s.
	WriteTimeout time.Duration
	// Logger logs failures. Default: a null logger.
	Logger hclog.Logger
	// Logins, when set, gives the logins /status.json shows the caller
	// of r (Status.Logins): only those of the caller's own, never a
	// token. Nil: the host has no login step.
	Logins func(r *http.Request) []Login
}

// Paths of the status page's routes.
const (
	PagePath   = "/"
	FilesPath  = "/ui/"
	EventsPath = "/events"
	StatusPath = "/status.json"
)

// ContentSecurityPolicy is the Content-Security-Policy of the page and
// its files: everything from this origin only, no inline script or
// style, no framing.
const ContentSecurityPolicy = "default-src 'self'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'"

//go:embed static
var staticFS embed.FS

// files are the page's embedded files, by name (index.html, app.js,
// style.css).
var files = func() fs.FS {
	sub, err := fs.Sub(staticFS, "static")
	if err != nil {
		panic(err)
	}
	return sub
}()

// Server serves the status page and its endpoints.
type Server struct {
	src  Source
	cfg  Config
	done chan struct{} // closed by Shutdown
	once sync.Once
}

// New returns the status page of src.
func New(src Source, cfg Config) *Server {
	if cfg.Heartbeat <= 0 {
		cfg.Heartbeat = DefaultHeartbeat
	}
	if cfg.EventBuffer <= 0 {
		cfg.EventBuffer = DefaultEventBuffer
	}
	if cfg.WriteTimeout <= 0 {
		cfg.WriteTimeout = 30 * time.Second
	}
	if cfg.Logger == nil {
		cfg.Logger = hclog.NewNullLogger()
	}
	if cfg.Auth == nil {
		cfg.Auth = func(h http.Handler) http.Handler { return h }
	}
	return &Server{src: src, cfg: cfg, done: make(chan struct{})}
}

// Routes declares the page's routes: GET / and GET /ui/NAME, the page
// and its files, public (they hold no data; a browser cannot send an API
// key when it opens a page, so the page asks for the key and sends it
// with its own requests); GET /events, a stream, and GET /status.json,
// behind the host's keys and Config.Auth.
func (s *Server) Routes() []route.Route {
	return []route.Route{
		{Pattern: "GET " + PagePath + "{$}", Handler: http.HandlerFunc(s.handlePage), Public: true},
		{Pattern: "GET " + FilesPath + "{name}", Handler: http.HandlerFunc(s.handleFile), Public: true},
		{Pattern: "GET " + EventsPath, Handler: s.cfg.Auth(http.HandlerFunc(s.handleEvents)), Stream: route.Always},
		{Pattern: "GET " + StatusPath, Handler: s.cfg.Auth(http.HandlerFunc(s.handleStatus))},
	}
}

// Handler returns a handler of the page and its data routes only (other
// paths get 404), for tests and embedding: Routes without the front
// door (no request guard, stream cap or authentication but Config.Auth).
func (s *Server) Handler() http.Handler { return route.Mux(s.Routes()) }

// Shutdown ends every /events stream, now and later; give it to
// http.Server.RegisterOnShutdown so that a graceful shutdown does not
// wait for them. It is safe to call more than once.
func (s *Server) Shutdown() { s.once.Do(func() { close(s.done) }) }

// securityHeaders sets the headers of every page file.
func securityHeaders(h http.Header) {
	h.Set("Content-Security-Policy", ContentSecurityPolicy)
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Referrer-Policy", "no-referrer")
	h.Set("Cache-Control", "no-cache")
}

func (s *Server) handlePage(w http.ResponseWriter, r *http.Request) {
	s.serveFile(w, r, "index.html")
}

func (s *Server) handleFile(w http.ResponseWriter, r *http.Request) {
	name := r.PathValue("name")
	if name == "index.html" || strings.HasPrefix(name, ".") || path.Ext(name) == "" {
		http.NotFound(w, r)
		return
	}
	s.serveFile(w, r, name)
}

// serveFile writes the embedded file name, or 404.
func (s *Server) serveFile(w http.ResponseWriter, r *http.Request, name string) {
	b, err := fs.ReadFile(files, name)
	if err != nil {
		http.NotFound(w, r)
		return
	}
	h := w.Header()
	securityHeaders(h)
	sum := sha256.Sum256(b)
	h.Set("ETag", `"`+hex.EncodeToString(sum[:8])+`"`)
	// ServeContent sets the Content-Type from the name's extension and
	// answers If-None-Match with 304.
	http.ServeContent(w, r, name, time.Time{}, bytes.NewReader(b))
}
