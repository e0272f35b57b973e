package frontdoor_test

import (
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/opentool-host/opentool-host/frontend/frontdoor"
	"github.com/opentool-host/opentool-host/frontend/route"
	"github.com/opentool-host/opentool-host/host/access"
)

// meter is a route's Meter for TestLimit: cost n for path (0 for any
// other), counted.
type meter struct {
	path  string
	n     int
	asked int
}

func (m *meter) Meter(r *http.Request) (int, func(http.ResponseWriter, *http.Request, *access.Refusal)) {
	m.asked++
	if r.URL.Path != m.path {
		return 0, nil
	}
	return m.n, func(w http.ResponseWriter, _ *http.Request, rf *access.Refusal) {
		w.WriteHeader(http.StatusTeapot)
		_, _ = w.Write([]byte(rf.Message))
	}
}

// TestLimit: the chain's one rate limit asks the route's meter what a
// request costs only for a key with a rate, takes the cost all at once,
// answers a refusal with the meter's refuse (or the plain 429) after
// Retry-After, and lets free keys and free requests through.
func TestLimit(t *testing.T) {
	file := filepath.Join(t.TempDir(), "keys.json")
	if err := os.WriteFile(file, []byte(`{"keys":[{"name":"r","key":"rk","allow":["*"],"rate":{"per_second":0.001,"burst":3}},{"name":"free","key":"fk","allow":["*"]}]}`), 0o600); err != nil {
		t.Fatal(err)
	}
	guard, err := access.New(access.Config{File: file})
	if err != nil {
		t.Fatal(err)
	}
	calls, lists := &meter{path: "/call", n: 2}, &meter{path: "/list", n: 1}
	served := 0
	serve := http.HandlerFunc(func(http.ResponseWriter, *http.Request) { served++ })
	nolog := func(string, ...any) {}
	mux := http.NewServeMux() // each route its meter, as the front door's table has them
	mux.Handle("/call", frontdoor.Limit(serve, nolog, calls.Meter))
	mux.Handle("/list", frontdoor.Limit(serve, nolog, lists.Meter))
	mux.Handle("/other", frontdoor.Limit(serve, nolog, lists.Meter))
	h := guard.Middleware(mux)
	do := func(key, path string) *httptest.ResponseRecorder {
		req := httptest.NewRequest(http.MethodPost, path, strings.NewReader("{}"))
		req.Header.Set("Authorization", "Bearer "+key)
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		return rec
	}
	for range 5 {
		if rec := do("fk", "/call"); rec.Code != 200 {
			t.Fatalf("a key without a rate: %d", rec.Code)
		}
	}
	if calls.asked != 0 || lists.asked != 0 {
		t.Fatalf("a key without a rate had its requests metered (%d, %d)", calls.asked, lists.asked)
	}
	if rec := do("rk", "/call"); rec.Code != 200 { // 2 of 3
		t.Fatalf("first call: %d", rec.Code)
	}
	rec := do("rk", "/call") // 2 more: refused by the call meter's refuse
	if rec.Code != http.StatusTeapot || rec.Header().Get("Retry-After") == "" || rec.Body.String() != access.RateLimitedMessage {
		t.Fatalf("over the limit: %d Retry-After %q %s", rec.Code, rec.Header().Get("Retry-After"), rec.Body)
	}
	if rec := do("rk", "/other"); rec.Code != 200 {
		t.Fatalf("a path no front end meters: %d", rec.Code)
	}
	if rec := do("rk", "/list"); rec.Code != 200 { // the last token: the refused call took none
		t.Fatalf("a listing with one token left: %d", rec.Code)
	}
	// The bucket is empty: a front end without a refuse gets the plain
	// 429.
	plain := guard.Middleware(frontdoor.Limit(serve, nolog, route.One))
	req := httptest.NewRequest(http.MethodGet, "/load", nil)
	req.Header.Set("Authorization", "Bearer rk")
	rec = httptest.NewRecorder()
	plain.ServeHTTP(rec, req)
	if rec.Code != http.StatusTooManyRequests || !strings.Contains(rec.Body.String(), `"code":429`) || rec.Header().Get("Retry-After") == "" {
		t.Fatalf("a meter without refuse: %d %s", rec.Code, rec.Body)
	}
	if served != 8 {
		t.Errorf("served %d requests, want 8", served)
	}
}
