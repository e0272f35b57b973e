package main_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os/exec"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/opentool-host/opentool-host/internal/testutil"
)

// The MCP world through the host (issue 22): an MCP client of the host's
// /mcp gets from an MCP server behind the host what it gets from the
// server directly, and Go SDK plugins can say the same things.

// llRich starts a host serving examples/mcp-notes --rich as plugin notes
// and the rich test plugin, with extra run flags, and returns it.
func llRich(t *testing.T, extra ...string) *hostProc {
	t.Helper()
	dir := t.TempDir()
	msDeclare(t, dir, "notes", "--rich")
	testutil.InstallPlugin(t, dir, "rich", "./internal/testplugins/rich")
	return startHostProc(t, dir, extra...)
}

// llDirect connects an MCP client to mcp-notes --rich over stdio, with
// opts (nil: none).
func llDirect(t *testing.T, opts *mcp.ClientOptions) *mcp.ClientSession {
	t.Helper()
	bin := testutil.Build(t, "./examples/mcp-notes")
	return llConnect(t, &mcp.CommandTransport{Command: exec.Command(bin, "--rich")}, opts)
}

// llHost connects an MCP client to the host's /mcp, with opts.
func llHost(t *testing.T, hp *hostProc, opts *mcp.ClientOptions) *mcp.ClientSession {
	t.Helper()
	return llConnect(t, &mcp.StreamableClientTransport{Endpoint: hp.url + "/mcp"}, opts)
}

// llConnect connects a client speaking MCP 2025-11-25 (the revision of
// the conformance suite, where servers send requests during a call).
func llConnect(t *testing.T, tr mcp.Transport, opts *mcp.ClientOptions) *mcp.ClientSession {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "lossless", Version: "1"}, opts).Connect(ctx, tr, &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
	if err != nil {
		t.Fatalf("MCP connect: %v", err)
	}
	t.Cleanup(func() { _ = cs.Close() })
	return cs
}

// llCall calls tool name with args (and params' other members) and
// returns the result as JSON.
func llCall(t *testing.T, cs *mcp.ClientSession, params *mcp.CallToolParams) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	res, err := cs.CallTool(ctx, params)
	if err != nil {
		t.Fatalf("tools/call %s: %v", params.Name, err)
	}
	b, err := json.Marshal(res)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestMCPResultsAsReturned(t *testing.T) {
	hp := llRich(t)
	direct := llDirect(t, nil)
	through := llHost(t, hp, nil)

	// Every kind of content block, with annotations and _meta, as the
	// server returned it. (Before: structuredContent {"content": [...],
	// "text": ...} and one text block of that JSON.)
	want := llCall(t, direct, &mcp.CallToolParams{Name: "snapshot"})
	if got := llCall(t, through, &mcp.CallToolParams{Name: "snapshot"}); got != want {
		t.Fatalf("snapshot through the host:\n%s\nwant (directly):\n%s", got, want)
	}
	// A structured result and an isError one, the same both ways.
	llCall(t, direct, &mcp.CallToolParams{Name: "add_note", Arguments: map[string]any{"title": "t"}})
	llCall(t, through, &mcp.CallToolParams{Name: "add_note", Arguments: map[string]any{"title": "t"}})
	for _, p := range []*mcp.CallToolParams{
		{Name: "get_note", Arguments: map[string]any{"id": 1}},
		{Name: "get_note", Arguments: map[string]any{"id": 9}},
		{Name: "echo", Arguments: map[string]any{"text": "plain"}},
	} {
		if got, want := llCall(t, through, p), llCall(t, direct, p); got != want {
			t.Errorf("%s %v through the host:\n%s\nwant (directly):\n%s", p.Name, p.Arguments, got, want)
		}
	}

	// OpenTool callers keep the documented projection.
	_, m := rpc(t, hp.url, `{"jsonrpc":"2.0","method":"snapshot","id":1}`)
	res, _ := m["result"].(map[string]any)
	if blocks, _ := res["content"].([]any); len(blocks) != 6 || res["text"] != "a snapshot" {
		t.Fatalf("/opentool/call snapshot = %v, want {content: 6 blocks, text: \"a snapshot\"}", m)
	}
	if _, m := rpc(t, hp.url, `{"jsonrpc":"2.0","method":"get_note","params":{"id":9},"id":2}`); fmt.Sprint(m["error"]) != "map[code:500 message:no note 9]" {
		t.Fatalf("/opentool/call of an isError result = %v", m)
	}

	// A Go SDK plugin's content blocks (pluginsdk.ResultFunc).
	got := llCall(t, through, &mcp.CallToolParams{Name: "picture", Arguments: map[string]any{"caption": "a dot"}})
	wantPic := `{"content":[{"type":"text","text":"a dot"},{"type":"image","mimeType":"image/png","data":"iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJ","annotations":{"audience":["user"]}}]}`
	if got != wantPic {
		t.Fatalf("picture over /mcp:\n%s\nwant\n%s", got, wantPic)
	}
	_, m = rpc(t, hp.url, `{"jsonrpc":"2.0","method":"picture","params":{"caption":"a dot"},"id":3}`)
	if b, _ := json.Marshal(m["result"]); !bytes.Contains(b, []byte(`"text":"a dot"`)) || !bytes.Contains(b, []byte(`"type":"image"`)) {
		t.Fatalf("/opentool/call picture = %s, want the projection {content, text}", b)
	}
}

// llBearer is an http.Client sending "Authorization: Bearer KEY".
func llBearer(key string) *http.Client { return &http.Client{Transport: msBearer(key)} }
