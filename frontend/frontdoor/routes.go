// Package frontdoor is what stands between the socket and the front ends
// (the OpenTool API, Open Tool Calling, MCP, the status page, the
// metrics): the server, its one middleware chain (Chain) and the route
// table, built from the routes each front end declares (route.Route).
// It knows no path of its own: a route's span name, cost, stream cap,
// result scope, refusal and readiness are the route's declaration.
package frontdoor

import (
	"errors"
	"net/http"

	"github.com/hashicorp/go-hclog"

	"github.com/opentool-host/opentool-host/frontend/httpguard"
	"github.com/opentool-host/opentool-host/frontend/route"
	"github.com/opentool-host/opentool-host/host/access"
)

// Chain is the request side's one middleware chain, built from the
// routes' declarations (route.Route). Every request passes it in this
// order, outermost first:
//
//  1. Trace: the server span, continuing the caller's traceparent, named
//     "METHOD PATH" by the route's pattern ("METHOD other" off the table);
//  2. Readiness: GET /health?ready=1 (the route declared Readiness)
//     answered here (no key, any Host), and Connection: close on every
//     response while draining;
//  3. Guard: Host, Origin and Content-Type (httpguard.RequestGuard),
//     refused in the protocol of the route asked for (Route.Refuse);
//  4. the route table: a Public route is served now, before
//     authentication; every other request, and an unknown path's 404
//     or a known path's 405, goes on:
//  5. Auth: the API keys, and the key's grant on the request;
//  6. Limit: the key's rate limit, for a route with a Meter (every
//     call, listing and task poll, each JSON-RPC batch item a call;
//     access.Limit, taken here only), refused in the route's protocol;
//  7. stream caps, for a route that streams (Streams);
//  8. result memory scopes, for a route that holds its results
//     (HoldResults);
//  9. the route's handler.
//
// Only Auth is required; a nil step is left out (tests serve routes
// behind the keys alone).
type Chain struct {
	// Trace wraps the whole chain, naming each request's span with
	// spanName (nil: none).
	Trace func(h http.Handler, spanName func(*http.Request) string) http.Handler
	// Readiness answers readiness and marks responses while draining
	// (nil: none).
	Readiness *Readiness
	// Guard is the request guard (nil: none; production always has one).
	Guard *httpguard.RequestGuard
	// Auth authenticates (access.Guard.Middleware).
	Auth func(http.Handler) http.Handler
	// Logger logs the refusals of Limit (nil: none).
	Logger hclog.Logger
	// Streams caps the open streams (nil: the default caps).
	Streams *Streams
	// Results gives call requests their result scope (*host.Host; nil:
	// none).
	Results ResultScoper
}

// Handler returns the host's whole HTTP handler: routes, the front ends'
// declarations, behind c. Every route's span name, cost, stream cap,
// result scope, refusal and readiness come from its declaration: a route
// is added by declaring it in its front end. Errors: Auth is nil; the
// request guard's configuration (an --allowed-origin that is not an
// origin). It panics on a pattern that is not valid or declared twice
// (route.Mux).
func Handler(routes []route.Route, c Chain) (http.Handler, error) {
	if c.Auth == nil {
		return nil, errors.New("frontdoor: Chain.Auth is required")
	}
	if c.Logger == nil {
		c.Logger = hclog.NewNullLogger()
	}
	if c.Streams == nil {
		c.Streams = &Streams{}
	}
	t := newTable(routes, c)
	var h http.Handler = t
	if c.Guard != nil {
		g := *c.Guard
		g.Refuse = t.refuse
		var err error
		if h, err = g.Wrap(h); err != nil {
			return nil, err
		}
	}
	if c.Readiness != nil {
		h = c.Readiness.Wrap(h, routes)
	}
	if c.Trace != nil {
		h = c.Trace(h, t.spanName)
	}
	return h, nil
}

// table is the route table: one ServeMux of every declared route, each
// pattern to its handler behind the steps its declaration asks for
// (Chain steps 5-9).
type table struct {
	mux *http.ServeMux
	// unknown is the mux behind the keys, for a request no pattern
	// matches: its 404 or 405 goes to a caller with a key only.
	unknown http.Handler
	refuse  func(w http.ResponseWriter, r *http.Request, status int, msg string)
}

// newTable builds the table of routes behind c.
func newTable(routes []route.Route, c Chain) *table {
	t := &table{refuse: refusals(routes)}
	served := make([]route.Route, len(routes))
	for i, rt := range routes {
		rt.Handler = t.steps(rt, c)
		served[i] = rt
	}
	t.mux = route.Mux(served)
	t.unknown = c.Auth(t.mux)
	return t
}

// steps returns rt's handler behind the steps of the chain it declares.
func (t *table) steps(rt route.Route, c Chain) http.Handler {
	h := rt.Handler
	if rt.HoldsResults && c.Results != nil {
		h = HoldResults(c.Results, h)
	}
	if rt.Stream != nil {
		h = c.Streams.Wrap(h, rt.Stream, t.refuse)
	}
	if rt.Meter != nil {
		h = Limit(h, c.Logger.Info, rt.Meter)
	}
	if !rt.Public {
		h = c.Auth(h)
	}
	return h
}

// ServeHTTP serves a request of a declared route by the route's handler,
// any other behind the keys (Chain step 4).
func (t *table) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if _, p := t.mux.Handler(r); p == "" {
		t.unknown.ServeHTTP(w, r)
		return
	}
	t.mux.ServeHTTP(w, r)
}

// spanName is "METHOD PATH" of the route r asked for ("GET
// /opentool/tasks/{id}"), or "METHOD other": a request's path is the
// caller's to choose, so only declared paths become names.
func (t *table) spanName(r *http.Request) string {
	if _, p := t.mux.Handler(r); p != "" {
		return r.Method + " " + route.Path(p)
	}
	return r.Method + " other"
}

// refusals returns the Refuse of routes: a request is refused by the
// Refuse of the first route that declares one under its path's first
// segment (route.Route.Refuse), else as
// {"error":{"code":STATUS,"message":MSG}}.
func refusals(routes []route.Route) func(w http.ResponseWriter, r *http.Request, status int, msg string) {
	bySegment := map[string]func(http.ResponseWriter, *http.Request, int, string){}
	for _, rt := range routes {
		seg := route.Segment(route.Path(rt.Pattern))
		if _, ok := bySegment[seg]; !ok && rt.Refuse != nil {
			bySegment[seg] = rt.Refuse
		}
	}
	return func(w http.ResponseWriter, r *http.Request, status int, msg string) {
		if f := bySegment[route.Segment(r.URL.Path)]; f != nil {
			f(w, r, status, msg)
			return
		}
		httpguard.WriteError(w, status, msg)
	}
}

// KeyedHandler returns routes behind plain API keys (each key allowed
// everything; empty keys ignored, none: no authentication) and the
// declared limits, caps and result scopes, without the request guard,
// readiness or tracing: the front door of tests and embedders that serve
// a front end alone. It panics as Handler does on a bad pattern.
func KeyedHandler(keys []string, routes ...route.Route) http.Handler {
	g, _ := access.New(access.Config{Keys: keys})      // no file: cannot fail
	h, _ := Handler(routes, Chain{Auth: g.Middleware}) // no guard: cannot fail
	return h
}
