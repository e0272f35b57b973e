package mcpadapter_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/hashicorp/go-hclog"
	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/modelcontextprotocol/go-sdk/oauthex"
	"golang.org/x/oauth2"

	"github.com/opentool-host/opentool-host/declared"
	"github.com/opentool-host/opentool-host/declared/oauthlogin"
	"github.com/opentool-host/opentool-host/frontend/mcpapi"
	"github.com/opentool-host/opentool-host/frontend/opentoolapi"
	"github.com/opentool-host/opentool-host/frontend/route"
	"github.com/opentool-host/opentool-host/host/access"
	"github.com/opentool-host/opentool-host/host/core"
	"github.com/opentool-host/opentool-host/testkit"
)

// userServer is a protected MCP server on 127.0.0.1 that knows two
// users' tokens and answers each call with the user whose token it
// carried; it keeps every Authorization header and request it got.
type userServer struct {
	url    string
	tokens map[string]string // token -> user

	mu      sync.Mutex
	calls   []string // the user of each tools/call, in order
	headers []string // every request's Authorization header
}

func startUserServer(t *testing.T, tokens map[string]string) *userServer {
	us := &userServer{tokens: tokens}
	s := mcp.NewServer(&mcp.Implementation{Name: "far", Version: "1.0.0"}, nil)
	s.AddTool(&mcp.Tool{Name: "whoami", InputSchema: map[string]any{"type": "object"}}, func(_ context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		who := req.Extra.TokenInfo.UserID
		us.mu.Lock()
		us.calls = append(us.calls, who)
		us.mu.Unlock()
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: who}}}, nil
	})
	verify := func(_ context.Context, tok string, _ *http.Request) (*auth.TokenInfo, error) {
		who, ok := us.tokens[tok]
		if !ok {
			return nil, auth.ErrInvalidToken
		}
		return &auth.TokenInfo{UserID: who}, nil
	}
	mux := http.NewServeMux()
	h := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s }, nil)
	var protected http.Handler
	mux.Handle("/mcp", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		us.mu.Lock()
		us.headers = append(us.headers, r.Header.Get("Authorization"))
		us.mu.Unlock()
		protected.ServeHTTP(w, r)
	}))
	us.url = testkit.Serve(t, mux)
	mux.Handle("/.well-known/oauth-protected-resource/mcp", auth.ProtectedResourceMetadataHandler(&oauthex.ProtectedResourceMetadata{
		Resource: us.url + "/mcp", AuthorizationServers: []string{us.url},
	}))
	protected = auth.RequireBearerToken(verify, &auth.RequireBearerTokenOptions{
		ResourceMetadataURL: us.url + "/.well-known/oauth-protected-resource/mcp", AllowMissingExpiration: true,
	})(h)
	return us
}

// fakeLogins begins a login with a link naming the server and principal.
type fakeLogins struct{ base string }

func (f fakeLogins) Begin(_ context.Context, server, principal string) (string, error) {
	return f.base + "/login?server=" + server + "&as=" + principal, nil
}

// TestPerUserCredentials: a server declared "credentials": "per-user"
// gets each caller's call with that caller's own token: alice's calls
// reach it as alice and bob's as bob, interleaved, so that no session
// lends one's token to the other; carol, who holds no token, gets
// needs_login (retryable) with her own login link and the server sees
// no request of hers; dave, whose token the server refuses (and cannot
// be refreshed), gets his; bob, once his token is deleted, gets the link
// too; no token appears in the host's log.
func TestPerUserCredentials(t *testing.T) {
	const aliceTok, bobTok = "tok-alice-5f1e0c7d", "tok-bob-99a3b2c1"
	srv := startUserServer(t, map[string]string{aliceTok: "alice", bobTok: "bob"})
	store := &oauthlogin.MemoryStore{}
	for p, tok := range map[string]string{"alice": aliceTok, "bob": bobTok} {
		if err := store.Put("far", p, &oauth2.Token{AccessToken: tok, TokenType: "Bearer"}); err != nil {
			t.Fatal(err)
		}
	}
	var logged testkit.SyncBuffer
	h, _ := declaredHost(t, "far", map[string]any{"url": srv.url + "/mcp", "oauth": map[string]any{}, "credentials": "per-user"}, nil, func(c *core.Config) {
		c.Declared = declared.ServeWith(declared.Options{Tokens: store, Logins: fakeLogins{base: "https://login.example"}})
		c.Logger = hclog.New(&hclog.LoggerOptions{Output: &logged, Level: hclog.Trace})
	}, mcpapi.HTTPOptions{})
	whoami := func(p string) (string, error) {
		res, err := h.Call(as(t, p), "whoami", []byte(`{}`))
		if err != nil {
			return "", err
		}
		return string(res), nil
	}
	for i := range 3 {
		for _, p := range []string{"alice", "bob"} {
			got, err := whoami(p)
			if err != nil {
				t.Fatalf("call %d as %s: %v", i, p, err)
			}
			if !strings.Contains(got, `"`+p+`"`) {
				t.Fatalf("call %d as %s reached the server as %s", i, p, got)
			}
		}
	}
	srv.mu.Lock()
	n := len(srv.headers)
	srv.mu.Unlock()

	_, err := whoami("carol")
	e := core.AsError(err)
	if e == nil || e.Kind != core.KindNeedsLogin || !e.Kind.Retryable() {
		t.Fatalf("carol without a token: %v, want needs_login", err)
	}
	if want := "https://login.example/login?server=far&as=carol"; e.Login != want || strings.Contains(e.Error(), "login.example") || !strings.Contains(e.CallerText(), want) {
		t.Errorf("carol's login is %q (error %q, her text %q), want %q in Login and her text only: a logged error holds no login state", e.Login, e.Error(), e.CallerText(), want)
	}
	srv.mu.Lock()
	if len(srv.headers) != n {
		t.Errorf("carol's call reached the server: %q", srv.headers[n:])
	}
	srv.mu.Unlock()

	if err := store.Put("far", "dave", &oauth2.Token{AccessToken: "tok-dave-not-known"}); err != nil {
		t.Fatal(err)
	}
	_, err = whoami("dave")
	if e := core.AsError(err); e == nil || e.Kind != core.KindNeedsLogin || !strings.Contains(e.Login, "as=dave") || !strings.Contains(e.Message, "refused") {
		t.Fatalf("dave, whose token the server refuses: %v, want needs_login with his link", err)
	}

	if err := store.Delete("far", "bob"); err != nil {
		t.Fatal(err)
	}
	_, err = whoami("bob")
	if e := core.AsError(err); e == nil || e.Kind != core.KindNeedsLogin || !strings.Contains(e.Login, "as=bob") {
		t.Fatalf("bob after his token was deleted: %v, want needs_login with his link", err)
	}
	if got, err := whoami("alice"); err != nil || !strings.Contains(got, `"alice"`) {
		t.Fatalf("alice after bob's logout: %q, %v", got, err)
	}

	srv.mu.Lock()
	defer srv.mu.Unlock()
	want := []string{"alice", "bob", "alice", "bob", "alice", "bob", "alice"}
	if strings.Join(srv.calls, ",") != strings.Join(want, ",") {
		t.Errorf("the server's calls were made as %q, want %q", srv.calls, want)
	}
	for _, hd := range srv.headers {
		if hd != "" && hd != "Bearer "+aliceTok && hd != "Bearer "+bobTok && hd != "Bearer tok-dave-not-known" {
			t.Errorf("the server got Authorization %q", hd)
		}
	}
	for _, tok := range []string{aliceTok, bobTok, "tok-dave-not-known"} {
		if strings.Contains(logged.String(), tok) {
			t.Errorf("the host's log holds the token %q", tok)
		}
	}
}

// TestPerUserNeedsAPrincipal: a caller without a principal (keys off)
// is refused by a per-user server, which never uses another's token.
func TestPerUserNeedsAPrincipal(t *testing.T) {
	srv := startUserServer(t, map[string]string{"tok-a": "alice"})
	store := &oauthlogin.MemoryStore{}
	_ = store.Put("far", "alice", &oauth2.Token{AccessToken: "tok-a"})
	h, _ := declaredHost(t, "far", map[string]any{"url": srv.url + "/mcp", "oauth": map[string]any{}, "credentials": "per-user"}, nil, func(c *core.Config) {
		c.Declared = declared.ServeWith(declared.Options{Tokens: store})
	}, mcpapi.HTTPOptions{})
	_, err := h.Call(context.Background(), "whoami", []byte(`{}`))
	if err == nil || !strings.Contains(err.Error(), "no principal") {
		t.Fatalf("a call without a principal: %v, want the refusal", err)
	}
	if errors.Is(err, core.KindNeedsLogin) {
		t.Errorf("a caller without a principal cannot log in: %v", err)
	}
	srv.mu.Lock()
	defer srv.mu.Unlock()
	if len(srv.calls) != 0 {
		t.Errorf("the server got calls %q", srv.calls)
	}
}

// bearer adds Authorization: Bearer key to every request.
type bearer struct{ key string }

func (b bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.key)
	return http.DefaultTransport.RoundTrip(r)
}

// TestPerUserLoginLinkInEachProtocol: through /mcp and /opentool/call
// behind two API keys, the first key's principal (api-key-1) holds a
// token and is served as its user; the second's gets its own login link:
// an MCP client that declared URL-mode elicitation as the JSON-RPC
// error -32042 with the link as its one URL elicitation (2025-11-25),
// as an input_required round of that elicitation (2026-07-28; declined,
// the isError result naming the link),
// one that did not as an isError result with _meta's login, and
// /opentool/call as data.kind needs_login with data.login.
func TestPerUserLoginLinkInEachProtocol(t *testing.T) {
	srv := startUserServer(t, map[string]string{"tok-k1-7c2d": "alice"})
	store := &oauthlogin.MemoryStore{}
	_ = store.Put("far", "api-key-1", &oauth2.Token{AccessToken: "tok-k1-7c2d"})
	dir := t.TempDir()
	d, _ := json.Marshal(map[string]any{"mcpServers": map[string]any{"far": map[string]any{"url": srv.url + "/mcp", "oauth": map[string]any{}, "credentials": "per-user"}}})
	if err := os.WriteFile(filepath.Join(dir, "far.mcp.json"), d, 0o644); err != nil {
		t.Fatal(err)
	}
	h := testkit.StartHost(t, func(c *core.Config) {
		c.Dir, c.CallTimeout = dir, hostBound
		c.Declared = declared.ServeWith(declared.Options{Tokens: store, Logins: fakeLogins{base: "https://login.example"}})
	})
	guard, err := access.New(access.Config{Keys: []string{"key-one", "key-two"}, Tag: func(ctx context.Context, name string) context.Context {
		return core.WithCaller(ctx, core.Caller{Key: name})
	}})
	if err != nil {
		t.Fatal(err)
	}
	mux := http.NewServeMux()
	mux.Handle(mcpapi.Path, mcpapi.New(h, mcpapi.Config{Logger: testkit.Logger(t)}).Handler(mcpapi.HTTPOptions{Sessions: true}))
	mux.Handle("/", route.Mux(opentoolapi.New(h, opentoolapi.Config{Version: "test", Logger: testkit.Logger(t)}).Routes()))
	base := testkit.Serve(t, guard.Middleware(mux))
	const link = "https://login.example/login?server=far&as=api-key-2"

	connect := func(key string, opts *mcp.ClientOptions, version string) *mcp.ClientSession {
		t.Helper()
		c := mcp.NewClient(&mcp.Implementation{Name: "t", Version: "1"}, opts)
		cs, err := c.Connect(context.Background(), &mcp.StreamableClientTransport{Endpoint: base + mcpapi.Path, HTTPClient: &http.Client{Transport: bearer{key}}}, &mcp.ClientSessionOptions{ProtocolVersion: version})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = cs.Close() })
		return cs
	}
	one := connect("key-one", nil, "")
	res, err := one.CallTool(context.Background(), &mcp.CallToolParams{Name: "whoami"})
	if err != nil || res.IsError || len(res.Content) != 1 || res.Content[0].(*mcp.TextContent).Text != "alice" {
		t.Fatalf("key-one's call: %+v, %v", res, err)
	}

	urlCaps := &mcp.ClientCapabilities{Elicitation: &mcp.ElicitationCapabilities{URL: &mcp.URLElicitationCapabilities{}}}
	two := connect("key-two", &mcp.ClientOptions{Capabilities: urlCaps}, "2025-11-25")
	_, err = two.CallTool(context.Background(), &mcp.CallToolParams{Name: "whoami"})
	var je *jsonrpc.Error
	if !errors.As(err, &je) || je.Code != mcp.CodeURLElicitationRequired {
		t.Fatalf("key-two with URL elicitation: %v, want the JSON-RPC error -32042", err)
	}
	var data struct {
		Elicitations []mcp.ElicitParams `json:"elicitations"`
	}
	if err := json.Unmarshal(je.Data, &data); err != nil || len(data.Elicitations) != 1 || data.Elicitations[0].Mode != "url" || data.Elicitations[0].URL != link || data.Elicitations[0].ElicitationID == "" {
		t.Errorf("key-two's -32042 data: %s (%v), want one URL elicitation of %s", je.Data, err, link)
	}

	// A client of 2026-07-28 (sessionless) gets the link as an
	// input_required round's URL elicitation; declining it ends the call
	// with the isError result that names the link.
	var asked []*mcp.ElicitParams
	rounds := connect("key-two", &mcp.ClientOptions{Capabilities: urlCaps, ElicitationHandler: func(_ context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
		asked = append(asked, req.Params)
		return &mcp.ElicitResult{Action: "decline"}, nil
	}}, "2026-07-28")
	res, err = rounds.CallTool(context.Background(), &mcp.CallToolParams{Name: "whoami"})
	if err != nil || !res.IsError || len(asked) != 1 || asked[0].Mode != "url" || asked[0].URL != link || !metaNames(res.Meta, link) {
		t.Fatalf("key-two of 2026-07-28, declining: %+v, %v; asked %+v; want one URL elicitation of %s, then an isError result naming it", res, err, asked, link)
	}

	plain := connect("key-two", nil, "")
	res, err = plain.CallTool(context.Background(), &mcp.CallToolParams{Name: "whoami"})
	if err != nil || !res.IsError {
		t.Fatalf("key-two without URL elicitation: %+v, %v; want an isError result", res, err)
	}
	meta, _ := res.Meta[mcpapi.ErrorMetaKey].(map[string]any)
	if meta["kind"] != "needs_login" || meta["login"] != link || meta["retryable"] != true || !strings.Contains(res.Content[0].(*mcp.TextContent).Text, link) {
		t.Errorf("key-two's result: %v %+v", meta, res.Content[0])
	}

	req, _ := http.NewRequest(http.MethodPost, base+"/opentool/call", strings.NewReader(`{"jsonrpc":"2.0","method":"whoami","params":{},"id":"1"}`))
	req.Header.Set("Content-Type", "application/json")
	resp, err := (&http.Client{Transport: bearer{"key-two"}}).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var body struct {
		Error struct {
			Message string         `json:"message"`
			Data    map[string]any `json:"data"`
		} `json:"error"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&body); err != nil {
		t.Fatal(err)
	}
	if body.Error.Data["kind"] != "needs_login" || body.Error.Data["login"] != link || !strings.Contains(body.Error.Message, link) {
		t.Errorf("/opentool/call as key-two: %+v", body.Error)
	}
	srv.mu.Lock()
	defer srv.mu.Unlock()
	if strings.Join(srv.calls, ",") != "alice" {
		t.Errorf("the server's calls: %q, want alice's one", srv.calls)
	}
}

// TestPerUserNeedsTheTokenKey: a host that keeps no tokens (declared.Serve,
// no --oauth-token-key) fails a per-user server at its start, saying
// what it needs, and sends the server nothing.
func TestPerUserNeedsTheTokenKey(t *testing.T) {
	srv := startUserServer(t, map[string]string{})
	h, _ := declaredHostBy(t, testkit.StartHostAsIs, "far", map[string]any{"url": srv.url + "/mcp", "oauth": map[string]any{}, "credentials": "per-user"}, nil, nil, mcpapi.HTTPOptions{})
	_, err := h.Call(as(t, "alice"), "whoami", []byte(`{}`))
	if err == nil {
		t.Fatal("a per-user server served without a token store")
	}
	if st := farStatus(h); !strings.Contains(st.LastError, "--oauth-token-key") {
		t.Errorf("far's status: %s %q, want the failure naming --oauth-token-key", st.State, st.LastError)
	}
	srv.mu.Lock()
	defer srv.mu.Unlock()
	if len(srv.headers) != 0 {
		t.Errorf("the server got %d requests", len(srv.headers))
	}
}

// as is a context of a call by principal p.
func as(_ *testing.T, p string) context.Context {
	return core.WithCaller(context.Background(), core.Caller{Key: p})
}

// metaNames reports whether meta, in JSON, contains the JSON string s.
func metaNames(meta mcp.Meta, s string) bool {
	b, _ := json.Marshal(meta)
	q, _ := json.Marshal(s)
	return strings.Contains(string(b), string(q))
}
