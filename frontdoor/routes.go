package frontdoor

import (
	"net/http"

	"github.com/hashicorp/go-hclog"

	"github.com/opentool-host/opentool-host/httpapi"
	"github.com/opentool-host/opentool-host/internal/httpguard"
	"github.com/opentool-host/opentool-host/mcpapi"
	"github.com/opentool-host/opentool-host/otc"
)

// Routes are the front ends, one per protocol: each decodes its wire
// format and encodes results and errors, and owns no guard of its own.
type Routes struct {
	// OpenTool serves /opentool/* and /health (httpapi.Server): Mount
	// puts its routes in the table, ServeHTTP answers every other path
	// (OpenTool's 404).
	OpenTool interface {
		http.Handler
		Mount(mux *http.ServeMux)
	}
	// OTC serves /otc/* (otc.Server): Mount puts its routes in the
	// table.
	OTC interface{ Mount(mux *http.ServeMux) }
	// MCP serves /mcp (mcpapi.Server.Handler).
	MCP http.Handler
	// Metrics serves /metrics (behind the keys, for a key that sees
	// everything).
	Metrics http.Handler
	// Status is the status page (statusui.Server): its data routes
	// (/events, /status.json) are mounted here, its files (/, /ui/*)
	// served before authentication by Public.
	Status interface {
		Mount(mux *http.ServeMux)
		Public(next http.Handler) http.Handler
	}
}

// Chain is the request side's one middleware chain. Every request passes
// it in this order, outermost first:
//
//  1. Trace: the server span, continuing the caller's traceparent;
//  2. Readiness: GET /health?ready=1 answered here (no key, any Host),
//     and Connection: close on every response while draining;
//  3. Guard: Host, Origin and Content-Type (httpguard.RequestGuard);
//  4. the status page's own files (no data), before authentication;
//  5. Auth: the API keys, and the key's grant on the request;
//  6. Limit: the key's rate limit, for every call, listing and task
//     poll, each JSON-RPC batch item a call (access.Limit, taken here
//     only; each front end says what a request costs and answers a
//     refusal in its protocol: Meter);
//  7. stream caps (Streams);
//  8. result memory scopes (HoldResults);
//  9. the route table (route).
type Chain struct {
	// Trace wraps the whole chain (nil: none).
	Trace func(http.Handler) http.Handler
	// Readiness answers readiness and marks responses while draining
	// (Readiness.Wrap).
	Readiness func(http.Handler) http.Handler
	// Guard is the request guard.
	Guard *httpguard.RequestGuard
	// Auth authenticates (access.Guard.Middleware).
	Auth func(http.Handler) http.Handler
	// Logger logs the refusals of Limit (nil: none).
	Logger hclog.Logger
	// Streams caps the open streams.
	Streams *Streams
	// Results gives call requests their result scope (*host.Host).
	Results ResultScoper
}

// Handler returns the host's whole HTTP handler: r's routes behind c.
// Errors: the request guard's configuration (an --allowed-origin that is
// not an origin).
func Handler(r Routes, c Chain) (http.Handler, error) {
	log := c.Logger
	if log == nil {
		log = hclog.NewNullLogger()
	}
	inner := c.Auth(Limit(c.Streams.Wrap(HoldResults(c.Results, route(r))), log.Info, r.meters()...))
	guarded, err := c.Guard.Wrap(r.Status.Public(inner))
	if err != nil {
		return nil, err
	}
	h := c.Readiness(guarded)
	if c.Trace != nil {
		h = c.Trace(h)
	}
	return h, nil
}

// route is the route table: every path the host serves, in one place.
//
//	/opentool/version, /opentool/call, /opentool/streamCall,
//	/opentool/load, /opentool/export,
//	/opentool/tasks/{id}, /health               → OpenTool (httpapi)
//	/otc/health, /otc/tools, /otc/call          → Open Tool Calling (otc)
//	/mcp                                        → MCP (mcpapi)
//	/metrics                                    → Prometheus
//	/events, /status.json                       → status page data (statusui)
//	/, /ui/*                                    → status page files (Chain step 4)
//	anything else                               → OpenTool's 404
func route(r Routes) *http.ServeMux {
	mux := http.NewServeMux()
	r.OpenTool.Mount(mux)       // its routes (httpapi.BasePath, /health)
	mux.Handle("/", r.OpenTool) // and the 404 of every unknown path
	r.OTC.Mount(mux)
	mux.Handle(mcpapi.Path, r.MCP)
	mux.Handle("/metrics", r.Metrics)
	r.Status.Mount(mux)
	return mux
}

// meters are the front ends that implement Meter, in the order Limit
// asks them.
func (r Routes) meters() []Meter {
	var out []Meter
	for _, fe := range []any{r.OpenTool, r.OTC, r.MCP} {
		if m, ok := fe.(Meter); ok {
			out = append(out, m)
		}
	}
	return out
}

// spanRoutes are the paths of the route table above, for span names
// (tracing.go): a request's path is the caller's to choose, so only these
// (or "other") become names.
var spanRoutes = []string{httpapi.BasePath + "/call", httpapi.BasePath + "/streamCall", httpapi.BasePath + "/load",
	httpapi.BasePath + "/version", httpapi.BasePath + "/export", "/health",
	otc.BasePath + "/call", otc.BasePath + "/tools", otc.BasePath + "/health", mcpapi.Path,
	"/metrics", "/events", "/status.json", "/"}
