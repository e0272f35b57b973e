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

// HoldResults returns next with every call request of the OpenTool API
// and of Open Tool Calling (POST /opentool/call, POST /otc/call) run in a
// result scope of h: the result stays charged against
// --max-result-memory until the response has been written, however
// slowly the client reads, and a call whose result would exceed it fails
// as busy. Streams (items are written one at a time) and MCP (the SDK
// writes the response after the tool handler returns) are not charged.
func HoldResults(h ResultScoper, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost || (r.URL.Path != "/opentool/call" && r.URL.Path != "/otc/call") {
			next.ServeHTTP(w, r)
			return
		}
		ctx, release := h.WithResultScope(r.Context())
		defer release()
		next.ServeHTTP(w, r.WithContext(ctx))
	})
}
