// Package route is how a front end declares what it serves: one Route
// per pattern, with everything the front door needs to know about it
// (what a request costs of its key's rate limit, whether it holds a
// stream open, whether its results stay charged until written, how a
// refusal is written in its protocol, whether it is public). Front ends
// (opentoolapi, otc, mcpapi, statusui, metrics) return their routes as a
// []Route; package frontdoor builds the mux and the whole chain from
// them, and knows no path of its own.
package route

import (
	"net/http"
	"strings"

	"github.com/opentool-host/opentool-host/host/access"
)

// Route is one route of a front end.
type Route struct {
	// Pattern is the http.ServeMux pattern, "[METHOD ]/PATH" (e.g.
	// "POST /opentool/call", "GET /opentool/tasks/{id}", "/mcp"). Its
	// path also names the route's spans ("METHOD PATH") and its first
	// segment ("/opentool") the paths whose refusals Refuse writes.
	Pattern string
	// Handler serves the route.
	Handler http.Handler
	// Meter says what a request costs of its key's rate limit and how a
	// refused one is answered (see Meter); nil: it costs nothing.
	Meter Meter
	// Stream reports whether a request holds a long-lived response open
	// (a server-sent event stream), counted against the host's stream
	// caps (--max-streams, --max-streams-per-key); nil: never. Always
	// is the predicate of a route every request of which streams.
	Stream func(r *http.Request) bool
	// HoldsResults: the results of the request's calls stay charged
	// against --max-result-memory until its response has been written
	// (host.Host.WithResultScope).
	HoldsResults bool
	// Refuse writes a request the front door refused before the front
	// end read it (the request guard's 403 and 415, the stream caps' 429
	// and 503) in the route's protocol, for every path under the first
	// segment of Pattern's path; nil: the front door's plain
	// {"error":{"code":STATUS,"message":MSG}}. The status is given;
	// headers already set (Retry-After) must be kept.
	Refuse func(w http.ResponseWriter, r *http.Request, status int, msg string)
	// Public routes are served to anyone, before authentication (the
	// status page's files, which hold no data); the request guard still
	// applies.
	Public bool
	// Readiness: a GET or HEAD of this route's path with ?ready
	// (?ready=1, ?ready=true) is the readiness probe, which the front
	// door answers itself, to anyone, before the request guard (a kubelet
	// sends a pod address as Host and no key).
	Readiness bool
}

// Meter returns how many calls r takes of its key's rate limit (0: none;
// one per JSON-RPC request of a batch) and refuse, which answers r in the
// route's protocol when the limit refuses it (nil: the front door's plain
// JSON 429). Retry-After is already set when refuse runs; it may read
// r.Body. A Meter that reads r.Body must put it back whole for the
// handler.
type Meter func(r *http.Request) (n int, refuse func(w http.ResponseWriter, r *http.Request, rf *access.Refusal))

// One is the Meter of a route each request of which costs one call,
// refused with the front door's plain JSON 429.
func One(*http.Request) (int, func(http.ResponseWriter, *http.Request, *access.Refusal)) {
	return 1, nil
}

// OneRefusedBy is the Meter of a route each request of which costs one
// call, refused by refuse (in the route's protocol).
func OneRefusedBy(refuse func(w http.ResponseWriter, r *http.Request, rf *access.Refusal)) Meter {
	return func(*http.Request) (int, func(http.ResponseWriter, *http.Request, *access.Refusal)) {
		return 1, refuse
	}
}

// Always is the Stream predicate of a route every request of which
// holds a stream open.
func Always(*http.Request) bool { return true }

// Path is the path of a ServeMux pattern, without its {$}: "POST
// /opentool/call" → "/opentool/call", "/mcp" → "/mcp", "GET /{$}" → "/".
func Path(pattern string) string {
	if i := strings.IndexByte(pattern, '/'); i >= 0 {
		pattern = pattern[i:]
	}
	return strings.TrimSuffix(pattern, "{$}")
}

// Segment is the first segment of a path, with its slash: "/opentool/call"
// → "/opentool", "/mcp" → "/mcp", "/" → "/".
func Segment(path string) string {
	if i := strings.IndexByte(path[min(1, len(path)):], '/'); i >= 0 {
		return path[:i+1]
	}
	return path
}

// Mux returns the http.ServeMux of routes, each pattern to its Handler
// and nothing else (no authentication, limit or cap: package frontdoor
// adds those). It answers an unknown path 404 and a known path asked
// with another method 405 (with Allow). It panics, as ServeMux.Handle
// does, on a pattern that is not valid or is declared twice: a
// programming error of a front end.
func Mux(routes []Route) *http.ServeMux {
	mux := http.NewServeMux()
	for _, rt := range routes {
		mux.Handle(rt.Pattern, rt.Handler)
	}
	return mux
}
