package httpapi_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"sync"
	"testing"

	"github.com/opentool-host/opentool-host/access"
	"github.com/opentool-host/opentool-host/host"
	"github.com/opentool-host/opentool-host/httpapi"
	"github.com/opentool-host/opentool-host/internal/testutil"
	"github.com/opentool-host/opentool-host/opentool"
)

// statesBackend is a Backend whose plugins are in the states set; it
// serves no function.
type statesBackend struct {
	mu     sync.Mutex
	states []host.State
}

func (b *statesBackend) set(states ...host.State) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.states = states
}

func (b *statesBackend) Call(context.Context, string, []byte) ([]byte, error) {
	return nil, errors.New("no functions")
}

func (b *statesBackend) StreamCall(context.Context, string, []byte, func([]byte) error) error {
	return errors.New("no functions")
}

func (b *statesBackend) Document(title, version, _ string) *opentool.OpenTool {
	return &opentool.OpenTool{OpenTool: "1.1.0", Info: opentool.Info{Title: title, Version: version}}
}

func (b *statesBackend) Plugins() []host.PluginStatus {
	b.mu.Lock()
	defer b.mu.Unlock()
	out := make([]host.PluginStatus, len(b.states))
	for i, st := range b.states {
		out[i] = host.PluginStatus{Name: string(rune('a' + i)), State: st, Functions: []string{}}
	}
	return out
}

func TestSettled(t *testing.T) {
	for st, want := range map[host.State]bool{
		host.StateReady: true, host.StateDegraded: true, host.StateFailed: true, host.StateDraining: true, host.StateStopped: true,
		host.StateStarting: false, host.StateRestarting: false,
	} {
		if got := httpapi.Settled(st); got != want {
			t.Errorf("Settled(%s) = %v, want %v", st, got, want)
		}
	}
}

// TestReadinessWithoutKey: GET /health?ready=1 answers anyone with the
// status alone, 200 only when every plugin is ready or failed for good
// and the server is not draining; the full /health stays behind the
// keys.
func TestReadinessWithoutKey(t *testing.T) {
	const key = "k-ready"
	b := &statesBackend{}
	api := httpapi.New(b, httpapi.Config{Version: "1.2.3", Logger: testutil.Logger(t)})
	guard, err := access.New(access.Config{Keys: []string{key}})
	if err != nil {
		t.Fatal(err)
	}
	base := testutil.Serve(t, api.Front(guard.Middleware(api)))
	ready := base + "/health?ready=1"

	steps := []struct {
		states []host.State
		code   int
		body   string
	}{
		{nil, 200, `{"status":"ready"}`},
		{[]host.State{host.StateReady, host.StateReady}, 200, `{"status":"ready"}`},
		{[]host.State{host.StateReady, host.StateFailed}, 200, `{"status":"ready"}`},
		{[]host.State{host.StateReady, host.StateDraining, host.StateStopped}, 200, `{"status":"ready"}`},
		{[]host.State{host.StateReady, host.StateStarting}, 503, `{"status":"starting"}`},
		{[]host.State{host.StateRestarting, host.StateFailed}, 503, `{"status":"starting"}`},
		{[]host.State{host.StateReady}, 200, `{"status":"ready"}`},
	}
	for _, s := range steps {
		b.set(s.states...)
		code, h, body := rawRequest(t, http.MethodGet, ready, "")
		wantResponse(t, "readiness of "+stateNames(s.states), code, body, s.code, s.body)
		if h.Get("Content-Type") != "application/json" || h.Get("Cache-Control") != "no-store" {
			t.Errorf("readiness headers: %v", h)
		}
	}
	for _, q := range []string{"?ready", "?ready=true", "?ready=1&x=y"} {
		code, _, body := rawRequest(t, http.MethodGet, base+"/health"+q, "")
		wantResponse(t, "GET /health"+q, code, body, 200, `{"status":"ready"}`)
	}
	if code, _, body := rawRequest(t, http.MethodHead, ready, ""); code != 200 || body != "" {
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
	var full httpapi.Health
	if err := json.Unmarshal([]byte(body), &full); code != 200 || err != nil || full.Ready != httpapi.StatusReady || len(full.Plugins) != 1 {
		t.Errorf("full /health with the key: %d %s (%v)", code, body, err)
	}

	// Drain: 503 draining for good, whatever the plugins; calls are
	// still served (here: /opentool/version with the key).
	api.Drain()
	for _, states := range [][]host.State{{host.StateReady}, {host.StateStarting}} {
		b.set(states...)
		code, _, body := rawRequest(t, http.MethodGet, ready, "")
		wantResponse(t, "readiness while draining, "+stateNames(states), code, body, 503, `{"status":"draining"}`)
	}
	req, _ := http.NewRequest(http.MethodGet, base+"/opentool/version", nil)
	req.Header.Set("Authorization", "Bearer "+key)
	resp, err := testHTTP.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 200 || !resp.Close {
		t.Errorf("version while draining: %d, Close %v; want 200 with Connection: close", resp.StatusCode, resp.Close)
	}
	code, _, body = rawRequest(t, http.MethodGet, base+"/health", "", "Authorization: Bearer "+key)
	if err := json.Unmarshal([]byte(body), &full); code != 200 || err != nil || full.Ready != httpapi.StatusDraining {
		t.Errorf("full /health while draining: %d %s (%v)", code, body, err)
	}
}

// TestReadinessOnGuardedRoute: the API's own GET /health?ready=1 (no
// Front in front) answers the same, behind the key.
func TestReadinessOnGuardedRoute(t *testing.T) {
	b := &statesBackend{}
	b.set(host.StateStarting)
	api := httpapi.New(b, httpapi.Config{APIKeys: []string{"k"}, Logger: testutil.Logger(t)})
	base := testutil.Serve(t, api)
	if code, _, _ := rawRequest(t, http.MethodGet, base+"/health?ready=1", ""); code != http.StatusUnauthorized {
		t.Errorf("without Front and without a key: %d, want 401", code)
	}
	code, _, body := rawRequest(t, http.MethodGet, base+"/health?ready=1", "", "Authorization: Bearer k")
	wantResponse(t, "readiness with the key", code, body, 503, `{"status":"starting"}`)
}

func stateNames(states []host.State) string {
	s := "["
	for i, st := range states {
		if i > 0 {
			s += " "
		}
		s += string(st)
	}
	return s + "]"
}
