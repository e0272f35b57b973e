package e2e_test

import (
	"context"
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/opentool-host/opentool-host/testkit"
)

// dialMCP opens an MCP session (the Go SDK's client) on /mcp with key and
// returns it, or the error the SDK gives for the host's refusal.
func dialMCP(t *testing.T, url, key string) (*mcp.ClientSession, error) {
	t.Helper()
	tr := &mcp.StreamableClientTransport{Endpoint: url + "/mcp", HTTPClient: &http.Client{Transport: bearer(key)}, MaxRetries: -1}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	// 2025-11-25: a client of 2026-07-28 opens no session (SEP-2575).
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "e2e", Version: "1"}, nil).Connect(ctx, tr, &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
	if err != nil {
		return nil, err
	}
	t.Cleanup(func() { _ = cs.Close() })
	return cs, nil
}

// wantPerKeyRefusal checks that key's next session is refused as over
// --mcp-max-sessions-per-key: 429, Retry-After, a JSON-RPC error body, and
// the SDK client's Connect fails on it (the Go SDK takes a 429 as a
// transient transport failure and does not read the body).
func wantPerKeyRefusal(t *testing.T, url, key, what string) {
	t.Helper()
	h, st, body := mcpInitializeHeader(t, url, key)
	retry := h.Get("Retry-After")
	var rpc struct {
		ID    any `json:"id"`
		Error struct {
			Code    int    `json:"code"`
			Message string `json:"message"`
		} `json:"error"`
	}
	if st != http.StatusTooManyRequests || retry == "" || json.Unmarshal([]byte(body), &rpc) != nil || rpc.Error.Code == 0 || !strings.Contains(rpc.Error.Message, "--mcp-max-sessions-per-key") {
		t.Errorf("%s: %d Retry-After %q %s, want 429 with Retry-After and a JSON-RPC error naming --mcp-max-sessions-per-key", what, st, retry, body)
	}
	if cs, err := dialMCP(t, url, key); err == nil {
		_ = cs.Close()
		t.Errorf("%s: the SDK client connected, want the refusal", what)
	} else if !strings.Contains(err.Error(), http.StatusText(http.StatusTooManyRequests)) {
		t.Errorf("%s: the SDK client's error %q is not the 429", what, err)
	}
}

// TestMCPSessionsCappedPerKey: one key, even one that may call nothing,
// holds at most --mcp-max-sessions-per-key sessions (429 beyond, JSON
// body) while other keys go on opening theirs; the cap applies to a key
// that sees everything too; a session ended by its client (DELETE), by
// its key's revocation or by --mcp-session-idle gives its place back
// (issue 30, finding 5).
func TestMCPSessionsCappedPerKey(t *testing.T) {
	dir := t.TempDir()
	testkit.InstallPlugin(t, dir, "calculator", "./plugins/calculator")
	keys := filepath.Join(t.TempDir(), "keys.json")
	write := func(greedyAllow string) string {
		return `{"keys":[{"name":"greedy","key":"kg","allow":` + greedyAllow + `},{"name":"admin","key":"ka","allow":["*"]}]}`
	}
	if err := os.WriteFile(keys, []byte(write(`[]`)), 0o600); err != nil {
		t.Fatal(err)
	}
	hp := startHostProc(t, dir, "--api-keys-file", keys, "--mcp-max-sessions", "10", "--mcp-max-sessions-per-key", "2")

	var greedy []*mcp.ClientSession
	for i := range 2 {
		cs, err := dialMCP(t, hp.url, "kg")
		if err != nil {
			t.Fatalf("session %d of greedy: %v", i+1, err)
		}
		greedy = append(greedy, cs)
	}
	wantPerKeyRefusal(t, hp.url, "kg", "greedy's 3rd session")

	// Another key goes on; it has its own cap, admin or not.
	for i := range 2 {
		if _, err := dialMCP(t, hp.url, "ka"); err != nil {
			t.Fatalf("session %d of admin while greedy is at its cap: %v", i+1, err)
		}
	}
	wantPerKeyRefusal(t, hp.url, "ka", "admin's 3rd session")

	// DELETE (the SDK client's Close) gives the place back.
	if err := greedy[0].Close(); err != nil {
		t.Fatalf("closing a session of greedy: %v", err)
	}
	testkit.Eventually(t, 10*time.Second, "greedy opens a session again after ending one", func() bool {
		cs, err := dialMCP(t, hp.url, "kg")
		if err == nil {
			greedy[0] = cs
		}
		return err == nil
	})
	wantPerKeyRefusal(t, hp.url, "kg", "greedy's 3rd session after a DELETE")

	// A revoked key's sessions are closed and their places freed: greedy,
	// changed, opens two new ones.
	replaceFile(t, keys, write(`["add"]`))
	testkit.Eventually(t, 10*time.Second, "greedy's sessions closed on revocation", func() bool {
		cs, err := dialMCP(t, hp.url, "kg")
		if err == nil {
			_ = cs.Close()
		}
		return err == nil
	})
	for i := range 2 {
		if _, err := dialMCP(t, hp.url, "kg"); err != nil {
			t.Fatalf("session %d of greedy after its revocation: %v", i+1, err)
		}
	}
	wantPerKeyRefusal(t, hp.url, "kg", "greedy's 3rd session after revocation")

	// An idle session gives its place back.
	idle := startHostProc(t, dir, "--api-keys-file", keys, "--mcp-max-sessions-per-key", "1", "--mcp-session-idle", "1s")
	if _, err := dialMCP(t, idle.url, "kg"); err != nil {
		t.Fatalf("greedy's session: %v", err)
	}
	wantPerKeyRefusal(t, idle.url, "kg", "greedy's 2nd session")
	testkit.Eventually(t, 10*time.Second, "greedy's idle session expired (--mcp-session-idle 1s)", func() bool {
		_, err := dialMCP(t, idle.url, "kg")
		return err == nil
	})
}
