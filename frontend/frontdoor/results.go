package frontdoor

import (
	"context"
	"net/http"
)

// ResultScoper gives a request a scope that the host charges the results
// of its calls to, released when the request is done
// (host.Host.WithResultScope).
type ResultScoper interface {
	WithResultScope(ctx context.Context) (context.Context, func())
}

// HoldResults returns next with every request run in a result scope of
// h: the result stays charged against --max-result-memory until the
// response has been written, however slowly the client reads, and a call
// whose result would exceed it fails as busy. The front door puts it on
// the routes that declare route.Route.HoldsResults (POST /opentool/call,
// POST /otc/call); streams (items are written one at a time) and MCP
// (the SDK writes the response after the tool handler returns) do not.
func HoldResults(h ResultScoper, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ctx, release := h.WithResultScope(r.Context())
		defer release()
		next.ServeHTTP(w, r.WithContext(ctx))
	})
}
