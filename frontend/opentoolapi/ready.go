package opentoolapi

import (
	"net/http"
	"time"

	"github.com/opentool-host/opentool-host/frontend/httpguard"
	"github.com/opentool-host/opentool-host/host/supervise"
)

// Readiness is the body of GET /health?ready=1. It carries nothing else:
// the front door answers that route without an API key
// (frontdoor.Readiness).
type Readiness struct {
	// Status is supervise.ReadinessReady, ReadinessStarting or
	// ReadinessDraining.
	Status string `json:"status"`
}

// readiness is the host's readiness status: Config.Ready's, or without
// it supervise.Readiness over the plugins.
func (s *Server) readiness() string {
	if s.cfg.Ready != nil {
		return s.cfg.Ready()
	}
	return supervise.Readiness(s.b.Plugins())
}

// ReadyQuery reports whether r asks for readiness: ?ready, ?ready=1 or
// ?ready=true.
func ReadyQuery(r *http.Request) bool {
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

// WriteReadiness writes the readiness answer for status: 200 for
// supervise.ReadinessReady, else 503, with {"status":STATUS}, not cached,
// within writeTimeout.
func WriteReadiness(w http.ResponseWriter, status string, writeTimeout time.Duration) {
	code := http.StatusOK
	if status != supervise.ReadinessReady {
		code = http.StatusServiceUnavailable
	}
	w.Header().Set("Cache-Control", "no-store")
	httpguard.Write(w, code, httpguard.JSON, []byte(`{"status":"`+status+`"}`), writeTimeout)
}
