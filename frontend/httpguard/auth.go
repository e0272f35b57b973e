package httpguard

import (
	"net/http"

	"github.com/opentool-host/opentool-host/host/access"
)

// RequireAPIKey returns h guarded by plain API keys, each allowed
// everything: a request must carry "Authorization: Bearer KEY" with KEY
// one of keys, or it gets HTTP 401 with WWW-Authenticate: Bearer and the
// body {"error":{"code":401,"message":"unauthorized: ..."}}. Keys are
// compared in constant time (as sha256 hashes, so their lengths do not
// leak). Empty keys are ignored; when no key is left, h is returned
// unchanged (authentication off).
//
// It is access.Guard.Middleware with plain keys; the command uses a Guard
// of its own (also --api-keys-file) around every route.
func RequireAPIKey(keys []string, h http.Handler) http.Handler {
	g, _ := access.New(access.Config{Keys: keys}) // no file: cannot fail
	return g.Middleware(h)
}
