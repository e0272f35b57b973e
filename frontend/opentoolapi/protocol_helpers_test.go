package opentoolapi_test

import (
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/opentool-host/opentool-host/frontend/frontdoor"
	"github.com/opentool-host/opentool-host/frontend/opentoolapi"
	"github.com/opentool-host/opentool-host/testkit"
)

// startMockAPI starts a real host serving the mock plugin, serves it with
// opentoolapi.New(h, cfg) behind the front door with keys (none: no
// authentication) on loopback and returns the base URL
// "http://127.0.0.1:PORT". Everything stops when the test ends.
func startMockAPI(t *testing.T, cfg opentoolapi.Config, keys ...string) string {
	t.Helper()
	h := testkit.StartHost(t, nil, "./plugins/mock")
	if cfg.Version == "" {
		cfg.Version = "1.2.3"
	}
	if cfg.Logger == nil {
		cfg.Logger = testkit.Logger(t)
	}
	return testkit.Serve(t, frontdoor.KeyedHandler(keys, opentoolapi.New(h, cfg).Routes()...))
}

// testHTTP is the client of these tests: every request is bounded.
var testHTTP = &http.Client{Timeout: 30 * time.Second}

// rawRequest sends body (when method is POST) with the given headers
// ("Name: value" pairs) and returns the status, the response headers and
// the body.
func rawRequest(t *testing.T, method, url, body string, headers ...string) (int, http.Header, string) {
	t.Helper()
	var rd io.Reader
	if method == http.MethodPost {
		rd = strings.NewReader(body)
	}
	req, err := http.NewRequest(method, url, rd)
	if err != nil {
		t.Fatal(err)
	}
	for _, h := range headers {
		name, value, ok := strings.Cut(h, ": ")
		if !ok {
			t.Fatalf("bad header %q", h)
		}
		req.Header.Set(name, value)
	}
	resp, err := testHTTP.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, url, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("%s %s: read body: %v", method, url, err)
	}
	return resp.StatusCode, resp.Header, string(b)
}

// postJSON posts body to url with Content-Type application/json.
func postJSON(t *testing.T, url, body string, headers ...string) (int, http.Header, string) {
	t.Helper()
	return rawRequest(t, http.MethodPost, url, body, append([]string{"Content-Type: application/json"}, headers...)...)
}

// wantResponse fails the test unless the status and body are exactly as
// given.
func wantResponse(t *testing.T, what string, status int, body string, wantStatus int, wantBody string) {
	t.Helper()
	if status != wantStatus || body != wantBody {
		t.Errorf("%s:\n got HTTP %d %s\nwant HTTP %d %s", what, status, body, wantStatus, wantBody)
	}
}
