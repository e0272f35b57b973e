package frontdoor

import (
	"net/http"
	"strconv"

	"github.com/opentool-host/opentool-host/access"
	"github.com/opentool-host/opentool-host/internal/httpguard"
)

// listings are the routes that list functions: each request takes one
// token of the key's rate limit, as a call does, so that a key cannot
// have the host build large listings faster than it may call.
var listings = map[string]bool{
	"/opentool/load":   true,
	"/opentool/export": true,
	"/otc/tools":       true,
}

// LimitListings returns next with the listing routes (GET /opentool/load,
// /opentool/export, /otc/tools) behind the request key's rate limit
// (access.Limit; the grant is put on the request by access.Guard, so this
// goes inside it). Over the limit: HTTP 429, Retry-After (seconds, rounded
// up) and {"error":{"code":429,"message":"rate limited: too many calls
// for this API key"}}. Calls take their tokens in their front end, which
// answers in its protocol; MCP takes one per JSON-RPC request, batch
// items included (mcpapi).
func LimitListings(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if listings[r.URL.Path] {
			if ok, wait := access.Limit(r.Context()); !ok {
				w.Header().Set("Retry-After", strconv.Itoa(access.RetryAfterSeconds(wait)))
				httpguard.WriteError(w, http.StatusTooManyRequests, access.RateLimitedMessage)
				return
			}
		}
		next.ServeHTTP(w, r)
	})
}
