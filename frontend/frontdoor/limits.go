package frontdoor

import (
	"net/http"
	"strconv"

	"github.com/opentool-host/opentool-host/frontend/httpguard"
	"github.com/opentool-host/opentool-host/frontend/route"
	"github.com/opentool-host/opentool-host/host/access"
)

// Limit returns next behind the per-key rate limit (access.Limit, Chain
// step 6): a request whose key has a rate (the grant access.Guard put on
// it, so this goes inside authentication) takes the calls its route's
// meter says it costs, all at once (none: it passes). Over the limit it
// answers with the meter's refuse, in the route's protocol (the status
// is the front end's to choose: HTTP 429, or 200 with a JSON-RPC error
// where its clients expect one), after a Retry-After header (seconds, rounded
// up) and one log line naming the key; without one, HTTP 429 and
// {"error":{"code":429,"message":"rate limited: too many calls for this
// API key"}}. Keys without a rate cost nothing here: their requests are
// not read.
func Limit(next http.Handler, log func(msg string, args ...any), meter route.Meter) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !access.Limited(r.Context()) {
			next.ServeHTTP(w, r)
			return
		}
		n, refuse := meter(r)
		if n == 0 {
			next.ServeHTTP(w, r)
			return
		}
		rf := access.Limit(r.Context(), n)
		if rf == nil {
			next.ServeHTTP(w, r)
			return
		}
		log("request refused: rate limit", "key", access.GrantFrom(r.Context()).Name(), "path", r.URL.Path, "calls", n, "retry_after_ms", access.RetryAfterMs(rf.RetryAfter))
		w.Header().Set("Retry-After", strconv.Itoa(access.RetryAfterSeconds(rf.RetryAfter)))
		if refuse == nil {
			httpguard.WriteError(w, http.StatusTooManyRequests, rf.Message)
			return
		}
		refuse(w, r, rf)
	})
}
