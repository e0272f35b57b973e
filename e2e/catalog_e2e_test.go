package e2e_test

import (
	"bufio"
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/opentool-host/opentool-host/testkit"
)

// TestRestrictedKeySeesOnlyItsOwn: a key allowed some functions of a
// plugin sees, on /health, /status.json and /events, only the plugins it
// may call a function of, only those functions, no plugin's stderr and no
// other plugin's name (issue 20, finding 7). The admin key still sees
// everything.
func TestRestrictedKeySeesOnlyItsOwn(t *testing.T) {
	dir := t.TempDir()
	testkit.InstallPlugin(t, dir, "calculator", "./plugins/calculator")
	testkit.InstallPlugin(t, dir, "mock", "./plugins/mock")
	// text declares word_count and an "add" that calculator owns: its
	// status names calculator in conflicts.
	decl := `{"functions":[
  {"name":"word_count","description":"Counts words.","parameters":[{"name":"text","schema":{"type":"string"},"required":true}],"command":["wc"],"stdin":"text"},
  {"name":"add","description":"Not served: calculator owns add.","parameters":[],"command":["true"]}]}`
	if err := os.WriteFile(filepath.Join(dir, "text.tools.json"), []byte(decl), 0o644); err != nil {
		t.Fatal(err)
	}
	keys := filepath.Join(t.TempDir(), "keys.json")
	if err := os.WriteFile(keys, []byte(`{"keys":[{"name":"admin","key":"admin-key","allow":["*"]},{"name":"wc","key":"wc-key","allow":["word_count"]}]}`), 0o600); err != nil {
		t.Fatal(err)
	}
	hp := startHostProc(t, dir, "--api-keys-file", keys)
	testkit.Eventually(t, 20*time.Second, "text reports its conflict", func() bool {
		_, _, body := httpDo(t, http.MethodGet, hp.url+"/health", "admin-key", "")
		return strings.Contains(body, `"owner":"calculator"`)
	})

	for _, path := range []string{"/health", "/status.json"} {
		st, _, body := httpDo(t, http.MethodGet, hp.url+path, "wc-key", "")
		if st != 200 {
			t.Fatalf("%s: %d %s", path, st, body)
		}
		var doc struct {
			Plugins []struct {
				Name      string            `json:"name"`
				Functions []string          `json:"functions"`
				Conflicts []json.RawMessage `json:"conflicts"`
				Stderr    []string          `json:"stderr"`
			} `json:"plugins"`
		}
		if err := json.Unmarshal([]byte(body), &doc); err != nil {
			t.Fatal(err)
		}
		if len(doc.Plugins) != 1 || doc.Plugins[0].Name != "text" {
			t.Fatalf("%s shows the wc key plugins %+v, want text alone", path, doc.Plugins)
		}
		p := doc.Plugins[0]
		if !slices.Equal(p.Functions, []string{"word_count"}) || len(p.Conflicts) != 0 || len(p.Stderr) != 0 {
			t.Errorf("%s: the wc key sees text as %+v, want only word_count, no conflicts, no stderr", path, p)
		}
		for _, other := range []string{"calculator", "mock", `"add"`, "subtract"} {
			if strings.Contains(body, other) {
				t.Errorf("%s: the wc key sees %s: %s", path, other, body)
			}
		}
	}
	// The admin key sees every plugin, every function and the conflict.
	_, _, body := httpDo(t, http.MethodGet, hp.url+"/health", "admin-key", "")
	for _, want := range []string{`"name":"calculator"`, `"name":"mock"`, `"owner":"calculator"`, `"word_count"`} {
		if !strings.Contains(body, want) {
			t.Errorf("admin /health lacks %s", want)
		}
	}

	// /events: the collision names another plugin; the wc key does not
	// get it, and gets text's events.
	req, _ := http.NewRequest(http.MethodGet, hp.url+"/events", nil)
	req.Header.Set("Authorization", "Bearer wc-key")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	lines := make(chan string, 64)
	go func() {
		sc := bufio.NewScanner(resp.Body)
		for sc.Scan() {
			lines <- sc.Text()
		}
		close(lines)
	}()
	// A change of text's declaration makes text publish events again
	// (replaced), and the collision again.
	if err := os.WriteFile(filepath.Join(dir, "text.tools.json"), []byte(strings.Replace(decl, "Counts words.", "Counts words (v2).", 1)), 0o644); err != nil {
		t.Fatal(err)
	}
	deadline := time.After(20 * time.Second)
	sawText := false
	for !sawText {
		select {
		case l, ok := <-lines:
			if !ok {
				t.Fatal("/events ended")
			}
			if strings.HasPrefix(l, "data:") {
				if strings.Contains(l, "calculator") || strings.Contains(l, "mock") {
					t.Errorf("/events gave the wc key %s", l)
				}
				if strings.Contains(l, `"plugin":"text"`) && strings.Contains(l, `"type":"replaced"`) {
					sawText = true
				}
			}
		case <-deadline:
			t.Fatal("no event of text on /events within 20 s")
		}
	}
}

// getStream sends a GET for a stream (text/event-stream) with key and
// extra headers.
func getStream(t *testing.T, url, key string, hdr map[string]string) *http.Response {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, url, nil)
	req.Header.Set("Authorization", "Bearer "+key)
	req.Header.Set("Accept", "text/event-stream")
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	return resp
}

// openStream opens a GET stream with key and extra headers, and returns
// a channel closed when the host ends it.
func openStream(t *testing.T, url, key string, hdr map[string]string) <-chan struct{} {
	t.Helper()
	resp := getStream(t, url, key, hdr)
	if resp.StatusCode != 200 {
		t.Fatalf("GET %s: %d", url, resp.StatusCode)
	}
	ended := make(chan struct{})
	go func() {
		defer close(ended)
		defer resp.Body.Close()
		buf := make([]byte, 4096)
		for {
			if _, err := resp.Body.Read(buf); err != nil {
				return
			}
		}
	}()
	return ended
}

// TestRevokedKeyStreamsClose: when a key leaves the keys file, its open
// /events stream and its MCP session's GET stream end within a second of
// the reload, while another key's stream stays open (issue 20, finding
// 6).
func TestRevokedKeyStreamsClose(t *testing.T) {
	dir := t.TempDir()
	testkit.InstallPlugin(t, dir, "calculator", "./plugins/calculator")
	keys := filepath.Join(t.TempDir(), "keys.json")
	both := `{"keys":[{"name":"stays","key":"stays-key","allow":["*"]},{"name":"goes","key":"goes-key","allow":["add"]}]}`
	if err := os.WriteFile(keys, []byte(both), 0o600); err != nil {
		t.Fatal(err)
	}
	hp := startHostProc(t, dir, "--api-keys-file", keys, "--mcp-sessions")

	events := openStream(t, hp.url+"/events", "goes-key", nil)
	stays := openStream(t, hp.url+"/events", "stays-key", nil)
	// An MCP session of the key, with its GET stream.
	init := `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`
	req, _ := http.NewRequest(http.MethodPost, hp.url+"/mcp", strings.NewReader(init))
	req.Header.Set("Authorization", "Bearer goes-key")
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	sid := resp.Header.Get("Mcp-Session-Id")
	if sid == "" {
		t.Fatalf("initialize: %d, no session id", resp.StatusCode)
	}
	note, _ := http.NewRequest(http.MethodPost, hp.url+"/mcp", strings.NewReader(`{"jsonrpc":"2.0","method":"notifications/initialized"}`))
	for k, v := range map[string]string{"Authorization": "Bearer goes-key", "Content-Type": "application/json", "Accept": "application/json, text/event-stream", "Mcp-Session-Id": sid, "Mcp-Protocol-Version": "2025-06-18"} {
		note.Header.Set(k, v)
	}
	if r, err := http.DefaultClient.Do(note); err != nil {
		t.Fatal(err)
	} else {
		r.Body.Close()
	}
	mcpStream := openStream(t, hp.url+"/mcp", "goes-key", map[string]string{"Mcp-Session-Id": sid, "Mcp-Protocol-Version": "2025-06-18"})

	// Remove the key.
	replaceFile(t, keys, `{"keys":[{"name":"stays","key":"stays-key","allow":["*"]}]}`)
	reloaded := time.Now()
	for name, ch := range map[string]<-chan struct{}{"/events": events, "MCP GET stream": mcpStream} {
		select {
		case <-ch:
			t.Logf("%s of the removed key ended %v after the file was written", name, time.Since(reloaded).Round(time.Millisecond))
		case <-time.After(5 * time.Second):
			t.Errorf("%s of the removed key still open 5 s after it left the keys file", name)
		}
	}
	if time.Since(reloaded) > 2*time.Second {
		t.Errorf("streams took %v to close (the reload waits 100 ms after the write, then must close them within 1 s)", time.Since(reloaded))
	}
	select {
	case <-stays:
		t.Error("the stream of the key that stays ended")
	default:
	}
	if st, _, _ := httpDo(t, http.MethodGet, hp.url+"/health", "goes-key", ""); st != http.StatusUnauthorized {
		t.Errorf("the removed key: %d, want 401", st)
	}
}

// streamStatus opens a GET stream with key and returns its status; a
// stream that opened (200) stays open until the test ends.
func streamStatus(t *testing.T, url, key string, hdr map[string]string) (int, string) {
	t.Helper()
	resp := getStream(t, url, key, hdr)
	if resp.StatusCode == 200 {
		t.Cleanup(func() { resp.Body.Close() })
		return 200, ""
	}
	defer resp.Body.Close()
	b := make([]byte, 4096)
	n, _ := resp.Body.Read(b)
	return resp.StatusCode, string(b[:n])
}

// mcpInitialize opens an MCP session with key and returns its id, or
// the status and body of the refusal.
func mcpInitialize(t *testing.T, base, key string) (string, int, string) {
	t.Helper()
	h, st, body := mcpInitializeHeader(t, base, key)
	return h.Get("Mcp-Session-Id"), st, body
}

// mcpInitializeHeader sends one initialize with key and returns the
// answer's header, status and body (a session it opens is left open).
func mcpInitializeHeader(t *testing.T, base, key string) (http.Header, int, string) {
	t.Helper()
	init := `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`
	req, _ := http.NewRequest(http.MethodPost, base+"/mcp", strings.NewReader(init))
	req.Header.Set("Authorization", "Bearer "+key)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b := make([]byte, 4096)
	n, _ := resp.Body.Read(b)
	return resp.Header, resp.StatusCode, string(b[:n])
}

// TestStreamsAndSessionsCapped: open streams are capped per key (429) and
// overall (503), MCP sessions are capped and expire when idle, and the
// readiness probe answers throughout (issue 20, finding 5).
func TestStreamsAndSessionsCapped(t *testing.T) {
	dir := t.TempDir()
	testkit.InstallPlugin(t, dir, "calculator", "./plugins/calculator")
	keys := filepath.Join(t.TempDir(), "keys.json")
	if err := os.WriteFile(keys, []byte(`{"keys":[{"name":"a","key":"ka","allow":["add"]},{"name":"b","key":"kb","allow":["*"]}]}`), 0o600); err != nil {
		t.Fatal(err)
	}
	hp := startHostProc(t, dir, "--api-keys-file", keys, "--max-streams-per-key", "3", "--max-streams", "5",
		"--mcp-sessions", "--mcp-max-sessions", "2", "--mcp-session-idle", "1s")

	for i := range 3 {
		if st, body := streamStatus(t, hp.url+"/events", "ka", nil); st != 200 {
			t.Fatalf("stream %d of key a: %d %s", i+1, st, body)
		}
	}
	if st, body := streamStatus(t, hp.url+"/events", "ka", nil); st != http.StatusTooManyRequests || !json.Valid([]byte(body)) || !strings.Contains(body, "--max-streams-per-key") {
		t.Errorf("a 4th stream of key a: %d %s, want 429 with a JSON body", st, body)
	}
	for i := range 2 {
		if st, body := streamStatus(t, hp.url+"/events", "kb", nil); st != 200 {
			t.Fatalf("stream %d of key b: %d %s", i+1, st, body)
		}
	}
	if st, body := streamStatus(t, hp.url+"/events", "kb", nil); st != http.StatusServiceUnavailable || !json.Valid([]byte(body)) || !strings.Contains(body, "--max-streams") {
		t.Errorf("a 6th stream on the host: %d %s, want 503 with a JSON body", st, body)
	}
	// Calls and readiness are not streams: they go on.
	if st, _, body := httpDo(t, http.MethodPost, hp.url+"/opentool/call", "ka", rpcAddCall); st != 200 {
		t.Errorf("a call while the streams are full: %d %s", st, body)
	}
	if resp, err := http.Get(hp.url + "/health?ready=1"); err != nil || resp.StatusCode != 200 {
		t.Errorf("readiness while the streams are full: %v %v", resp, err)
	} else {
		resp.Body.Close()
	}

	// Sessions: two, then 503; an idle one expires and frees its place.
	first, st, body := mcpInitialize(t, hp.url, "kb")
	if first == "" {
		t.Fatalf("session 1: %d %s", st, body)
	}
	if id, st, body := mcpInitialize(t, hp.url, "kb"); id == "" {
		t.Fatalf("session 2: %d %s", st, body)
	}
	if _, st, body := mcpInitialize(t, hp.url, "kb"); st != http.StatusServiceUnavailable || !strings.Contains(body, "--mcp-max-sessions") {
		t.Errorf("session 3: %d %s, want 503", st, body)
	}
	testkit.Eventually(t, 10*time.Second, "an idle session expired (--mcp-session-idle 1s)", func() bool {
		id, _, _ := mcpInitialize(t, hp.url, "kb")
		return id != ""
	})
}
