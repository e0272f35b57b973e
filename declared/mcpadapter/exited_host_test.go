package mcpadapter_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/opentool-host/opentool-host/declared"
	"github.com/opentool-host/opentool-host/host/core"
	"github.com/opentool-host/opentool-host/testkit"
)

// TestServerExitDuringCallIsPluginExited: a declared MCP server (a real
// process, testkit/plugins/hostilemcp) that exits during a tools/call is
// reported as the plugin's exit, KindExited and retryable, never as the
// tool's own error; the server is restarted and answers again.
func TestServerExitDuringCallIsPluginExited(t *testing.T) {
	dir := t.TempDir()
	decl := `{"mcpServers":{"quits":{"command":` + strconv.Quote(testkit.Build(t, "./testkit/plugins/hostilemcp")) + `,"args":["exit"],"sessions":"shared"}}}`
	if err := os.WriteFile(filepath.Join(dir, "quits.mcp.json"), []byte(decl), 0o644); err != nil {
		t.Fatal(err)
	}
	h := testkit.StartHost(t, func(c *core.Config) { c.Dir, c.Declared = dir, declared.Serve })
	_, err := h.Call(context.Background(), "attack", []byte(`{}`))
	var he *core.Error
	if !errors.As(err, &he) {
		t.Fatalf("attack: %v, want a *core.Error", err)
	}
	t.Logf("attack: %s: %v", he.Kind, he)
	if he.Kind != core.KindExited || !he.Kind.Retryable() {
		t.Fatalf("a server that exited during the call: kind %s (retryable %v): %v; want %s, retryable", he.Kind, he.Kind.Retryable(), he, core.KindExited)
	}
	testkit.Eventually(t, 30*time.Second, "the server restarted and answers ping", func() bool {
		_, err := h.Call(context.Background(), "ping", []byte(`{}`))
		return err == nil
	})
}
