package frontdoor

import (
	"context"
	"net"
	"net/http"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/opentool-host/opentool-host/access"
	"github.com/opentool-host/opentool-host/audit"
	"github.com/opentool-host/opentool-host/host"
	"github.com/opentool-host/opentool-host/internal/httpguard"
	"github.com/opentool-host/opentool-host/metrics"
)

// observers is host.Config.OnCall's fan-out: every finished call goes to
// the metrics, then to the audit log (either nil when off). Traces are
// not here: the host's execute_tool span wraps the call itself.
type observers struct {
	metrics *metrics.Metrics
	audit   *audit.Log
}

// observe implements host.Config.OnCall.
func (o *observers) observe(ctx context.Context, r host.CallRecord) {
	if o.metrics != nil {
		o.metrics.Observe(ctx, r)
	}
	if o.audit != nil {
		o.audit.Observe(ctx, r)
	}
}

// metricsHandler is /metrics on the main listener: behind the API keys,
// and only for a key that may see every function (labels name every
// function and plugin; a restricted key gets 403).
func metricsHandler(m *metrics.Metrics) http.Handler {
	h := m.Handler()
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if access.GrantFrom(r.Context()).Restricted() {
			http.Error(w, "metrics need an API key that may see every function", http.StatusForbidden)
			return
		}
		h.ServeHTTP(w, r)
	})
}

// serveMetrics serves m alone on addr (--metrics-addr: no API keys, for a
// scraper on a private network) until ctx ends. Errors: addr cannot be
// listened on.
func serveMetrics(ctx context.Context, addr string, m *metrics.Metrics, allowedHosts []string, log hclog.Logger) error {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return err
	}
	mux := http.NewServeMux()
	mux.Handle("/metrics", m.Handler())
	// The same Host and Origin rules as the main listener: no key here,
	// so a page must not reach it through DNS rebinding either.
	guard := &httpguard.RequestGuard{Listen: ln.Addr(), AllowedHosts: allowedHosts, Refuse: Refuse}
	guarded, err := guard.Wrap(mux)
	if err != nil {
		ln.Close()
		return err
	}
	srv := &http.Server{Handler: guarded, ReadHeaderTimeout: 10 * time.Second}
	go func() {
		<-ctx.Done()
		_ = srv.Close()
	}()
	go func() {
		if err := srv.Serve(ln); err != nil && err != http.ErrServerClosed {
			log.Error("metrics listener", "error", err)
		}
	}()
	log.Info("serving metrics", "url", "http://"+ln.Addr().String()+"/metrics")
	return nil
}
