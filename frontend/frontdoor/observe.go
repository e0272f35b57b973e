package frontdoor

import (
	"context"
	"net"
	"net/http"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/opentool-host/opentool-host/frontend/audit"
	"github.com/opentool-host/opentool-host/frontend/httpguard"
	"github.com/opentool-host/opentool-host/frontend/metrics"
	"github.com/opentool-host/opentool-host/frontend/route"
	"github.com/opentool-host/opentool-host/host/core"
)

// observers is core.Config.OnCall's fan-out: every finished call goes to
// the metrics, then to the audit log (either nil when off). Traces are
// not here: the host's execute_tool span wraps the call itself.
type observers struct {
	metrics *metrics.Metrics
	audit   *audit.Log
}

// observe implements core.Config.OnCall.
func (o *observers) observe(ctx context.Context, r core.CallRecord) {
	if o.metrics != nil {
		o.metrics.Observe(ctx, r)
	}
	if o.audit != nil {
		o.audit.Observe(ctx, r)
	}
}

// serveMetrics serves m alone on addr (--metrics-addr: no API keys, for a
// scraper on a private network) until ctx ends. Errors: addr cannot be
// listened on.
func serveMetrics(ctx context.Context, addr string, m *metrics.Metrics, allowedHosts []string, log hclog.Logger) error {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return err
	}
	routes := m.Routes()
	// The same Host and Origin rules as the main listener: no key here,
	// so a page must not reach it through DNS rebinding either.
	guard := &httpguard.RequestGuard{Listen: ln.Addr(), AllowedHosts: allowedHosts, Refuse: refusals(routes)}
	guarded, err := guard.Wrap(route.Mux(routes))
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
	log.Info("serving metrics", "url", "http://"+ln.Addr().String()+route.Path(routes[0].Pattern))
	return nil
}
