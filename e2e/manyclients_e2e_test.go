package e2e_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/opentool-host/opentool-host/testkit"
)

// TestMCPEveryClientIsServed (issue 42): 64, then 256, MCP client
// sessions at once (the Go SDK's client over /mcp, each its own
// clientInfo) call a declared per-client server in the default mode
// (maxSessions 16) three times each: no call fails, each answer comes
// from a session of the client's own or from the shared session, and
// the host runs at most 16 server processes besides the shared one.
// Before, every session beyond the 16th got isError on every call.
func TestMCPEveryClientIsServed(t *testing.T) {
	dir := t.TempDir()
	sessDeclare(t, dir, "who", nil)
	hp := startHostProc(t, dir)
	shared := msServerPID(t, hp.url, hp.cmd.Process.Pid, "who")
	for _, n := range []int{64, 256} {
		t.Run(fmt.Sprint(n), func(t *testing.T) {
			var kids []int
			failed, own, viaShared := manyClients(t, hp.url, n, 3, func() {
				// Reclaimed places' servers may still be exiting.
				testkit.Eventually(t, 15*time.Second, "at most 17 server processes (maxSessions 16 and the shared one) with every session open", func() bool {
					kids = msChildren(hp.cmd.Process.Pid)
					return len(kids) <= 17
				})
			})
			if failed != 0 {
				t.Fatalf("%d clients: %d of %d calls failed", n, failed, 3*n)
			}
			t.Logf("%d clients: %d calls answered by the client's own session, %d by the shared one; %d server processes with every session open (shared %d)", n, own, viaShared, len(kids), shared)
		})
	}
	if n := strings.Count(hp.logs.String(), "serving more clients through the shared session"); n != 1 {
		t.Errorf("the shared session's serving of clients logged %d times, want once:\n%s", n, hp.logs.String())
	}
}

// manyClients connects n client sessions to url's /mcp at once, each
// calls whoami calls times, and returns the failed calls and the calls
// answered by the client's own session (the server saw its clientInfo)
// and by the shared one (the host's); once every call returned, with
// every session still open, it calls open, then closes the sessions
// (DELETE) before it returns.
func manyClients(t *testing.T, url string, n, calls int, open func()) (failed, own, viaShared int64) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	var nFailed, nOwn, nShared atomic.Int64
	var called, closed sync.WaitGroup
	release := make(chan struct{})
	called.Add(n)
	for i := range n {
		closed.Go(func() {
			name := fmt.Sprintf("client-%d", i)
			cl := mcp.NewClient(&mcp.Implementation{Name: name, Version: "1"}, nil)
			cs, err := cl.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: url + "/mcp"}, &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
			if err != nil {
				t.Errorf("%s: connect: %v", name, err)
				nFailed.Add(int64(calls))
				called.Done()
				return
			}
			defer func() { _ = cs.Close() }()
			defer func() {
				called.Done()
				<-release // every session open while open runs
			}()
			for range calls {
				res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "whoami", Arguments: map[string]any{}})
				var w whoami
				switch {
				case err != nil:
					t.Errorf("%s: whoami: %v", name, err)
				case res.IsError || len(res.Content) != 1:
					t.Errorf("%s: whoami: isError %v, content %v", name, res.IsError, res.Content)
				case json.Unmarshal([]byte(res.Content[0].(*mcp.TextContent).Text), &w) != nil:
					t.Errorf("%s: whoami: %v", name, res.Content[0])
				case w.Client == name:
					nOwn.Add(1)
					continue
				case w.Client == "opentool-host-mcp-adapter":
					nShared.Add(1)
					continue
				default:
					t.Errorf("%s: whoami answered by the session of %q", name, w.Client)
				}
				nFailed.Add(1)
			}
		})
	}
	called.Wait()
	open()
	close(release)
	closed.Wait()
	return nFailed.Load(), nOwn.Load(), nShared.Load()
}

// TestMCPKeyShareOfPlaces (issue 43): with two API keys, a declared
// per-client server of maxSessions 8 gives one key at most its share of
// the places (a quarter: 2). Key A's 10 client sessions (the Go SDK's
// client over /mcp) each call whoami, which asks its client's roots: A
// holds those calls open by not answering. Two of A's sessions get a
// session of their own (asked their roots), its other eight are answered
// by the shared session at once, and key B's client, coming last, still
// gets a session of its own (the server sees its clientInfo). Every call
// is answered once A answers, and A's holding of its share is logged
// once. Before, A's sessions took all 8 places and B was served by the
// shared session.
func TestMCPKeyShareOfPlaces(t *testing.T) {
	dir := t.TempDir()
	sessDeclare(t, dir, "who", map[string]any{"maxSessions": 8})
	hp := startHostProc(t, dir, "--api-key", "key-a", "--api-key", "key-b")
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	asked, release := make(chan string, 10), make(chan struct{})
	var releaseOnce sync.Once
	defer releaseOnce.Do(func() { close(release) })
	connect := func(key, name string, hold bool) *mcp.ClientSession {
		t.Helper()
		cl := mcp.NewClient(&mcp.Implementation{Name: name, Version: "1"}, nil) // the SDK's default: roots
		cl.AddReceivingMiddleware(func(next mcp.MethodHandler) mcp.MethodHandler {
			return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
				if method == "roots/list" && hold {
					asked <- name
					select {
					case <-release:
					case <-ctx.Done():
					}
				}
				return next(ctx, method, req)
			}
		})
		tr := &mcp.StreamableClientTransport{Endpoint: hp.url + "/mcp", HTTPClient: &http.Client{Transport: bearer(key)}}
		cs, err := cl.Connect(ctx, tr, &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
		if err != nil {
			t.Fatalf("%s: connect: %v", name, err)
		}
		t.Cleanup(func() { _ = cs.Close() })
		return cs
	}
	call := func(cs *mcp.ClientSession) (whoami, error) {
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "whoami", Arguments: map[string]any{}})
		var w whoami
		switch {
		case err != nil:
			return w, err
		case res.IsError || len(res.Content) != 1:
			return w, fmt.Errorf("isError %v, content %v", res.IsError, res.Content)
		}
		return w, json.Unmarshal([]byte(res.Content[0].(*mcp.TextContent).Text), &w)
	}
	type answer struct {
		name string
		w    whoami
		err  error
	}
	answers := make(chan answer, 10)
	for i := range 10 {
		name := fmt.Sprintf("a-%d", i)
		cs := connect("key-a", name, true)
		go func() {
			w, err := call(cs)
			answers <- answer{name, w, err}
		}()
	}
	var own []string
	var early []answer
	for len(own)+len(early) < 10 {
		select {
		case name := <-asked: // the server asks at its start and in the call: once is enough
			if !slices.Contains(own, name) {
				own = append(own, name)
			}
		case a := <-answers:
			early = append(early, a)
		case <-ctx.Done():
			t.Fatalf("key A's calls: %d asked their roots, %d answered", len(own), len(early))
		}
	}
	if len(own) != 2 {
		t.Errorf("key A's sessions with a session of their own: %v, want its share, 2 of maxSessions 8", own)
	}
	for _, a := range early {
		if a.err != nil || a.w.Client != "opentool-host-mcp-adapter" {
			t.Errorf("%s beyond its key's share: whoami = %+v, %v; want the shared session's answer", a.name, a.w, a.err)
		}
	}
	w, err := call(connect("key-b", "b", false))
	if err != nil || w.Client != "b" {
		t.Fatalf("key B's client while key A holds its calls: whoami = %+v, %v; want a session of its own (client \"b\")", w, err)
	}
	t.Logf("server processes with A's calls held and B served: %d", len(msChildren(hp.cmd.Process.Pid)))
	releaseOnce.Do(func() { close(release) })
	for range len(own) {
		if a := <-answers; a.err != nil || a.w.Client != a.name {
			t.Errorf("%s on its own session: whoami = %+v, %v", a.name, a.w, a.err)
		}
	}
	if n := strings.Count(hp.logs.String(), "holds its share of the client sessions' places"); n != 1 {
		t.Errorf("key A held to its share logged %d times, want once:\n%s", n, hp.logs.String())
	}
}

// TestMCPOneClientOneProcess (issue 42): every MCP client (the Go SDK's
// over /mcp) that calls a declared per-client server has a session of
// its own, whatever it declares (no capability at all, or the SDK's
// default roots): the server's answer is its own session's, and one client
// costs one server process, two cost two. The shared session, which no
// caller used, parks as soon as the first client's own session is up,
// with the default sharedIdle (30 s) as declared here. Before, a client
// without capabilities was served by the shared session as one of its
// callers (and shared what the server keeps per session with every
// other one), and a client with roots cost two processes for 30 s.
func TestMCPOneClientOneProcess(t *testing.T) {
	dir := t.TempDir()
	sessDeclare(t, dir, "who", nil)
	hp := startHostProc(t, dir)
	msServerPID(t, hp.url, hp.cmd.Process.Pid, "who")
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	connect := func(name string, caps *mcp.ClientCapabilities) *mcp.ClientSession {
		t.Helper()
		cl := mcp.NewClient(&mcp.Implementation{Name: name, Version: "1"}, &mcp.ClientOptions{Capabilities: caps})
		cs, err := cl.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: hp.url + "/mcp"}, &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
		if err != nil {
			t.Fatalf("%s: connect: %v", name, err)
		}
		t.Cleanup(func() { _ = cs.Close() })
		return cs
	}
	for n, c := range []struct {
		name string
		caps *mcp.ClientCapabilities
	}{{"plain", &mcp.ClientCapabilities{}}, {"rooted", nil}} { // nil: the SDK's default, roots
		cs := connect(c.name, c.caps)
		out, isErr := msCall(t, cs, "whoami", nil)
		var w whoami
		if isErr || json.Unmarshal([]byte(out), &w) != nil || w.Client != c.name {
			t.Fatalf("whoami of %s = %s (isError %v); want its own session's answer", c.name, out, isErr)
		}
		// The listing of a new client's identity costs a short session,
		// closed once listed, and the shared session parks: wait for both.
		var kids []int
		testkit.Eventually(t, 15*time.Second, fmt.Sprintf("%d server processes with %d clients", n+1, n+1), func() bool {
			kids = msChildren(hp.cmd.Process.Pid)
			return len(kids) == n+1
		})
		t.Logf("%d clients: %d server processes", n+1, len(kids))
	}
}
