package frontdoor_test

import (
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/opentool-host/opentool-host/frontend/frontdoor"
	"github.com/opentool-host/opentool-host/frontend/opentoolapi"
	"github.com/opentool-host/opentool-host/frontend/route"
	"github.com/opentool-host/opentool-host/host/access"
	"github.com/opentool-host/opentool-host/host/core"
	"github.com/opentool-host/opentool-host/host/supervise"
	"github.com/opentool-host/opentool-host/testkit"
)

// rawRequest sends one request with headers ("Name: value"; "Host: NAME"
// sets the request's Host) and returns the status, headers and body.
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
		k, v, _ := strings.Cut(h, ": ")
		if k == "Host" {
			req.Host = v // net/http sends req.Host, not a Host header
			continue
		}
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, resp.Header, string(b)
}

func wantResponse(t *testing.T, what string, code int, body string, wantCode int, wantBody string) {
	t.Helper()
	if code != wantCode || body != wantBody {
		t.Errorf("%s: %d %s, want %d %s", what, code, body, wantCode, wantBody)
	}
}

// TestReadinessWithoutKey: GET /health?ready=1 answers anyone with the
// status alone, 200 only when every plugin is ready or failed for good
// and the server is not draining; the full /health stays behind the
// keys.
func TestReadinessWithoutKey(t *testing.T) {
	const key = "k-ready"
	b := &testkit.StatesBackend{}
	ready := &frontdoor.Readiness{Plugins: b.Plugins}
	api := opentoolapi.New(b, opentoolapi.Config{Version: "1.2.3", Logger: testkit.Logger(t), Ready: ready.Status})
	guard, err := access.New(access.Config{Keys: []string{key}})
	if err != nil {
		t.Fatal(err)
	}
	base := testkit.Serve(t, ready.Wrap(guard.Middleware(route.Mux(api.Routes())), api.Routes()))
	readyURL := base + "/health?ready=1"

	steps := []struct {
		states []core.State
		code   int
		body   string
	}{
		{nil, 200, `{"status":"ready"}`},
		{[]core.State{core.StateReady, core.StateReady}, 200, `{"status":"ready"}`},
		{[]core.State{core.StateReady, core.StateFailed}, 200, `{"status":"ready"}`},
		{[]core.State{core.StateReady, core.StateDraining, core.StateStopped}, 200, `{"status":"ready"}`},
		{[]core.State{core.StateReady, core.StateStarting}, 503, `{"status":"starting"}`},
		{[]core.State{core.StateRestarting, core.StateFailed}, 503, `{"status":"starting"}`},
		{[]core.State{core.StateReady}, 200, `{"status":"ready"}`},
	}
	for _, s := range steps {
		b.Set(s.states...)
		code, h, body := rawRequest(t, http.MethodGet, readyURL, "")
		wantResponse(t, "readiness of "+stateNames(s.states), code, body, s.code, s.body)
		if h.Get("Content-Type") != "application/json" || h.Get("Cache-Control") != "no-store" {
			t.Errorf("readiness headers: %v", h)
		}
	}
	for _, q := range []string{"?ready", "?ready=true", "?ready=1&x=y"} {
		code, _, body := rawRequest(t, http.MethodGet, base+"/health"+q, "")
		wantResponse(t, "GET /health"+q, code, body, 200, `{"status":"ready"}`)
	}
	if code, _, body := rawRequest(t, http.MethodHead, readyURL, ""); code != 200 || body != "" {
		t.Errorf("HEAD readiness: %d %q", code, body)
	}
	// Everything else needs the key: the full /health, ?ready=0, another
	// method, another path.
	for _, r := range []struct{ method, path string }{
		{http.MethodGet, "/health"}, {http.MethodGet, "/health?ready=0"}, {http.MethodPost, "/health?ready=1"},
		{http.MethodGet, "/health/?ready=1"}, {http.MethodGet, "/opentool/version?ready=1"},
	} {
		if code, _, body := rawRequest(t, r.method, base+r.path, "{}"); code != http.StatusUnauthorized {
			t.Errorf("%s %s without a key: %d %s, want 401", r.method, r.path, code, body)
		}
	}
	code, _, body := rawRequest(t, http.MethodGet, base+"/health", "", "Authorization: Bearer "+key)
	var full opentoolapi.Health
	if err := json.Unmarshal([]byte(body), &full); code != 200 || err != nil || full.Ready != supervise.ReadinessReady || len(full.Plugins) != 1 {
		t.Errorf("full /health with the key: %d %s (%v)", code, body, err)
	}

	// Drain: 503 draining for good, whatever the plugins; calls are
	// still served (here: /opentool/version with the key).
	ready.Drain()
	for _, states := range [][]core.State{{core.StateReady}, {core.StateStarting}} {
		b.Set(states...)
		code, _, body := rawRequest(t, http.MethodGet, readyURL, "")
		wantResponse(t, "readiness while draining, "+stateNames(states), code, body, 503, `{"status":"draining"}`)
	}
	req, _ := http.NewRequest(http.MethodGet, base+"/opentool/version", nil)
	req.Header.Set("Authorization", "Bearer "+key)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 200 || !resp.Close {
		t.Errorf("version while draining: %d, Close %v; want 200 with Connection: close", resp.StatusCode, resp.Close)
	}
	code, _, body = rawRequest(t, http.MethodGet, base+"/health", "", "Authorization: Bearer "+key)
	if err := json.Unmarshal([]byte(body), &full); code != 200 || err != nil || full.Ready != supervise.ReadinessDraining {
		t.Errorf("full /health while draining: %d %s (%v)", code, body, err)
	}
}

func stateNames(states []core.State) string {
	s := "["
	for i, st := range states {
		if i > 0 {
			s += " "
		}
		s += string(st)
	}
	return s + "]"
}
