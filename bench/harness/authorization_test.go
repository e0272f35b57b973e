package harness

import (
	"bytes"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
)

// TestLoadgenSendsAuthorization runs the load generator's loop
// (ServeLoadgen) against a real HTTP server on 127.0.0.1 that answers
// 401 to a request without "Authorization: Bearer secret": a plain run
// and an MCP run with sessions (initialize, notifications/initialized,
// tools/call) with LoadRequest.Authorization must pass, the same plain
// run without it must fail, and the MCP sessions of two Authorization
// values must stay apart (each initialized by its own caller).
func TestLoadgenSendsAuthorization(t *testing.T) {
	var mu sync.Mutex
	inits := map[string]int{} // initialize requests by Authorization
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		auth := r.Header.Get("Authorization")
		if !strings.HasPrefix(auth, "Bearer secret") {
			http.Error(w, "no credential", http.StatusUnauthorized)
			return
		}
		var msg struct{ Method string }
		_ = json.NewDecoder(r.Body).Decode(&msg)
		switch msg.Method {
		case "initialize":
			mu.Lock()
			inits[auth]++
			mu.Unlock()
			w.Header().Set("Mcp-Session-Id", "s-"+auth[len("Bearer "):])
			_, _ = w.Write([]byte(`{"jsonrpc":"2.0","id":0,"result":{}}`))
		case "notifications/initialized":
			w.WriteHeader(http.StatusAccepted)
		default:
			if strings.HasPrefix(r.Header.Get("Mcp-Session-Id"), "s-") && r.Header.Get("Mcp-Session-Id") != "s-"+auth[len("Bearer "):] {
				http.Error(w, "another caller's session", http.StatusNotFound)
				return
			}
			_, _ = w.Write([]byte(`{"jsonrpc":"2.0","id":1,"result":{"ok":true}}`))
		}
	}))
	defer srv.Close()
	body := []byte(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{}}`)
	reqs := []LoadRequest{
		{URL: srv.URL, Body: body, Clients: 2, N: 4, Contains: "ok", Authorization: "Bearer secret"},
		{URL: srv.URL, Body: body, Clients: 2, N: 4, Contains: "ok"},
		// Warm: one call per client, so that each opens its session (a
		// run of N calls may be taken by one client alone).
		{URL: srv.URL, Body: body, Clients: 2, Warm: true, Contains: "ok", Authorization: "Bearer secret", MCP: &MCPLoad{Sessions: true}},
		{URL: srv.URL, Body: body, Clients: 2, Warm: true, Contains: "ok", Authorization: "Bearer secret2", MCP: &MCPLoad{Sessions: true}},
	}
	var in, out bytes.Buffer
	enc := json.NewEncoder(&in)
	for _, r := range reqs {
		_ = enc.Encode(r)
	}
	if code := ServeLoadgen(&in, &out); code != 0 {
		t.Fatalf("ServeLoadgen: exit %d", code)
	}
	dec := json.NewDecoder(&out)
	for i, r := range reqs {
		var res LoadResult
		if err := dec.Decode(&res); err != nil {
			t.Fatalf("run %d: %v", i, err)
		}
		if fail := r.Authorization == ""; (res.Err != "") != fail || res.Calls == 0 {
			t.Errorf("run %d (Authorization %q, MCP %v): %+v", i, r.Authorization, r.MCP != nil, res)
		}
	}
	if inits["Bearer secret"] != 2 || inits["Bearer secret2"] != 2 {
		t.Errorf("initialize requests by Authorization: %v, want 2 of each", inits)
	}
}
