package mcpapi_test

import (
	"context"
	"path/filepath"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/opentool-host/opentool-host/declared"
	"github.com/opentool-host/opentool-host/frontend/mcpapi"
	"github.com/opentool-host/opentool-host/host"
	"github.com/opentool-host/opentool-host/internal/wire"
	"github.com/opentool-host/opentool-host/process/launcher"
	"github.com/opentool-host/opentool-host/protocol/decl"
	"github.com/opentool-host/opentool-host/testkit"
)

// listCounter is a declared plugin (declared.Serve's) whose tools/list
// requests from the host (host.Host.ClientTools) are counted.
type listCounter struct {
	wire.Local
	lists *atomic.Int64
}

// Request counts tools/list and passes every request on.
func (c listCounter) Request(ctx context.Context, method string, params []byte) ([]byte, error) {
	if method == "tools/list" {
		c.lists.Add(1)
	}
	return c.Local.Request(ctx, method, params)
}

// TestSharedServerCallsAskNoList (issue 32): a client session's
// tools/call of a tool of an MCP server declared "sessions": "shared"
// asks the plugin for no tools/list (its catalog says it lists one list
// to every client: the client's view needs none); one declared with an
// upstream session per client is asked once per call (the client's own
// list, which the view holds the call to). Before, each call to the
// shared server asked too (answered -32601). A client of 2026-07-28 (no
// session: its identity in each request's _meta) is held alike: its
// calls of the per-client server ask for the list of a client like it,
// of the shared one for none (before, it asked for none of either: its
// calls were held to no view).
func TestSharedServerCallsAskNoList(t *testing.T) {
	bin := testkit.Build(t, "./examples/mcp-notes")
	var lists atomic.Int64
	r := newRig(t, func(c *host.Config) {
		c.Declared = func(l decl.Launch, s *launcher.Starter, log hclog.Logger) wire.Local {
			return listCounter{declared.Serve(l, s, log), &lists}
		}
		writeFile(t, filepath.Join(c.Dir, "shared.mcp.json"), `{"mcpServers":{"shared":{"command":`+strconv.Quote(bin)+`,"sessions":"shared"}}}`)
		writeFile(t, filepath.Join(c.Dir, "own.mcp.json"), `{"mcpServers":{"own":{"command":`+strconv.Quote(bin)+`}}}`)
		writeFile(t, filepath.Join(c.Dir, "own.policy.json"), `{"prefix":"own_"}`)
	}, mcpapi.Config{})
	const n = 5
	for _, m := range []mode{{"sessions", "/sessions" + mcpapi.Path, "2025-11-25"}, {"2026-07-28", "/sessions" + mcpapi.Path, "2026-07-28"}} {
		cs := r.connect(t, m, nil)
		for _, c := range []struct {
			tool string
			want int64
		}{{"list_notes", 0}, {"own_list_notes", n}} {
			before := lists.Load()
			for range n {
				if res := call(t, cs, c.tool, map[string]any{}); res.IsError {
					t.Fatalf("%s: %s: %+v", m.name, c.tool, res.Content)
				}
			}
			if got := lists.Load() - before; got != c.want {
				t.Errorf("%s: %d calls of %s asked the plugin for tools/list %d times; want %d", m.name, n, c.tool, got, c.want)
			}
		}
	}
}

// TestSharedServerListingsAskNoList (issue 31): a client session's
// tools/list asks an MCP server declared "sessions": "shared" for no
// list of the client's own (its catalog says it lists one list to every
// client, and it would answer -32601), and lists its tools as before;
// one declared with an upstream session per client is asked once per
// listing. Before, each listing asked the shared server too. The
// server's catalog is read at each listing: redeclared with a session
// per client, it is asked again.
func TestSharedServerListingsAskNoList(t *testing.T) {
	bin := testkit.Build(t, "./examples/mcp-notes")
	lists := map[string]*atomic.Int64{"shared": {}, "own": {}} // by plugin
	var sharedFile string
	r := newRig(t, func(c *host.Config) {
		c.Declared = func(l decl.Launch, s *launcher.Starter, log hclog.Logger) wire.Local {
			return listCounter{declared.Serve(l, s, log), lists[l.Name]}
		}
		sharedFile = filepath.Join(c.Dir, "shared.mcp.json")
		writeFile(t, sharedFile, `{"mcpServers":{"shared":{"command":`+strconv.Quote(bin)+`,"sessions":"shared"}}}`)
		writeFile(t, filepath.Join(c.Dir, "own.mcp.json"), `{"mcpServers":{"own":{"command":`+strconv.Quote(bin)+`}}}`)
		writeFile(t, filepath.Join(c.Dir, "own.policy.json"), `{"prefix":"own_"}`)
	}, mcpapi.Config{})
	cs := r.connect(t, mode{"sessions", "/sessions" + mcpapi.Path, "2025-11-25"}, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	shared, own := lists["shared"].Load(), lists["own"].Load()
	const n = 5
	for i := range n {
		res, err := cs.ListTools(ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		names := map[string]bool{}
		for _, tl := range res.Tools {
			names[tl.Name] = true
		}
		if !names["list_notes"] || !names["own_list_notes"] {
			t.Fatalf("listing %d: want list_notes (shared) and own_list_notes (own), got %v", i, names)
		}
	}
	if got := lists["shared"].Load() - shared; got != 0 {
		t.Errorf("%d listings asked the shared server for tools/list %d times; want 0", n, got)
	}
	if got := lists["own"].Load() - own; got != n {
		t.Errorf("%d listings asked the per-client server for tools/list %d times; want %d", n, got, n)
	}
	// What its catalog says is read at each listing: redeclared with a
	// session per client, the server is asked again.
	writeFile(t, sharedFile, `{"mcpServers":{"shared":{"command":`+strconv.Quote(bin)+`}}}`)
	if err := r.h.Rescan(ctx); err != nil {
		t.Fatal(err)
	}
	testkit.Eventually(t, 30*time.Second, "a listing asks the server redeclared with a session per client", func() bool {
		before := lists["shared"].Load()
		_, err := cs.ListTools(ctx, nil)
		return err == nil && lists["shared"].Load() > before
	})
}
