// Package httpapi serves a Host over HTTP: the OpenTool API under
// /opentool (client/server protocol 1.0.0, sections 1-3) and GET /health.
//
// One call travels: call.go (decode the JSON-RPC request) → Backend.Call
// (host: route by function name) → the plugin over gRPC → back to call.go
// (write the JSON-RPC response). errors.go maps host errors to JSON-RPC
// errors. stream.go serves POST /opentool/streamCall as server-sent
// events; auth.go guards every route with API keys (Config.APIKeys).
package httpapi

import (
	"context"
	"encoding/json"
	"net/http"
	"sync"

	"github.com/hashicorp/go-hclog"

	"github.com/opentool-host/opentool-host/host"
	"github.com/opentool-host/opentool-host/opentool"
)

// Backend is what the HTTP API needs from a host. *host.Host implements it.
type Backend interface {
	// Call runs a function; see host.Host.Call.
	Call(ctx context.Context, fn string, args []byte) ([]byte, error)
	// StreamCall runs a streaming function; see host.Host.StreamCall.
	StreamCall(ctx context.Context, fn string, args []byte, onItem func([]byte) error) error
	// Document returns the aggregated document; see host.Host.Document.
	Document(title, version, baseURL string) *opentool.OpenTool
	// Plugins returns every plugin's status; see host.Host.Plugins.
	Plugins() []host.PluginStatus
}

var _ Backend = (*host.Host)(nil)

// BasePath is the OpenTool API's base path.
const BasePath = "/opentool"

// DefaultMaxBodyBytes is the default request body limit (4 MiB).
const DefaultMaxBodyBytes = 4 << 20

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
	// authentication for every route (auth.go): requests must send
	// "Authorization: Bearer KEY" or get HTTP 401. Empty: auth off.
	APIKeys []string
}

// Server is the http.Handler of the API.
type Server struct {
	b   Backend
	cfg Config
	mux *http.ServeMux
	// keys guards every route; nil when authentication is off.
	keys *keySet
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
	s := &Server{b: b, cfg: cfg, mux: http.NewServeMux(), keys: newKeySet(cfg.APIKeys)}
	s.mux.HandleFunc("GET "+BasePath+"/version", s.handleVersion)
	s.mux.HandleFunc("POST "+BasePath+"/call", s.handleCall)
	s.mux.HandleFunc("POST "+BasePath+"/streamCall", s.handleStreamCall)
	s.mux.HandleFunc("GET "+BasePath+"/load", s.handleLoad)
	s.mux.HandleFunc("GET "+BasePath+"/export", s.handleExport)
	s.mux.HandleFunc("GET /health", s.handleHealth)
	return s
}

// ServeHTTP implements http.Handler. With Config.APIKeys set, a request
// without a valid key gets HTTP 401 whatever its route.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if s.keys != nil && !s.keys.allow(w, r) {
		return
	}
	s.mux.ServeHTTP(w, r)
}

// baseURL is this server's OpenTool base URL as the client reached it.
func baseURL(r *http.Request) string {
	scheme := "http"
	if r.TLS != nil {
		scheme = "https"
	}
	return scheme + "://" + r.Host + BasePath
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		http.Error(w, `{"error":"encode response"}`, http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = w.Write(b)
}

// bufPool holds request and response buffers of the call path.
var bufPool = sync.Pool{New: func() any { b := make([]byte, 0, 1024); return &b }}

func (s *Server) handleVersion(w http.ResponseWriter, _ *http.Request) {
	writeJSON(w, http.StatusOK, map[string]string{"version": s.cfg.Version})
}

func (s *Server) handleLoad(w http.ResponseWriter, r *http.Request) {
	writeJSON(w, http.StatusOK, s.b.Document(s.cfg.Title, s.cfg.Version, baseURL(r)))
}

// Health is the body of GET /health.
type Health struct {
	// Status is "ok" when every plugin is ready, "degraded" otherwise.
	Status string `json:"status"`
	// Version is the host's version.
	Version string `json:"version"`
	// Plugins is every plugin's status, sorted by name.
	Plugins []host.PluginStatus `json:"plugins"`
}

func (s *Server) handleHealth(w http.ResponseWriter, _ *http.Request) {
	h := Health{Status: "ok", Version: s.cfg.Version, Plugins: s.b.Plugins()}
	for _, p := range h.Plugins {
		if p.State != host.StateReady {
			h.Status = "degraded"
		}
	}
	writeJSON(w, http.StatusOK, h)
}
