// Package httpapi serves a Host over HTTP: the OpenTool API under
// /opentool (client/server protocol 1.0.0, sections 1-3), its task
// extension (tasks.go: long calls answered with a task to poll at
// /opentool/tasks/{id}) and GET /health.
//
// One call travels: call.go (read the body with httpguard.ReadBody, decode
// the JSON-RPC request) → Backend.Call (host/call.go: route, validate,
// send to the plugin, check the result) → back to call.go (write the
// JSON-RPC response under a write deadline). errors.go translates the
// host's one error type (*host.Error) into JSON-RPC errors. stream.go
// serves POST /opentool/streamCall as server-sent events on the same
// path. Every route is behind httpguard's API keys (Config.APIKeys).
// ready.go answers GET /health?ready=1 (readiness for load balancers and
// kubelets: 200 or 503, and nothing else), which Front serves
// without a key.
package httpapi

import (
	"context"
	"encoding/json"
	"net/http"
	"sync"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/opentool-host/opentool-host/catalog"
	"github.com/opentool-host/opentool-host/host"
	"github.com/opentool-host/opentool-host/internal/httpguard"
	"github.com/opentool-host/opentool-host/opentool"
	"github.com/opentool-host/opentool-host/tasks"
)

// Backend is what the HTTP API needs from a host. *host.Host implements it.
type Backend interface {
	// Call runs a function; see host.Host.Call.
	Call(ctx context.Context, fn string, args []byte) ([]byte, error)
	// StreamCall runs a streaming function; see host.Host.StreamCall.
	StreamCall(ctx context.Context, fn string, args []byte, onItem func([]byte) error) error
	// Document returns the aggregated document; see host.Host.Document.
	Document(title, version, baseURL string) *opentool.OpenTool
	// Source is what the listings show each key of it (package catalog):
	// every served function with its plugin, every plugin's status, the
	// tool search threshold; see host.Host.Functions, Plugins and
	// ToolSearchThreshold.
	catalog.Source
}

var _ Backend = (*host.Host)(nil)

// BasePath is the OpenTool API's base path.
const BasePath = "/opentool"

// DefaultMaxBodyBytes is the default request body limit (4 MiB).
const DefaultMaxBodyBytes = httpguard.DefaultMaxBodyBytes

// Config configures the HTTP API. Zero fields take the defaults listed.
type Config struct {
	// Version is the host version GET /opentool/version reports ("x.y.z").
	Version string
	// Title is info.title of the aggregated document. Default
	// "opentool-host".
	Title string
	// MaxBodyBytes caps a request body, in bytes; larger bodies get HTTP
	// 413. Default DefaultMaxBodyBytes.
	MaxBodyBytes int64
	// Logger logs request failures. Default: a null logger.
	Logger hclog.Logger
	// APIKeys, when it holds a non-empty key, turns on API key
	// authentication for every route (httpguard.RequireAPIKey): requests
	// must send "Authorization: Bearer KEY" or get HTTP 401. Empty: auth
	// off.
	APIKeys []string
	// WriteTimeout is how long a client has to take one response or one
	// stream frame; a client that does not read is cut off then. Default
	// httpguard.DefaultWriteTimeout (30 s).
	WriteTimeout time.Duration
	// Ready is the host's readiness status (the front door's
	// Readiness.Status, which knows about draining), reported by GET
	// /health. Default: host.Readiness over the plugins.
	Ready func() string
	// Tasks, when set, runs the calls whose request allows it
	// ("Prefer: respond-async") as tasks once they have run for
	// Tasks.After(), and serves GET and DELETE /opentool/tasks/{id}: the
	// OpenTool task extension (tasks.go). Nil: the preference is ignored
	// (every call is answered when it ends) and the task routes answer
	// 404.
	Tasks *tasks.Manager
}

// Server is the http.Handler of the API.
type Server struct {
	b   Backend
	cfg Config
	mux *http.ServeMux
	// guarded is mux behind the API keys (mux itself when auth is off).
	guarded http.Handler
}

var _ http.Handler = (*Server)(nil)

// New returns the API handler for b.
func New(b Backend, cfg Config) *Server {
	if cfg.Title == "" {
		cfg.Title = "opentool-host"
	}
	if cfg.MaxBodyBytes <= 0 {
		cfg.MaxBodyBytes = DefaultMaxBodyBytes
	}
	if cfg.Logger == nil {
		cfg.Logger = hclog.NewNullLogger()
	}
	if cfg.WriteTimeout <= 0 {
		cfg.WriteTimeout = httpguard.DefaultWriteTimeout
	}
	s := &Server{b: b, cfg: cfg, mux: http.NewServeMux()}
	s.guarded = httpguard.RequireAPIKey(cfg.APIKeys, s.mux)
	s.Mount(s.mux)
	return s
}

// Mount registers the API's routes on mux (the front door's route
// table), without Config.APIKeys' guard (the front door authenticates).
func (s *Server) Mount(mux *http.ServeMux) {
	mux.HandleFunc("GET "+BasePath+"/version", s.handleVersion)
	mux.HandleFunc("POST "+BasePath+"/call", s.handleCall)
	mux.HandleFunc("POST "+BasePath+"/streamCall", s.handleStreamCall)
	mux.HandleFunc("GET "+BasePath+"/load", s.handleLoad)
	mux.HandleFunc("GET "+BasePath+"/export", s.handleExport)
	mux.HandleFunc("GET "+TasksPath+"/{id}", s.handleTaskGet)
	mux.HandleFunc("DELETE "+TasksPath+"/{id}", s.handleTaskDelete)
	mux.HandleFunc("GET /health", s.handleHealth)
}

// ServeHTTP implements http.Handler. With Config.APIKeys set, a request
// without a valid key gets HTTP 401 whatever its route.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) { s.guarded.ServeHTTP(w, r) }

// baseURL is this server's OpenTool base URL as the client reached it.
func baseURL(r *http.Request) string {
	scheme := "http"
	if r.TLS != nil {
		scheme = "https"
	}
	return scheme + "://" + r.Host + BasePath
}

func (s *Server) writeJSON(w http.ResponseWriter, status int, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		s.cfg.Logger.Error("encode response", "error", err)
		b, status = []byte(`{"error":{"code":500,"message":"encode response"}}`), http.StatusInternalServerError
	}
	httpguard.Write(w, status, httpguard.JSON, b, s.cfg.WriteTimeout)
}

// bufPool holds request and response buffers of the call path. Buffers
// that grew past maxPooledBuf (a large result) are not kept.
var bufPool = sync.Pool{New: func() any { b := make([]byte, 0, 1024); return &b }}

// maxPooledBuf is the largest buffer put back into bufPool (64 KiB).
const maxPooledBuf = 64 << 10

// getBuf takes a buffer from bufPool; putBuf returns it.
func getBuf() *[]byte { return bufPool.Get().(*[]byte) }

func putBuf(bp *[]byte) {
	if cap(*bp) <= maxPooledBuf {
		*bp = (*bp)[:0]
		bufPool.Put(bp)
	}
}

func (s *Server) handleVersion(w http.ResponseWriter, _ *http.Request) {
	s.writeJSON(w, http.StatusOK, map[string]string{"version": s.cfg.Version})
}

func (s *Server) handleLoad(w http.ResponseWriter, r *http.Request) {
	s.writeJSON(w, http.StatusOK, s.document(r))
}

// Health is the body of GET /health.
type Health struct {
	// Status is "ok" when every plugin is ready, "degraded" otherwise.
	Status string `json:"status"`
	// Ready is the host's readiness status (host.ReadinessReady,
	// ReadinessStarting or ReadinessDraining), as GET /health?ready=1
	// answers it.
	Ready string `json:"ready"`
	// Version is the host's version.
	Version string `json:"version"`
	// Plugins is every plugin's status, sorted by name.
	Plugins []host.PluginStatus `json:"plugins"`
	// Ignored lists the files of the plugins folder named like plugins
	// that cannot be run (host.Host.Ignored), for a key that sees
	// everything; absent when there are none.
	Ignored []host.IgnoredFile `json:"ignored,omitempty"`
}

func (s *Server) handleHealth(w http.ResponseWriter, r *http.Request) {
	if ReadyQuery(r) {
		WriteReadiness(w, s.readiness(), s.cfg.WriteTimeout)
		return
	}
	h := Health{Status: "ok", Ready: s.readiness(), Version: s.cfg.Version, Plugins: s.healthPlugins(r.Context()), Ignored: s.ignored(r.Context())}
	for _, p := range h.Plugins {
		if p.State != host.StateReady {
			h.Status = "degraded"
		}
	}
	s.writeJSON(w, http.StatusOK, h)
}
