// Package opentoolapi serves a Host over HTTP: the OpenTool API under
// /opentool (client/server protocol 1.0.0, sections 1-3), its task
// extension (tasks.go: long calls answered with a task to poll at
// /opentool/tasks/{id}) and GET /health.
//
// One call travels: call.go (read the body with httpguard.ReadBody, decode
// the JSON-RPC request) → Backend.Call (host/call.go: route, validate,
// send to the plugin, check the result) → back to call.go (write the
// JSON-RPC response under a write deadline). errors.go translates the
// host's one error type (*core.Error) into JSON-RPC errors. stream.go
// serves POST /opentool/streamCall as server-sent events on the same
// path. Routes declares every route (package route); the front door
// (package frontdoor) serves them behind the API keys, the rate limit and
// the caps. ready.go answers GET /health?ready=1 (readiness for load
// balancers and kubelets: 200 or 503, and nothing else), which the front
// door serves without a key.
package opentoolapi

import (
	"context"
	"encoding/json"
	"net/http"
	"sync"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/opentool-host/opentool-host/frontend/httpguard"
	"github.com/opentool-host/opentool-host/frontend/keyview"
	"github.com/opentool-host/opentool-host/frontend/route"
	"github.com/opentool-host/opentool-host/host"
	"github.com/opentool-host/opentool-host/host/core"
	"github.com/opentool-host/opentool-host/host/supervise"
	"github.com/opentool-host/opentool-host/host/tasks"
	"github.com/opentool-host/opentool-host/protocol/opentool"
)

// Backend is what the HTTP API needs from a host. *host.Host implements it.
type Backend interface {
	// Call runs a function; see host.Host.Call.
	Call(ctx context.Context, fn string, args []byte) ([]byte, error)
	// StreamCall runs a streaming function; see host.Host.StreamCall.
	StreamCall(ctx context.Context, x *core.Exchange, fn string, args []byte, onItem func([]byte) error) error
	// Document returns the aggregated document; see host.Host.Document.
	Document(title, version, baseURL string) *opentool.OpenTool
	// Source is what the listings show each key of it (package catalog):
	// every served function with its plugin, every plugin's status, the
	// tool search threshold; see host.Host.Functions, Plugins and
	// ToolSearchThreshold.
	keyview.Source
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
	// WriteTimeout is how long a client has to take one response or one
	// stream frame; a client that does not read is cut off then. Default
	// httpguard.DefaultWriteTimeout (30 s).
	WriteTimeout time.Duration
	// Ready is the host's readiness status (the front door's
	// Readiness.Status, which knows about draining), reported by GET
	// /health. Default: supervise.Readiness over the plugins.
	Ready func() string
	// Tasks, when set, runs the calls whose request allows it
	// ("Prefer: respond-async") as tasks once they have run for
	// Tasks.After(), and serves GET and DELETE /opentool/tasks/{id}: the
	// OpenTool task extension (tasks.go). Nil: the preference is ignored
	// (every call is answered when it ends) and the task routes answer
	// 404.
	Tasks *tasks.Manager
}

// Server is the OpenTool front end: a codec between the OpenTool API and
// the Backend, whose routes (Routes) the front door serves.
type Server struct {
	b   Backend
	cfg Config
}

// New returns the OpenTool front end of b; Routes declares its routes.
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
	return &Server{b: b, cfg: cfg}
}

// Routes declares the API's routes: what each costs of its key's rate
// limit (a call, a listing, a task's poll or cancel: 1; a refused call
// answered as a JSON-RPC error, refuseCall), which stream (POST
// streamCall) and which hold their results until written (POST call);
// every path under BasePath is refused as a JSON-RPC error
// (WriteRefusal); GET /health?ready is the readiness probe.
func (s *Server) Routes() []route.Route {
	call := route.OneRefusedBy(s.refuseCall)
	return []route.Route{
		{Pattern: "GET " + BasePath + "/version", Handler: http.HandlerFunc(s.handleVersion), Refuse: refuse},
		{Pattern: "POST " + BasePath + "/call", Handler: http.HandlerFunc(s.handleCall), Meter: call, HoldsResults: true, Refuse: refuse},
		{Pattern: "POST " + BasePath + "/streamCall", Handler: http.HandlerFunc(s.handleStreamCall), Meter: call, Stream: route.Always, Refuse: refuse},
		{Pattern: "GET " + BasePath + "/load", Handler: http.HandlerFunc(s.handleLoad), Meter: route.One, Refuse: refuse},
		{Pattern: "GET " + BasePath + "/export", Handler: http.HandlerFunc(s.handleExport), Meter: route.One, Refuse: refuse},
		{Pattern: "GET " + TasksPath + "/{id}", Handler: http.HandlerFunc(s.handleTaskGet), Meter: route.One, Refuse: refuse},
		{Pattern: "DELETE " + TasksPath + "/{id}", Handler: http.HandlerFunc(s.handleTaskDelete), Meter: route.One, Refuse: refuse},
		{Pattern: "GET " + HealthPath, Handler: http.HandlerFunc(s.handleHealth), Readiness: true},
	}
}

// HealthPath is the path of the host's health: GET HealthPath (every
// plugin's status, behind the keys) and GET HealthPath?ready=1 (the
// readiness probe, to anyone).
const HealthPath = "/health"

// refuse writes a request refused by the front door as WriteRefusal
// does (route.Route.Refuse).
func refuse(w http.ResponseWriter, _ *http.Request, status int, msg string) {
	WriteRefusal(w, status, msg)
}

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
	// Ready is the host's readiness status (supervise.ReadinessReady,
	// ReadinessStarting or ReadinessDraining), as GET /health?ready=1
	// answers it.
	Ready string `json:"ready"`
	// Version is the host's version.
	Version string `json:"version"`
	// Plugins is every plugin's status, sorted by name.
	Plugins []supervise.PluginStatus `json:"plugins"`
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
		if p.State != core.StateReady {
			h.Status = "degraded"
		}
	}
	s.writeJSON(w, http.StatusOK, h)
}
