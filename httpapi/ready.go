package httpapi

import (
	"net/http"

	"github.com/opentool-host/opentool-host/host"
	"github.com/opentool-host/opentool-host/internal/httpguard"
)

// The readiness statuses of GET /health?ready=1 ({"status":STATUS}).
const (
	// StatusReady (HTTP 200): every plugin is ready or failed for good
	// (Settled); send traffic.
	StatusReady = "ready"
	// StatusStarting (HTTP 503): a plugin is starting or restarting.
	StatusStarting = "starting"
	// StatusDraining (HTTP 503): the host got SIGTERM (Server.Drain) and
	// will stop; send no new requests. It still serves those it gets.
	StatusDraining = "draining"
)

// Readiness is the body of GET /health?ready=1. It carries nothing else:
// that route answers without an API key (Front).
type Readiness struct {
	// Status is StatusReady, StatusStarting or StatusDraining.
	Status string `json:"status"`
}

// Settled reports whether a plugin in state st lets the host be ready:
// ready or degraded (serving); failed (the host gave up: the first start or a retry failed, or
// Restart.MaxFailures crashes or failed restarts in a row, and nothing
// retries it until its file changes, a rescan or the lock changes, so
// waiting for it would hold readiness forever); or draining or stopped
// (removed, going away). Starting and restarting (a crash being retried
// after a backoff, at most Restart.MaxFailures times) are not settled.
func Settled(st host.State) bool {
	switch st {
	case host.StateReady, host.StateDegraded, host.StateFailed, host.StateDraining, host.StateStopped:
		return true
	}
	return false
}

// Drain turns readiness to StatusDraining (HTTP 503) for good; requests
// are still served. Call it when the process is told to stop, before
// draining the listener, so that load balancers stop sending to it.
func (s *Server) Drain() { s.draining.Store(true) }

// Readiness returns the readiness status: StatusDraining after Drain,
// else StatusStarting while a plugin is not Settled, else StatusReady.
func (s *Server) Readiness() string {
	if s.draining.Load() {
		return StatusDraining
	}
	for _, p := range s.b.Plugins() {
		if !Settled(p.State) {
			return StatusStarting
		}
	}
	return StatusReady
}

// Front returns the outermost handler of a server whose routes (next)
// are behind API keys. It answers GET and HEAD /health?ready=1 to anyone,
// with no key (a kubelet or load balancer probe cannot send one): 200
// {"status":"ready"}, or 503 {"status":"starting"} or
// {"status":"draining"}, and nothing more. Every other request, GET
// /health without ready included, goes to next. Once Drain was called,
// every response says Connection: close, so that clients open their next
// connection elsewhere (through the load balancer) while the replica
// still answers; idle connections are not cut, which would race with
// requests already on their way.
func (s *Server) Front(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if s.draining.Load() {
			w.Header().Set("Connection", "close")
		}
		if r.URL.Path == "/health" && (r.Method == http.MethodGet || r.Method == http.MethodHead) && readyQuery(r) {
			s.handleReady(w, r)
			return
		}
		next.ServeHTTP(w, r)
	})
}

// readyQuery reports whether r asks for readiness: ?ready, ?ready=1 or
// ?ready=true.
func readyQuery(r *http.Request) bool {
	v, ok := r.URL.Query()["ready"]
	if !ok {
		return false
	}
	switch v[0] {
	case "", "1", "true":
		return true
	}
	return false
}

func (s *Server) handleReady(w http.ResponseWriter, _ *http.Request) {
	st := s.Readiness()
	code := http.StatusOK
	if st != StatusReady {
		code = http.StatusServiceUnavailable
	}
	w.Header().Set("Cache-Control", "no-store")
	httpguard.Write(w, code, httpguard.JSON, []byte(`{"status":"`+st+`"}`), s.cfg.WriteTimeout)
}
