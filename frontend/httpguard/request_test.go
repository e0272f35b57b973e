package httpguard

import (
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// TestRequestGuardRules: the Host, Origin and Content-Type rules, case by
// case, on a guard listening on 127.0.0.1:9627 that allows one proxy name
// and one web app origin.
func TestRequestGuardRules(t *testing.T) {
	var refused []int
	g := &RequestGuard{
		Listen:         &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 9627},
		AllowedHosts:   []string{"Tools.Example.com"},
		AllowedOrigins: []string{"https://app.example.com"},
		Refuse: func(w http.ResponseWriter, _ *http.Request, status int, _ string) {
			refused = append(refused, status)
			w.WriteHeader(status)
		},
	}
	h, err := g.Wrap(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(200) }))
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		method, target, host, origin, ctype string
		want                                int
	}{
		{"GET", "/opentool/load", "127.0.0.1:9627", "", "", 200},
		{"GET", "/opentool/load", "localhost:9627", "", "", 200},
		{"GET", "/opentool/load", "LOCALHOST.:9627", "", "", 200},
		{"GET", "/opentool/load", "[::1]:9627", "", "", 200},
		{"GET", "/opentool/load", "127.9.9.9", "", "", 200},
		{"GET", "/opentool/load", "tools.example.com", "", "", 200},
		{"GET", "/opentool/load", "tools.example.com:443", "", "", 200},
		{"GET", "/opentool/load", "evil.example", "", "", 403},
		{"GET", "/opentool/load", "127.0.0.1.evil.example", "", "", 403},
		{"GET", "/opentool/load", "10.1.2.3:9627", "", "", 403}, // not an address of this listener
		{"GET", "/opentool/load", "", "", "", 403},
		{"GET", "/health?ready=1", "evil.example", "", "", 403}, // readiness is answered before the guard (frontdoor.Readiness)
		{"GET", "/health", "evil.example", "", "", 403},
		{"GET", "/opentool/load", "127.0.0.1:9627", "http://127.0.0.1:9627", "", 200},
		{"GET", "/opentool/load", "127.0.0.1:9627", "http://127.0.0.1:9628", "", 403},
		{"GET", "/opentool/load", "127.0.0.1:9627", "https://app.example.com", "", 200},
		{"GET", "/opentool/load", "127.0.0.1:9627", "https://APP.example.com", "", 200},
		{"GET", "/opentool/load", "127.0.0.1:9627", "null", "", 403},
		{"GET", "/opentool/load", "127.0.0.1:9627", "http://evil.example", "", 403},
		{"POST", "/opentool/call", "127.0.0.1:9627", "", "application/json", 200},
		{"POST", "/opentool/call", "127.0.0.1:9627", "", "application/json; charset=utf-8", 200},
		{"POST", "/mcp", "127.0.0.1:9627", "", "application/json-rpc", 200},
		{"POST", "/opentool/call", "127.0.0.1:9627", "", "", 415},
		{"POST", "/opentool/call", "127.0.0.1:9627", "", "text/plain", 415},
		{"POST", "/opentool/call", "127.0.0.1:9627", "", "application/x-www-form-urlencoded", 415},
		{"POST", "/opentool/call", "127.0.0.1:9627", "", "multipart/form-data; boundary=x", 415},
		{"POST", "/opentool/call", "127.0.0.1:9627", "", "application/jsonx", 415},
		{"DELETE", "/mcp", "127.0.0.1:9627", "", "", 200},
	} {
		r := httptest.NewRequest(c.method, c.target, strings.NewReader("{}"))
		r.Host = c.host
		if c.origin != "" {
			r.Header.Set("Origin", c.origin)
		}
		if c.ctype != "" {
			r.Header.Set("Content-Type", c.ctype)
		}
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		if w.Code != c.want {
			t.Errorf("%s %s Host %q Origin %q Content-Type %q: %d, want %d", c.method, c.target, c.host, c.origin, c.ctype, w.Code, c.want)
		}
	}
	if _, err := (&RequestGuard{AllowedOrigins: []string{"app.example.com"}}).Wrap(http.NotFoundHandler()); err == nil {
		t.Error("an --allowed-origin without a scheme was accepted")
	}
}

// TestHeaderCanonical: Header reads what Get reads for canonical keys
// (every literal key given to it is: docs' TestHeaderKeysCanonical), and
// allocates nothing.
func TestHeaderCanonical(t *testing.T) {
	h := http.Header{}
	h.Set("mcp-session-id", "s1")
	h.Add("Last-Event-ID", "7")
	h.Add("Last-Event-ID", "8")
	for _, k := range []string{"Mcp-Session-Id", "Last-Event-Id", "Mcp-Protocol-Version"} {
		if got, want := Header(h, k), h.Get(k); got != want {
			t.Errorf("Header(%q) = %q, Get says %q", k, got, want)
		}
	}
	if n := testing.AllocsPerRun(100, func() { _ = Header(h, "Last-Event-Id") }); n != 0 {
		t.Errorf("Header allocates %v times", n)
	}
}
