package e2e_test

import (
	"encoding/json"
	"slices"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// keptRoots is what the sessionmcp server's kept_roots answered: the
// roots it was given outside calls and how many times.
type keptRoots struct {
	Roots []string `json:"roots"`
	Asked int      `json:"asked"`
}

// waitKeptRoots calls kept_roots on cs until the server kept want, for
// at most 10 s, and returns what it kept last.
func waitKeptRoots(t *testing.T, cs *mcp.ClientSession, want []string) keptRoots {
	t.Helper()
	var k keptRoots
	deadline := time.Now().Add(10 * time.Second)
	for {
		out, isErr := msCall(t, cs, "kept_roots", nil)
		if isErr || json.Unmarshal([]byte(out), &k) != nil {
			t.Fatalf("kept_roots = %s (isError %v)", out, isErr)
		}
		if slices.Equal(k.Roots, want) {
			return k
		}
		if time.Now().After(deadline) {
			t.Fatalf("the server kept the roots %v (asked %d times outside calls) within 10 s, want %v", k.Roots, k.Asked, want)
		}
		time.Sleep(50 * time.Millisecond) // the server asks on its own goroutine
	}
}

// TestMCPStdioRootsOutsideCalls: a desktop client on stdio (opentool-host
// mcp, the host's only client) that declares roots is offered listChanged
// (a client it can notify), and a declared MCP server that asks roots/list
// outside any call (testkit/plugins/sessionmcp: at notifications/initialized
// and at each notifications/roots/list_changed) gets that client's roots,
// and the client's notifications/roots/list_changed reaches the server,
// which then gets the new roots. Before, such a roots/list got an empty
// list and the client's list_changed went nowhere.
func TestMCPStdioRootsOutsideCalls(t *testing.T) {
	dir := t.TempDir()
	sessDeclare(t, dir, "sess", nil)
	c := mcp.NewClient(&mcp.Implementation{Name: "desktop", Version: "1"}, nil)
	c.AddRoots(&mcp.Root{URI: "file:///work/a", Name: "a"})
	// 2025-11-25, as desktop clients speak: a 2026-07-28 client has no
	// session and, roots deprecated (SEP-2577), is never asked outside calls.
	cs, _ := connectMCPStdioAs(t, c, &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"}, dir)
	if caps := cs.InitializeResult().Capabilities; caps.Tools == nil || !caps.Tools.ListChanged {
		t.Errorf("stdio initialize: tools %+v, want listChanged", caps.Tools)
	}
	waitKeptRoots(t, cs, []string{"file:///work/a"})
	c.AddRoots(&mcp.Root{URI: "file:///work/b", Name: "b"}) // notifications/roots/list_changed
	waitKeptRoots(t, cs, []string{"file:///work/a", "file:///work/b"})
}
