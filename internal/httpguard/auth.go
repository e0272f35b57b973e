package httpguard

import (
	"crypto/sha256"
	"crypto/subtle"
	"net/http"
	"strings"
)

// API key authentication, as the reference OpenTool SDKs do it: the client
// sends "Authorization: Bearer <key>"; with no keys configured
// authentication is off; with keys, every route needs one of them
// (GET /opentool/version included) and a request without a valid key gets
// HTTP 401.

// The bodies of a 401 response. They say only that a key is missing or
// wrong, never which keys exist.
const (
	unauthorizedMissing = `{"error":{"code":401,"message":"unauthorized: an API key is required (send Authorization: Bearer <key>)"}}`
	unauthorizedInvalid = `{"error":{"code":401,"message":"unauthorized: the API key is not valid"}}`
)

// keySet holds the sha256 of each accepted key. Comparing fixed-size
// hashes in constant time leaks neither the keys nor their lengths.
type keySet struct {
	hashes [][sha256.Size]byte
}

// newKeySet returns the set of the non-empty keys, or nil when there are
// none (authentication off).
func newKeySet(keys []string) *keySet {
	ks := &keySet{}
	for _, k := range keys {
		if k == "" {
			continue
		}
		ks.hashes = append(ks.hashes, sha256.Sum256([]byte(k)))
	}
	if len(ks.hashes) == 0 {
		return nil
	}
	return ks
}

// allow reports whether r carries an accepted key. When it does not, it
// has written the 401 response.
func (ks *keySet) allow(w http.ResponseWriter, r *http.Request) bool {
	token, ok := bearerToken(r.Header.Get("Authorization"))
	if ok {
		sum := sha256.Sum256([]byte(token))
		match := 0
		for i := range ks.hashes { // no early exit: the time does not say which key matched
			match |= subtle.ConstantTimeCompare(sum[:], ks.hashes[i][:])
		}
		if match == 1 {
			return true
		}
	}
	h := w.Header()
	h["Content-Type"] = JSON
	body := unauthorizedMissing
	if ok {
		h["Www-Authenticate"] = wwwAuthInvalid
		body = unauthorizedInvalid
	} else {
		h["Www-Authenticate"] = wwwAuthBearer
	}
	w.WriteHeader(http.StatusUnauthorized)
	_, _ = w.Write([]byte(body))
	return false
}

var (
	wwwAuthBearer  = []string{`Bearer realm="opentool"`}
	wwwAuthInvalid = []string{`Bearer realm="opentool", error="invalid_token"`}
)

// bearerToken returns the token of an "Authorization: Bearer TOKEN" header
// value (scheme case-insensitive, RFC 7235), and false when the header is
// missing, of another scheme or has an empty token.
func bearerToken(v string) (string, bool) {
	const prefix = "Bearer "
	if len(v) < len(prefix) || !strings.EqualFold(v[:len(prefix)], prefix) {
		return "", false
	}
	t := strings.TrimSpace(v[len(prefix):])
	return t, t != ""
}

// RequireAPIKey returns h guarded by API keys: a request must carry
// "Authorization: Bearer KEY" with KEY one of keys, or it gets HTTP 401
// with WWW-Authenticate: Bearer and the body
// {"error":{"code":401,"message":"unauthorized: ..."}}. Keys are compared
// in constant time (as sha256 hashes, so their lengths do not leak). Empty
// keys are ignored; when no key is left, h is returned unchanged
// (authentication off).
//
// Every front end mounts its routes behind it: httpapi.Server wraps its
// whole mux (present and future routes, unknown paths included), and the
// command wraps the OTC handler with the same keys.
func RequireAPIKey(keys []string, h http.Handler) http.Handler {
	ks := newKeySet(keys)
	if ks == nil {
		return h
	}
	return keyGuard{ks: ks, h: h}
}

// keyGuard is the handler RequireAPIKey returns.
type keyGuard struct {
	ks *keySet
	h  http.Handler
}

// ServeHTTP implements http.Handler: 401 unless the request carries a key.
func (g keyGuard) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if g.ks.allow(w, r) {
		g.h.ServeHTTP(w, r)
	}
}
