package frontdoor

import (
	"net/http"
	"strconv"

	"github.com/opentool-host/opentool-host/access"
	"github.com/opentool-host/opentool-host/internal/httpguard"
)

// Meter is a front end's part in the chain's per-key rate limit (Chain
// step 6): what one request costs and how to refuse it in the front
// end's protocol. httpapi.Server, otc's handler and mcpapi.HTTPHandler
// implement it; the limit itself is taken in one place, Limit.
type Meter interface {
	// Meter returns how many calls r takes of its key's rate limit: 1
	// for a call or a listing, one per request of a JSON-RPC batch, 0
	// for what is not this front end's or costs nothing (a
	// notification, a GET stream, a task poll's 404). It may read r.Body
	// and must then put it back whole for the front end. refuse answers
	// r when it is refused (nil: the front door's plain JSON 429).
	//
	// refuse answers a refused request in the front end's protocol: the
	// status is its to choose (HTTP 429, or 200 with a JSON-RPC error
	// where its clients expect one); Retry-After is already set. It may
	// read what is left of r.Body. (A func type, not a named one, so
	// that front ends implement Meter without importing this package.)
	Meter(r *http.Request) (n int, refuse func(w http.ResponseWriter, r *http.Request, rf *access.Refusal))
}

// Limit returns next behind the per-key rate limit (access.Limit): a
// request whose key has a rate (the grant access.Guard put on it, so
// this goes inside authentication) takes the calls the first of meters
// that claims it says it costs, all at once. Over the limit it answers
// with the meter's refuse, after a Retry-After header (seconds, rounded
// up) and one log line naming the key; without one, HTTP 429 and
// {"error":{"code":429,"message":"rate limited: too many calls for this
// API key"}}. Keys without a rate cost nothing here: their requests are
// not read.
func Limit(next http.Handler, log func(msg string, args ...any), meters ...Meter) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !access.Limited(r.Context()) {
			next.ServeHTTP(w, r)
			return
		}
		for _, m := range meters {
			n, refuse := m.Meter(r)
			if n == 0 {
				continue
			}
			rf := access.Limit(r.Context(), n)
			if rf == nil {
				break
			}
			log("request refused: rate limit", "key", access.GrantFrom(r.Context()).Name(), "path", r.URL.Path, "calls", n, "retry_after_ms", access.RetryAfterMs(rf.RetryAfter))
			w.Header().Set("Retry-After", strconv.Itoa(access.RetryAfterSeconds(rf.RetryAfter)))
			if refuse == nil {
				httpguard.WriteError(w, http.StatusTooManyRequests, rf.Message)
				return
			}
			refuse(w, r, rf)
			return
		}
		next.ServeHTTP(w, r)
	})
}
