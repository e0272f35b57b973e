package frontdoor

import (
	"net/http"
	"sync/atomic"
	"time"

	"github.com/opentool-host/opentool-host/frontend/httpguard"
	"github.com/opentool-host/opentool-host/frontend/opentoolapi"
	"github.com/opentool-host/opentool-host/frontend/route"
	"github.com/opentool-host/opentool-host/host/supervise"
)

// Readiness owns the host's readiness and drain state: Chain step 2.
type Readiness struct {
	// Plugins lists the plugins (host.Host.Plugins).
	Plugins func() []supervise.PluginStatus
	// WriteTimeout bounds writing the readiness answer. Default
	// httpguard.DefaultWriteTimeout.
	WriteTimeout time.Duration
	draining     atomic.Bool
	starting     atomic.Bool
}

// SetStarting says whether the host is still starting its plugins (the
// listener answers before they are up): readiness is then
// supervise.ReadinessStarting whatever the plugins listed so far.
func (r *Readiness) SetStarting(v bool) { r.starting.Store(v) }

// Drain turns readiness to supervise.ReadinessDraining (HTTP 503) for good;
// requests are still served, each answered with Connection: close. Call
// it when the process is told to stop, before closing the listener, so
// that load balancers stop sending here.
func (r *Readiness) Drain() { r.draining.Store(true) }

// Status is supervise.ReadinessDraining after Drain, else
// supervise.ReadinessStarting while starting (SetStarting), else
// supervise.Readiness over the plugins.
func (r *Readiness) Status() string {
	switch {
	case r.draining.Load():
		return supervise.ReadinessDraining
	case r.starting.Load():
		return supervise.ReadinessStarting
	}
	return supervise.Readiness(r.Plugins())
}

// Wrap answers GET and HEAD /health?ready=1 (the path of the routes
// that declare route.Route.Readiness) to anyone, with no key and any
// Host (a kubelet or load balancer probe sends neither): 200
// {"status":"ready"}, or 503 {"status":"starting"} or
// {"status":"draining"}, and nothing more. Every other request, GET
// /health without ready included, goes to next. Once Drain was called,
// every response says Connection: close, so that clients open their next
// connection elsewhere (through the load balancer) while the replica
// still answers; idle connections are not cut, which would race with
// requests already on their way.
func (r *Readiness) Wrap(next http.Handler, routes []route.Route) http.Handler {
	probes := map[string]bool{}
	for _, rt := range routes {
		if rt.Readiness {
			probes[route.Path(rt.Pattern)] = true
		}
	}
	return http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		if r.draining.Load() {
			w.Header().Set("Connection", "close")
		}
		if probes[req.URL.Path] && (req.Method == http.MethodGet || req.Method == http.MethodHead) && opentoolapi.ReadyQuery(req) {
			wt := r.WriteTimeout
			if wt <= 0 {
				wt = httpguard.DefaultWriteTimeout
			}
			opentoolapi.WriteReadiness(w, r.Status(), wt)
			return
		}
		next.ServeHTTP(w, req)
	})
}
