package opentoolapi_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/opentool-host/opentool-host/frontend/frontdoor"
	"github.com/opentool-host/opentool-host/frontend/httpguard"
	"github.com/opentool-host/opentool-host/frontend/opentoolapi"
	"github.com/opentool-host/opentool-host/testkit"
)

const (
	bodyMissingKey = `{"error":{"code":401,"message":"unauthorized: an API key is required (send Authorization: Bearer <key>)"}}`
	bodyInvalidKey = `{"error":{"code":401,"message":"unauthorized: the API key is not valid"}}`
)

// authRoutes is every route, with a request body that would succeed.
var authRoutes = []struct{ method, path, body string }{
	{http.MethodGet, "/opentool/version", ""},
	{http.MethodPost, "/opentool/call", `{"jsonrpc":"2.0","method":"count","params":{},"id":"a"}`},
	{http.MethodPost, "/opentool/streamCall", `{"jsonrpc":"2.0","method":"sequentiallyRead","params":{},"id":"a"}`},
	{http.MethodGet, "/opentool/load", ""},
	{http.MethodGet, "/health", ""},
}

func TestAPIKeysEveryRoute(t *testing.T) {
	const key1, key2 = "bb31b6a6-1fda-4214-8cd6-b1403842070c", "second-key"
	base := startMockAPI(t, opentoolapi.Config{}, key1, "", key2)

	rejected := []struct {
		name, auth, body, challenge string
	}{
		{"missing", "", bodyMissingKey, `Bearer realm="opentool"`},
		{"wrong key", "Bearer nope", bodyInvalidKey, `Bearer realm="opentool", error="invalid_token"`},
		{"key prefix", "Bearer " + key1[:10], bodyInvalidKey, `Bearer realm="opentool", error="invalid_token"`},
		{"key plus suffix", "Bearer " + key1 + "x", bodyInvalidKey, `Bearer realm="opentool", error="invalid_token"`},
		{"empty token", "Bearer ", bodyMissingKey, `Bearer realm="opentool"`},
		{"basic scheme", "Basic " + key1, bodyMissingKey, `Bearer realm="opentool"`},
		{"bare key", key1, bodyMissingKey, `Bearer realm="opentool"`},
	}
	for _, rt := range authRoutes {
		for _, rj := range rejected {
			var hdr []string
			if rj.auth != "" {
				hdr = append(hdr, "Authorization: "+rj.auth)
			}
			if rt.method == http.MethodPost {
				hdr = append(hdr, "Content-Type: application/json")
			}
			st, h, body := rawRequest(t, rt.method, base+rt.path, rt.body, hdr...)
			wantResponse(t, rt.path+" "+rj.name, st, body, http.StatusUnauthorized, rj.body)
			if got := h.Get("WWW-Authenticate"); got != rj.challenge {
				t.Errorf("%s %s: WWW-Authenticate %q, want %q", rt.path, rj.name, got, rj.challenge)
			}
			if strings.Contains(body, key1) || strings.Contains(body, key2) {
				t.Errorf("%s %s: the 401 body leaks a key: %s", rt.path, rj.name, body)
			}
		}
		for _, auth := range []string{"Bearer " + key1, "Bearer " + key2, "bearer " + key2, "Bearer  " + key1 + " "} {
			hdr := []string{"Authorization: " + auth}
			if rt.method == http.MethodPost {
				hdr = append(hdr, "Content-Type: application/json")
			}
			if st, _, body := rawRequest(t, rt.method, base+rt.path, rt.body, hdr...); st != http.StatusOK {
				t.Errorf("%s with %q: HTTP %d %s, want 200", rt.path, auth, st, body)
			}
		}
	}
	// Unknown paths do not tell whether they exist.
	st, _, body := rawRequest(t, http.MethodGet, base+"/opentool/nothing", "")
	wantResponse(t, "unknown path", st, body, http.StatusUnauthorized, bodyMissingKey)
}

func TestAPIKeysOff(t *testing.T) {
	for _, keys := range [][]string{nil, {}, {""}} {
		base := testkit.Serve(t, frontdoor.KeyedHandler(keys, opentoolapi.New(&fakeStreamer{}, opentoolapi.Config{Version: "1.0.0"}).Routes()...))
		for _, auth := range []string{"", "Authorization: Bearer whatever"} {
			var hdr []string
			if auth != "" {
				hdr = append(hdr, auth)
			}
			st, _, body := rawRequest(t, http.MethodGet, base+"/opentool/version", "", hdr...)
			wantResponse(t, "version without keys", st, body, http.StatusOK, `{"version":"1.0.0"}`)
		}
	}
}

func TestRequireAPIKey(t *testing.T) {
	ok := http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write([]byte("ok")) })
	if h := httpguard.RequireAPIKey([]string{"", ""}, ok); h == nil {
		t.Fatal("nil handler")
	}
	base := testkit.Serve(t, httpguard.RequireAPIKey([]string{"k"}, ok))
	st, _, body := rawRequest(t, http.MethodGet, base+"/otc/anything", "")
	wantResponse(t, "no key", st, body, http.StatusUnauthorized, bodyMissingKey)
	st, _, body = rawRequest(t, http.MethodGet, base+"/otc/anything", "", "Authorization: Bearer k")
	wantResponse(t, "key", st, body, http.StatusOK, "ok")

	open := testkit.Serve(t, httpguard.RequireAPIKey(nil, ok))
	st, _, body = rawRequest(t, http.MethodGet, open+"/x", "")
	wantResponse(t, "no keys configured", st, body, http.StatusOK, "ok")
}
