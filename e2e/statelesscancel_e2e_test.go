package e2e_test

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/opentool-host/opentool-host/testkit"
)

// TestStatelessCancelReachesTheCall (issue 22): with --mcp-stateless, a
// notifications/cancelled on a POST of its own cancels the call it names
// in the plugin, when it reaches the host running the call and comes with
// the same API key; another key's notification naming the same id does
// nothing. Before, the SDK had no session to tie it to and the call ran on.
func TestStatelessCancelReachesTheCall(t *testing.T) {
	dir := t.TempDir()
	testkit.InstallPlugin(t, dir, "faulty", "./testkit/plugins/faulty")
	hp := startHostProc(t, dir, "--mcp-stateless", "--api-key", "k1", "--api-key", "k2")
	const v = "2025-11-25"
	done := make(chan string, 1)
	go func() {
		_, body := mcpPost(t, hp.url, "k1", v, `{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"sleep","arguments":{"ms":20000}}}`)
		done <- body
	}()
	sleeping := func() string {
		_, m := rpcKey(t, hp.url, "k1", `{"jsonrpc":"2.0","method":"sleeps","id":1}`)
		b, _ := json.Marshal(m["result"])
		return string(b)
	}
	testkit.Eventually(t, 10*time.Second, "the call is sleeping in the plugin", func() bool { return strings.Contains(sleeping(), `"active":1`) })
	// Another key naming id 7 cancels nothing.
	if st, _ := mcpPost(t, hp.url, "k2", v, `{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":7}}`); st != 202 {
		t.Fatalf("k2's notification: %d, want 202", st)
	}
	if s := sleeping(); !strings.Contains(s, `"active":1`) || !strings.Contains(s, `"cancelled":0`) {
		t.Fatalf("another key's notification cancelled the call: %s", s)
	}
	begin := time.Now()
	if st, _ := mcpPost(t, hp.url, "k1", v, `{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":7,"reason":"user"}}`); st != 202 {
		t.Fatalf("k1's notification: %d, want 202", st)
	}
	testkit.Eventually(t, 5*time.Second, "the plugin saw the cancellation", func() bool { return strings.Contains(sleeping(), `"cancelled":1`) })
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("the call's POST did not end after its cancellation")
	}
	t.Logf("cancelled %v after the notification", time.Since(begin).Round(time.Millisecond))
}
