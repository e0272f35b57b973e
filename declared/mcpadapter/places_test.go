package mcpadapter

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/opentool-host/opentool-host/host/access"
	"github.com/opentool-host/opentool-host/host/core"
	"github.com/opentool-host/opentool-host/internal/mcpsession"
	"github.com/opentool-host/opentool-host/protocol/decl"
	"github.com/opentool-host/opentool-host/testkit"
)

// placesServer serves over real HTTP on 127.0.0.1 an MCP server whose
// tool "who" answers the clientInfo.name of its session, "hold" returns
// once release closes (entered is told when it starts), and "roots"
// answers its client's roots/list, or the error it got.
func placesServer(t *testing.T, entered chan<- string, release <-chan struct{}) string {
	t.Helper()
	name := func(req *mcp.CallToolRequest) string {
		if ip := req.Session.InitializeParams(); ip != nil && ip.ClientInfo != nil {
			return ip.ClientInfo.Name
		}
		return ""
	}
	text := func(s string) *mcp.CallToolResult {
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: s}}}
	}
	return testkit.Serve(t, mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server {
		s := mcp.NewServer(&mcp.Implementation{Name: "places", Version: "1"}, nil)
		mcp.AddTool(s, &mcp.Tool{Name: "who"}, func(_ context.Context, req *mcp.CallToolRequest, _ struct{}) (*mcp.CallToolResult, any, error) {
			return text(name(req)), nil, nil
		})
		mcp.AddTool(s, &mcp.Tool{Name: "hold"}, func(ctx context.Context, req *mcp.CallToolRequest, _ struct{}) (*mcp.CallToolResult, any, error) {
			entered <- name(req)
			select {
			case <-release:
			case <-ctx.Done():
			}
			return text("held"), nil, nil
		})
		mcp.AddTool(s, &mcp.Tool{Name: "roots"}, func(ctx context.Context, req *mcp.CallToolRequest, _ struct{}) (*mcp.CallToolResult, any, error) {
			res, err := req.Session.ListRoots(ctx, nil)
			if err != nil {
				return text("error: " + err.Error()), nil, nil
			}
			return text("roots: " + res.Roots[0].URI), nil, nil
		})
		return s
	}, nil)) + "/mcp"
}

// placeClient is a client session named name whose Ask answers
// roots/list with its own root and counts what it was asked.
func placeClient(t *testing.T, name string) (*mcpsession.Session, *atomic.Int32) {
	done := make(chan struct{})
	t.Cleanup(func() { close(done) })
	var asked atomic.Int32
	return &mcpsession.Session{
		ID:   name,
		Init: &mcp.InitializeParams{ProtocolVersion: ProtocolVersion, ClientInfo: &mcp.Implementation{Name: name, Version: "1"}, Capabilities: &mcp.ClientCapabilities{RootsV2: &mcp.RootCapabilities{}}},
		Done: done,
		Ask: func(context.Context, string, json.RawMessage) (json.RawMessage, error) {
			asked.Add(1)
			return []byte(`{"roots":[{"uri":"file:///` + name + `"}]}`), nil
		},
		Log: func(context.Context, *mcp.LoggingMessageParams) {},
	}, &asked
}

// TestEveryClientGetsAPlace (issue 42): with maxSessions 2, a third
// client session gets the place of the least recently used idle one
// (whose front end is told its tools changed), and a client that comes
// while every place is busy is served by the shared session: its call
// is answered (the server sees the host's clientInfo), and a server
// request during it is refused, reaching no client. Before, both were
// refused their calls for the limit.
func TestEveryClientGetsAPlace(t *testing.T) {
	entered, release := make(chan string, 4), make(chan struct{})
	r := start(t, decl.Launch{Name: "places", Server: decl.MCPServer{URL: placesServer(t, entered, release)}}, Options{MaxSessions: 2, ReclaimIdle: -1})
	load(t, r.Adapter)
	ctx, cancel := context.WithTimeout(context.Background(), bound)
	defer cancel()
	as := func(s *mcpsession.Session, tool string) string {
		t.Helper()
		out, err := callAs(r.Adapter, ctx, withSession(s), tool, nil)
		if err != nil {
			t.Fatalf("%s of %s: %v", tool, s.ID, err)
		}
		return string(out)
	}
	a, _ := placeClient(t, "a")
	b, _ := placeClient(t, "b")
	c, _ := placeClient(t, "c")
	d, dAsked := placeClient(t, "d")
	aChanged := make(chan struct{}, 1)
	a.ToolsChanged = func() { aChanged <- struct{}{} }
	for _, s := range []*mcpsession.Session{a, b} {
		if out := as(s, "who"); !strings.Contains(out, s.ID) {
			t.Fatalf("who of %s = %s", s.ID, out)
		}
	}
	as(b, "who") // a is now the least recently used
	if out := as(c, "who"); !strings.Contains(out, `"c"`) {
		t.Fatalf("who of c, a third client with maxSessions 2 = %s, want its own session", out)
	}
	select {
	case <-aChanged:
	case <-ctx.Done():
		t.Fatal("a's place was not reclaimed (its ToolsChanged never called)")
	}
	// b and c busy: d is served by the shared session.
	held := make(chan error, 2)
	for _, s := range []*mcpsession.Session{b, c} {
		go func() {
			_, err := callAs(r.Adapter, ctx, withSession(s), "hold", nil)
			held <- err
		}()
		<-entered
	}
	if out := as(d, "who"); !strings.Contains(out, "opentool-host-mcp-adapter") {
		t.Fatalf("who of d, every place busy = %s, want the shared session's client", out)
	}
	if out := as(d, "roots"); !strings.Contains(out, "shared session") {
		t.Fatalf("roots of d on the shared session = %s, want the server's request refused, saying why", out)
	}
	if n := dAsked.Load(); n != 0 {
		t.Fatalf("d was asked %d requests outside its call", n)
	}
	close(release)
	for range 2 {
		if err := <-held; err != nil {
			t.Fatal(err)
		}
	}
}

// whoOf is the answer of the places server's "who" called by a for s.
func whoOf(t *testing.T, ctx context.Context, a *Adapter, s *mcpsession.Session) string {
	t.Helper()
	out, err := callAs(a, ctx, withSession(s), "who", nil)
	if err != nil {
		t.Fatalf("who of %s: %v", s.ID, err)
	}
	return string(out)
}

// TestSteadyClientKeepsItsPlace: a client that keeps calling keeps its
// session while another client wants its place (maxSessions 1): the other
// is served by the shared session until the first has gone unused for
// ReclaimIdle, then gets the place. Before, a place changed hands
// whenever nothing of its client was in flight, so that clients calling
// steadily, more than places, took each other's places (and, for a
// command server, processes) up to once a second.
func TestSteadyClientKeepsItsPlace(t *testing.T) {
	const quiet = 2 * time.Second
	r := start(t, decl.Launch{Name: "places", Server: decl.MCPServer{URL: placesServer(t, nil, nil)}}, Options{MaxSessions: 1, ReclaimIdle: quiet})
	load(t, r.Adapter)
	ctx, cancel := context.WithTimeout(context.Background(), bound)
	defer cancel()
	who := func(s *mcpsession.Session) string { return whoOf(t, ctx, r.Adapter, s) }
	a, _ := placeClient(t, "a")
	b, _ := placeClient(t, "b")
	var aChanged atomic.Int32
	a.ToolsChanged = func() { aChanged.Add(1) }
	if out := who(a); !strings.Contains(out, `"a"`) {
		t.Fatalf("who of a = %s, want its own session", out)
	}
	began := time.Now()
	who(a)
	if out := who(b); !strings.Contains(out, "opentool-host-mcp-adapter") {
		if time.Since(began) < quiet {
			t.Fatalf("who of b while a was used %v ago = %s, want the shared session's client", time.Since(began), out)
		}
		t.Skipf("the machine took %v for two calls, more than ReclaimIdle", time.Since(began))
	}
	if n := aChanged.Load(); n != 0 {
		t.Fatalf("a's place was reclaimed while a called steadily (%d)", n)
	}
	if out := who(a); !strings.Contains(out, `"a"`) {
		t.Fatalf("who of a after b = %s, want its own session still", out)
	}
	testkit.Eventually(t, bound, "b gets a's place once a has gone unused for ReclaimIdle", func() bool {
		return strings.Contains(who(b), `"b"`)
	})
	if aChanged.Load() == 0 {
		t.Fatal("b got a session of its own without a's place reclaimed")
	}
}

// TestKeyShareOfPlaces (issue 43): a key at its share of the places
// (MaxSessionsPerKey) takes the place of its own least recently used idle
// session, never another key's; and when every place is taken, a key
// under its share takes the place of a key over its share (here one
// whose sessions opened when one key was in force) before the least
// recently used one of any key. Before, the least recently used idle
// session of any key was reclaimed.
func TestKeyShareOfPlaces(t *testing.T) {
	r := start(t, decl.Launch{Name: "places", Server: decl.MCPServer{URL: placesServer(t, nil, nil)}}, Options{MaxSessions: 4, ReclaimIdle: -1})
	load(t, r.Adapter)
	ctx, cancel := context.WithTimeout(context.Background(), bound)
	defer cancel()
	changed := map[string]int{} // ToolsChanged calls by client: its place reclaimed
	var mu sync.Mutex
	client := func(name, key string, keys int) *mcpsession.Session {
		s, _ := placeClient(t, name)
		s.Key, s.Keys = key, keys
		s.ToolsChanged = func() {
			mu.Lock()
			defer mu.Unlock()
			changed[name]++
		}
		return s
	}
	who := func(s *mcpsession.Session) string { return whoOf(t, ctx, r.Adapter, s) }
	reclaimed := func(name string) bool {
		mu.Lock()
		defer mu.Unlock()
		return changed[name] > 0
	}
	c := client("c", "key-c", 2) // share 1; the least recently used
	who(c)
	var as []*mcpsession.Session
	for i := range 3 { // one key in force when they opened: every place is its share
		as = append(as, client(fmt.Sprintf("a%d", i), "key-a", 1))
		who(as[i])
	}
	b := client("b", "key-b", 2) // share 1, every place taken
	if out := who(b); !strings.Contains(out, `"b"`) {
		t.Fatalf("who of b = %s, want a session of its own", out)
	}
	testkit.Eventually(t, bound, "a0's place reclaimed for b", func() bool { return reclaimed("a0") })
	if reclaimed("c") {
		t.Fatal("c's place, of a key within its share, reclaimed before a place of a key over its share")
	}
	b2 := client("b2", "key-b", 2) // key-b at its share: its own idle b's place
	if out := who(b2); !strings.Contains(out, `"b2"`) {
		t.Fatalf("who of b2 = %s, want a session of its own", out)
	}
	testkit.Eventually(t, bound, "b's place reclaimed for b2", func() bool { return reclaimed("b") })
	if reclaimed("c") || reclaimed("a1") || reclaimed("a2") {
		t.Fatalf("another key's place reclaimed for a key at its share: %v", changed)
	}
}

// TestClientStateStaysItsOwn: a client session that declares no
// capability at all gets a session of its own all the same, so that
// what the server keeps per session (here: a value a tool stored) is
// that client's alone: another such client, and a caller of the shared
// session, do not get it. Before (issue 42's first take), a client
// without roots, sampling or elicitation was served by the shared
// session as one of its callers, and the next one read its value.
func TestClientStateStaysItsOwn(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), bound)
	defer cancel()
	plain := func(name string) *mcpsession.Session {
		s, _ := placeClient(t, name)
		s.Init.Capabilities = &mcp.ClientCapabilities{}
		return s
	}
	r := start(t, decl.Launch{Name: "kept", Server: decl.MCPServer{URL: keeperServer(t)}}, Options{})
	load(t, r.Adapter)
	p1, p2 := plain("p1"), plain("p2")
	if out, err := callAs(r.Adapter, ctx, withSession(p1), "put", []byte(`{"v":"p1's secret"}`)); err != nil {
		t.Fatalf("put of p1 = %s, %v", out, err)
	}
	for what, x := range map[string]*core.Exchange{"p1": withSession(p1), "p2": withSession(p2), "the shared session's caller": nil} {
		out, err := callAs(r.Adapter, ctx, x, "get", nil)
		if err != nil {
			t.Fatalf("get of %s: %v", what, err)
		}
		if got := strings.Contains(string(out), "p1's secret"); got != (what == "p1") {
			t.Errorf("get of %s = %s; want p1's value for p1 alone", what, out)
		}
	}
	if !r.hasOwn(p1) || !r.hasOwn(p2) {
		t.Errorf("clients without capabilities: own sessions %v, %v; want both", r.hasOwn(p1), r.hasOwn(p2))
	}
}

// keeperServer serves over real HTTP on 127.0.0.1 an MCP server that
// keeps one value per session: tool "put" {"v"} stores it, "get"
// answers it ("" before any put).
func keeperServer(t *testing.T) string {
	t.Helper()
	var mu sync.Mutex
	kept := map[*mcp.ServerSession]string{}
	return testkit.Serve(t, mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server {
		s := mcp.NewServer(&mcp.Implementation{Name: "keeper", Version: "1"}, nil)
		mcp.AddTool(s, &mcp.Tool{Name: "put"}, func(_ context.Context, req *mcp.CallToolRequest, in struct {
			V string `json:"v"`
		}) (*mcp.CallToolResult, any, error) {
			mu.Lock()
			defer mu.Unlock()
			kept[req.Session] = in.V
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "kept"}}}, nil, nil
		})
		mcp.AddTool(s, &mcp.Tool{Name: "get"}, func(_ context.Context, req *mcp.CallToolRequest, _ struct{}) (*mcp.CallToolResult, any, error) {
			mu.Lock()
			defer mu.Unlock()
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "kept: " + kept[req.Session]}}}, nil, nil
		})
		return s
	}, nil)) + "/mcp"
}

// TestOwnRestartDelay: a client's own session after quick exits starts
// at once the first time, then after 250 ms doubling, capped.
func TestOwnRestartDelay(t *testing.T) {
	for n, want := range map[int]time.Duration{0: 0, 1: 0, 2: 250 * time.Millisecond, 3: 500 * time.Millisecond, 4: time.Second, 7: 8 * time.Second, 8: ownRestartMax, 100: ownRestartMax} {
		if got := ownRestartDelay(n); got != want {
			t.Errorf("ownRestartDelay(%d) = %v, want %v", n, got, want)
		}
	}
}

// TestKeyCallersHeldToTheirShare: the callers without a client session
// of a key (keySession) take one place, within their key's share with
// the keys in force (two: a quarter of maxSessions 4, one place). With
// every place taken and their key's client session b holding its share,
// the key's next call gets b's place, not another key's; the server sees
// the adapter's client for it. Before, such callers had no count of the
// keys, so their key's share was every place and the least recently
// used session of another key (c) gave up its place.
func TestKeyCallersHeldToTheirShare(t *testing.T) {
	r := start(t, decl.Launch{Name: "places", Server: decl.MCPServer{URL: placesServer(t, nil, nil)}}, Options{MaxSessions: 4, ReclaimIdle: -1})
	load(t, r.Adapter)
	ctx, cancel := context.WithTimeout(context.Background(), bound)
	defer cancel()
	grant := guardGrants(t, "key-b-0123456789", "key-c-0123456789")[0] // key b's
	if grant.KeysInForce() != 2 {
		t.Fatalf("key b's grant counts %d keys", grant.KeysInForce())
	}
	changed := map[string]int{}
	var mu sync.Mutex
	client := func(name, key string) *mcpsession.Session {
		s, _ := placeClient(t, name)
		s.Key, s.Keys = key, 2
		s.ToolsChanged = func() {
			mu.Lock()
			defer mu.Unlock()
			changed[name]++
		}
		whoOf(t, ctx, r.Adapter, s)
		return s
	}
	reclaimed := func(name string) bool {
		mu.Lock()
		defer mu.Unlock()
		return changed[name] > 0
	}
	client("c", "api-key-2") // the least recently used
	client("d", "api-key-3")
	client("e", "api-key-4")
	client("b", grant.Name()) // key b at its share
	out, err := callAs(r.Adapter, access.WithGrant(ctx, grant), &core.Exchange{}, "who", nil)
	if err != nil || !strings.Contains(string(out), "opentool-host-mcp-adapter") {
		t.Fatalf("who of key b's caller without a session = %s, %v; want the adapter's client on a session of its own", out, err)
	}
	testkit.Eventually(t, bound, "b's place reclaimed for its key's callers", func() bool { return reclaimed("b") })
	if reclaimed("c") || reclaimed("d") || reclaimed("e") {
		t.Fatalf("another key's place reclaimed for key b's callers: %v", changed)
	}
}

// TestKeyedSessionsBounded: past maxKeyed grants, the sessions of those
// without an upstream session are forgotten and ended (their Done
// closed, so that nothing waits on them), and a grant is given a new one
// at its next call.
func TestKeyedSessionsBounded(t *testing.T) {
	r := start(t, decl.Launch{Name: "places", Server: decl.MCPServer{URL: placesServer(t, nil, nil)}}, Options{MaxSessions: 4})
	load(t, r.Adapter)
	keys := make([]string, maxKeyed+1)
	for i := range keys {
		keys[i] = fmt.Sprintf("key-%04d-0123456789", i)
	}
	grants := guardGrants(t, keys...)
	var sessions []*mcpsession.Session
	for i, g := range grants {
		s := r.Adapter.keySession(g, true)
		if s == nil {
			t.Fatalf("no session for key %d", i)
		}
		sessions = append(sessions, s)
	}
	select {
	case <-sessions[0].Done:
	default:
		t.Fatal("the first grant's session, without an upstream session, still open past maxKeyed grants")
	}
	r.Adapter.clients.mu.Lock()
	n := len(r.Adapter.clients.keyed)
	r.Adapter.clients.mu.Unlock()
	if n > maxKeyed {
		t.Errorf("%d grants' sessions kept; want at most %d", n, maxKeyed)
	}
	if s := r.Adapter.keySession(grants[0], true); s == sessions[0] {
		t.Error("a forgotten grant's next call got its ended session again")
	}
}

// guardGrants returns the grant of each of keys as a guard of those
// API keys hands it to a request that carries it.
func guardGrants(t *testing.T, keys ...string) []*access.Grant {
	t.Helper()
	guard, err := access.New(access.Config{Keys: keys})
	if err != nil {
		t.Fatal(err)
	}
	var got *access.Grant
	h := guard.Middleware(http.HandlerFunc(func(_ http.ResponseWriter, r *http.Request) { got = access.GrantFrom(r.Context()) }))
	grants := make([]*access.Grant, len(keys))
	for i, key := range keys {
		req := httptest.NewRequest(http.MethodPost, "/", nil)
		req.Header.Set("Authorization", "Bearer "+key)
		got = nil
		h.ServeHTTP(httptest.NewRecorder(), req)
		if got == nil {
			t.Fatalf("key %d refused", i)
		}
		grants[i] = got
	}
	return grants
}
