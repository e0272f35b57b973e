package mcpadapter_test

import (
	"context"
	"os"
	"path/filepath"
	"runtime/metrics"
	"strconv"
	"strings"
	"testing"

	"github.com/opentool-host/opentool-host/declared"
	"github.com/opentool-host/opentool-host/host"
	"github.com/opentool-host/opentool-host/testkit"
)

// goroutinesCreated is the count of goroutines this process has created
// (runtime/metrics).
func goroutinesCreated() uint64 {
	s := []metrics.Sample{{Name: "/sched/goroutines-created:goroutines"}}
	metrics.Read(s)
	return s[0].Value.Uint64()
}

// TestDeclaredCallStartsNoGoroutine: a call of a declared MCP server's
// tool through the host (host.CallResult → supervise → the adapter → the
// SDK's client → the server's stdin, and back) runs on the caller's
// goroutine: no goroutine is started for it, none for its context's end,
// none for a timer. Before, each call started three (the local call's,
// and the raw result sink's AfterFunc and its timer, 5 s later).
func TestDeclaredCallStartsNoGoroutine(t *testing.T) {
	dir := t.TempDir()
	decl := `{"mcpServers":{"notes":{"command":` + strconv.Quote(testkit.Build(t, "./examples/mcp-notes")) + `,"sessions":"shared"}}}`
	if err := os.WriteFile(filepath.Join(dir, "notes.mcp.json"), []byte(decl), 0o644); err != nil {
		t.Fatal(err)
	}
	h := testkit.StartHost(t, func(c *host.Config) {
		c.Dir, c.CallTimeout, c.Declared = dir, hostBound, declared.Serve
	})
	call := func() {
		res, err := h.CallResult(context.Background(), "repeat", []byte(`{"text":"hi"}`))
		if err != nil || !res.MCP || !strings.Contains(string(res.JSON), `"text":"hi"`) {
			t.Fatalf("notes_repeat = %s (MCP %v), %v", res.JSON, res.MCP, err)
		}
	}
	for range 10 { // warm: the session, pools, the first timers
		call()
	}
	const n = 200
	before := goroutinesCreated()
	for range n {
		call()
	}
	created := goroutinesCreated() - before
	t.Logf("%d goroutines created for %d calls", created, n)
	if created > n/10 {
		t.Fatalf("%d goroutines created for %d calls of a declared server's tool; want none per call", created, n)
	}
}
