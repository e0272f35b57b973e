package mcpapi_test

import (
	"context"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/opentool-host/opentool-host/declared"
	"github.com/opentool-host/opentool-host/frontend/mcpapi"
	"github.com/opentool-host/opentool-host/host/core"
	"github.com/opentool-host/opentool-host/host/supervise"
	"github.com/opentool-host/opentool-host/internal/wire"
	"github.com/opentool-host/opentool-host/process/launcher"
	"github.com/opentool-host/opentool-host/protocol/decl"
	"github.com/opentool-host/opentool-host/testkit"
)

// listCounter is a declared MCP server's plugin (declared.Serve's: a
// supervise.Direct) whose tools/list requests from the host
// (host.Host.ClientTools) are counted.
type listCounter struct {
	directLocal
	lists *atomic.Int64
}

// directLocal is a declared MCP server's plugin as declared.Serve
// returns it.
type directLocal interface {
	wire.Local
	supervise.Direct
}

// RequestDirect counts tools/list and passes every request on.
func (c listCounter) RequestDirect(ctx context.Context, x *core.Exchange, method string, params []byte) ([]byte, error) {
	if method == "tools/list" {
		c.lists.Add(1)
	}
	return c.directLocal.RequestDirect(ctx, x, method, params)
}

// countedRig is a rig whose declared plugins (declared.Serve) count the
// tools/list requests they get from the host in lists, with files (name
// → content) in its plugins folder.
func countedRig(t *testing.T, lists *atomic.Int64, files map[string]string) *rig {
	t.Helper()
	return newRig(t, func(c *core.Config) {
		c.Declared = func(l decl.Launch, s *launcher.Starter, log hclog.Logger) wire.Local {
			return listCounter{declared.Serve(l, s, log).(directLocal), lists}
		}
		for name, content := range files {
			writeFile(t, filepath.Join(c.Dir, name), content)
		}
	}, mcpapi.Config{})
}

// TestSharedServerCallsAskNoList (issue 32): a client session's
// tools/call of a tool of an MCP server declared "sessions": "shared"
// asks the plugin for no tools/list (its catalog says it lists one list
// to every client: the client's view needs none); one declared with an
// upstream session per client is asked once for all of the session's
// calls (the client's own list, which the view holds the call to, kept
// by the session: before, it was asked once per call). Before, each call
// to the shared server asked too (answered -32601). A client of
// 2026-07-28 (no session: its identity in each request's _meta) is held
// alike: each of its calls of the per-client server asks for the list of
// a client like it (nothing is kept per caller), of the shared one for
// none (before, it asked for none of either: its calls were held to no
// view).
func TestSharedServerCallsAskNoList(t *testing.T) {
	bin := testkit.Build(t, "./examples/mcp-notes")
	var lists atomic.Int64
	r := countedRig(t, &lists, map[string]string{
		"shared.mcp.json": `{"mcpServers":{"shared":{"command":` + strconv.Quote(bin) + `,"sessions":"shared"}}}`,
		"own.mcp.json":    `{"mcpServers":{"own":{"command":` + strconv.Quote(bin) + `}}}`,
		"own.policy.json": `{"prefix":"own_"}`,
	})
	const n = 5
	for _, m := range []struct {
		mode
		own int64 // the per-client server's lists asked for n calls
	}{{mode{"sessions", "/sessions" + mcpapi.Path, "2025-11-25"}, 1}, {mode{"2026-07-28", "/sessions" + mcpapi.Path, "2026-07-28"}, n}} {
		cs := r.connect(t, m.mode, nil)
		for _, c := range []struct {
			tool string
			want int64
		}{{"list_notes", 0}, {"own_list_notes", m.own}} {
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
	r := newRig(t, func(c *core.Config) {
		c.Declared = func(l decl.Launch, s *launcher.Starter, log hclog.Logger) wire.Local {
			return listCounter{declared.Serve(l, s, log).(directLocal), lists[l.Name]}
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

// TestSessionOwnListKeptUntilChanged (issue 32): a client session's
// calls of a per-client MCP server's tool ask the plugin for the
// client's own list once, not once per call; when the server says on
// that client's own upstream session that its tools changed
// (notifications/tools/list_changed), the session's next call is held
// to the new list, asked for once more: a tool listed again with
// another inputSchema checks the call against the new one, a tool
// removed is an unknown tool. Before, every call asked for the list.
func TestSessionOwnListKeptUntilChanged(t *testing.T) {
	bin := testkit.Build(t, "./testkit/plugins/sessionmcp")
	var lists atomic.Int64
	r := countedRig(t, &lists, map[string]string{"own.mcp.json": `{"mcpServers":{"own":{"command":` + strconv.Quote(bin) + `}}}`})
	changed := make(chan struct{}, 16)
	cs := r.connect(t, mode{"sessions", "/sessions" + mcpapi.Path, "2025-11-25"}, &mcp.ClientOptions{
		ToolListChangedHandler: func(context.Context, *mcp.ToolListChangedRequest) { changed <- struct{}{} },
	})
	const n = 5
	asked := func(step string, calls func(), want int64) {
		t.Helper()
		before := lists.Load()
		calls()
		if got := lists.Load() - before; got != want {
			t.Errorf("%s: the plugin was asked for the client's tools/list %d times; want %d", step, got, want)
		}
	}
	asked("calls before a change", func() {
		for range n {
			if res := call(t, cs, "whoami", map[string]any{}); res.IsError {
				t.Fatalf("whoami: %+v", res.Content)
			}
		}
	}, 1)
	asked("concurrent calls of the same session", func() {
		var wg sync.WaitGroup
		for range n {
			wg.Go(func() {
				if res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "whoami", Arguments: map[string]any{}}); err != nil || res.IsError {
					t.Errorf("concurrent whoami: %v %+v", err, res)
				}
			})
		}
		wg.Wait()
	}, 0)
	// retool changes the list of the client's own server process and
	// returns before the server says so (debounced); the client is told
	// once the host has it.
	retool := func(how string) {
		t.Helper()
		for len(changed) > 0 {
			<-changed
		}
		if res := call(t, cs, "retool", map[string]any{"whoami": how}); res.IsError {
			t.Fatalf("retool %s: %+v", how, res.Content)
		}
		select {
		case <-changed:
		case <-time.After(20 * time.Second):
			t.Fatalf("retool %s: no notifications/tools/list_changed reached the client", how)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	retool("require_n")
	asked("calls after whoami's inputSchema changed", func() {
		for range n {
			if res := call(t, cs, "whoami", map[string]any{}); !res.IsError || !strings.HasPrefix(text(res), "invalid params: ") || !strings.Contains(text(res), `"n"`) {
				t.Fatalf("whoami {} after its inputSchema requires n: isError %v %q, want the host's invalid params naming n", res.IsError, text(res))
			}
			if res := call(t, cs, "whoami", map[string]any{"n": 1}); res.IsError {
				t.Fatalf("whoami {n: 1}: %+v", res.Content)
			}
		}
	}, 1)
	retool("drop")
	asked("calls after whoami was removed", func() {
		for range n {
			_, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "whoami", Arguments: map[string]any{"n": 1}})
			if err == nil || !strings.Contains(err.Error(), `unknown tool "whoami"`) {
				t.Fatalf("whoami after it was removed from the client's list: err %v, want unknown tool", err)
			}
		}
	}, 1)
}

// TestSessionOwnListNotKeptAcrossReload (issue 32): what a client session
// keeps of a per-client MCP server's list (the list of the plugin's run
// before) is not used once the plugin is reloaded: redeclared so that
// every session of it lists whoami with an inputSchema that requires
// "n", the session's next call of whoami is checked against it. A list
// kept across the reload would show whoami with the old inputSchema,
// which lets {} through.
func TestSessionOwnListNotKeptAcrossReload(t *testing.T) {
	bin := testkit.Build(t, "./testkit/plugins/sessionmcp")
	var lists atomic.Int64
	r := countedRig(t, &lists, map[string]string{"own.mcp.json": `{"mcpServers":{"own":{"command":` + strconv.Quote(bin) + `}}}`})
	file := filepath.Join(r.dir, "own.mcp.json")
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	served := func(schema string) func() bool {
		return func() bool {
			for _, fi := range r.h.Functions() {
				if fi.Function.Name == "whoami" && strings.Contains(string(fi.Function.MCPTool), schema) {
					return true
				}
			}
			return false
		}
	}
	testkit.Eventually(t, 30*time.Second, "whoami served", served(`"inputSchema"`))
	cs := r.connect(t, mode{"sessions", "/sessions" + mcpapi.Path, "2025-11-25"}, nil)
	whoami := func() {
		t.Helper()
		if res := call(t, cs, "whoami", map[string]any{}); res.IsError {
			t.Fatalf("whoami {}: %+v", res.Content)
		}
	}
	// The session keeps its list across calls made under one route table.
	// The table may still be replaced after the start (the host's follower
	// rebuilds it for each plugin state change it was signalled, even with
	// nothing different), and a kept list is rightly not used across a
	// replacement: a pair of calls during which the table was replaced
	// shows nothing and is made again.
	for pair := 1; ; pair++ {
		table := r.h.Changed()
		whoami()
		first := lists.Load()
		whoami()
		select {
		case <-table:
			if pair == 10 {
				t.Fatal("the route table was replaced during each of 10 pairs of calls")
			}
			continue
		default:
		}
		if got := lists.Load() - first; got != 0 || first == 0 {
			t.Fatalf("the second of 2 calls under one route table asked for the client's list %d times (the first made it %d); want 0 (kept)", got, first)
		}
		break
	}
	writeFile(t, file, `{"mcpServers":{"own":{"command":`+strconv.Quote(bin)+`,"args":["--require-n"]}}}`)
	if err := r.h.Rescan(ctx); err != nil {
		t.Fatal(err)
	}
	testkit.Eventually(t, 30*time.Second, "whoami served with the inputSchema that requires n", served(`"required":["n"]`))
	if res := call(t, cs, "whoami", map[string]any{}); !res.IsError || !strings.HasPrefix(text(res), "invalid params: ") {
		t.Fatalf("whoami {} after the reload: isError %v %q, want the host's invalid params (the new inputSchema)", res.IsError, text(res))
	}
	if res := call(t, cs, "whoami", map[string]any{"n": 1}); res.IsError {
		t.Fatalf("whoami {n: 1} after the reload: %+v", res.Content)
	}
}
