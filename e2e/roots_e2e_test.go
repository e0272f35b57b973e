package e2e_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// rootsClient connects an MCP client (the Go SDK's, MCP 2025-11-25) to
// the host's /mcp with the one root uri.
func rootsClient(t *testing.T, hp *hostProc, uri string) *mcp.ClientSession {
	t.Helper()
	c := mcp.NewClient(&mcp.Implementation{Name: "roots-" + uri, Version: "1"}, nil)
	c.AddRoots(&mcp.Root{URI: uri})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cs, err := c.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: hp.url + "/mcp"}, &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cs.Close() })
	return cs
}

// TestMCPRootsStayWithTheirCaller: an MCP server that keeps the roots it
// was given (mcp-notes' roots tool, as the reference everything-server's
// get-roots-list) gets a caller's roots during that caller's call, and
// no later caller gets them back: neither a /opentool/call (which has no
// roots) nor another MCP client (issue 30, finding 8). The adapter has
// one session with the server for every caller; after the call it tells
// the server the roots changed and answers its roots/list, outside any
// call, with an empty list.
func TestMCPRootsStayWithTheirCaller(t *testing.T) {
	dir := t.TempDir()
	msDeclare(t, dir, "notes", "--rich")
	hp := startHostProc(t, dir)

	a := rootsClient(t, hp, "file:///caller-a")
	if got := llCall(t, a, &mcp.CallToolParams{Name: "roots"}); !strings.Contains(got, `"roots":["file:///caller-a"]`) {
		t.Fatalf("caller A's roots tool = %s, want its own root (relayed to it during its call)", got)
	}

	// Caller B over /opentool/call.
	st, res := rpc(t, hp.url, `{"jsonrpc":"2.0","method":"roots","params":{},"id":1}`)
	b, _ := json.Marshal(res)
	if st != 200 || strings.Contains(string(b), "caller-a") {
		t.Errorf("caller B's /opentool/call of roots: %d %s; it must not carry caller A's roots", st, b)
	}

	// Caller C over MCP, with roots of its own.
	c := rootsClient(t, hp, "file:///caller-c")
	if got := llCall(t, c, &mcp.CallToolParams{Name: "roots"}); strings.Contains(got, "caller-a") {
		t.Errorf("caller C's roots tool = %s; it must not carry caller A's roots", got)
	}
	// A again: nothing of C's.
	if got := llCall(t, a, &mcp.CallToolParams{Name: "roots"}); strings.Contains(got, "caller-c") {
		t.Errorf("caller A's second roots call = %s; it must not carry caller C's roots", got)
	}
}
