package mcpadapter_test

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/hashicorp/go-hclog"
	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/modelcontextprotocol/go-sdk/oauthex"

	"github.com/opentool-host/opentool-host/declared"
	"github.com/opentool-host/opentool-host/frontend/mcpapi"
	"github.com/opentool-host/opentool-host/host"
	"github.com/opentool-host/opentool-host/host/core"
	"github.com/opentool-host/opentool-host/testkit"
)

// A server declared by URL that asks for OAuth (MCP "Authorization"):
// the SDK's streamable handler behind auth.RequireBearerToken, its
// Protected Resource Metadata (RFC 9728) and an authorization server
// (RFC 8414 metadata and a token endpoint of the client-credentials
// grant) on 127.0.0.1 in the test's process, through a real host.

// testAS is the authorization server and the protected MCP server, on
// one listener.
type testAS struct {
	url string // base URL: issuer, and the MCP endpoint at url+"/mcp"

	mu      sync.Mutex
	issued  map[string]bool // access tokens given out
	asked   int             // token requests answered with a token
	refused []string        // why token requests were refused
	methods []string        // methods of the requests to /mcp

	codes     map[string]string // authorization codes given out: their PKCE challenge
	refreshes map[string]bool   // refresh tokens given out
	authorize int               // authorization requests answered with a code
	refreshed int               // refresh_token grants answered
	resources []string          // the "resource" of each token request, by grant: "GRANT resource"
	expiresIn int
}

// Client credentials testAS accepts.
const (
	asClientID     = "host-a"
	asClientSecret = "s3cret-of-host-a"
)

// startAS serves a testAS whose tokens last expiresIn seconds.
func startAS(t *testing.T, expiresIn int) *testAS {
	a := &testAS{issued: map[string]bool{}, codes: map[string]string{}, refreshes: map[string]bool{}, expiresIn: expiresIn}
	mux := http.NewServeMux()
	mux.HandleFunc("/.well-known/oauth-authorization-server", func(w http.ResponseWriter, _ *http.Request) {
		writeJSON(w, oauthex.AuthServerMeta{
			Issuer: a.url, TokenEndpoint: a.url + "/token", AuthorizationEndpoint: a.url + "/authorize",
			TokenEndpointAuthMethodsSupported: []string{"client_secret_post"}, CodeChallengeMethodsSupported: []string{"S256"},
		})
	})
	mux.HandleFunc("GET /authorize", func(w http.ResponseWriter, r *http.Request) {
		q := r.URL.Query()
		a.mu.Lock()
		defer a.mu.Unlock()
		if q.Get("client_id") != asClientID || q.Get("code_challenge_method") != "S256" || q.Get("code_challenge") == "" || q.Get("resource") != a.url+"/mcp" || q.Get("state") == "" {
			a.refused = append(a.refused, "authorize "+q.Encode())
			http.Error(w, "bad authorization request", http.StatusBadRequest)
			return
		}
		code := randHex()
		a.codes[code] = q.Get("code_challenge")
		a.authorize++
		http.Redirect(w, r, q.Get("redirect_uri")+"?"+url.Values{"code": {code}, "state": {q.Get("state")}}.Encode(), http.StatusFound)
	})
	mux.HandleFunc("POST /token", func(w http.ResponseWriter, r *http.Request) {
		_ = r.ParseForm()
		f := r.PostForm
		a.mu.Lock()
		defer a.mu.Unlock()
		a.resources = append(a.resources, f.Get("grant_type")+" "+f.Get("resource"))
		refuse := func() {
			a.refused = append(a.refused, f.Encode())
			w.WriteHeader(http.StatusBadRequest)
			writeJSON(w, map[string]string{"error": "invalid_grant"})
		}
		if f.Get("client_id") != asClientID || f.Get("client_secret") != asClientSecret {
			a.refused = append(a.refused, f.Encode())
			w.WriteHeader(http.StatusUnauthorized)
			writeJSON(w, map[string]string{"error": "invalid_client"})
			return
		}
		answer := map[string]any{"token_type": "Bearer", "expires_in": a.expiresIn}
		switch f.Get("grant_type") {
		case "client_credentials":
		case "authorization_code":
			challenge, ok := a.codes[f.Get("code")]
			sum := sha256.Sum256([]byte(f.Get("code_verifier")))
			if !ok || base64.RawURLEncoding.EncodeToString(sum[:]) != challenge {
				refuse()
				return
			}
			delete(a.codes, f.Get("code"))
			rt := randHex()
			a.refreshes[rt] = true
			answer["refresh_token"] = rt
		case "refresh_token":
			if !a.refreshes[f.Get("refresh_token")] {
				refuse()
				return
			}
			a.refreshed++
		default:
			refuse()
			return
		}
		tok := randHex()
		a.issued[tok] = true
		a.asked++
		answer["access_token"] = tok
		writeJSON(w, answer)
	})
	s := mcp.NewServer(&mcp.Implementation{Name: "far", Version: "1.0.0"}, nil)
	s.AddTool(&mcp.Tool{Name: "echo", InputSchema: map[string]any{"type": "object"}}, func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "up"}}}, nil
	})
	verify := func(_ context.Context, tok string, _ *http.Request) (*auth.TokenInfo, error) {
		a.mu.Lock()
		defer a.mu.Unlock()
		if !a.issued[tok] {
			return nil, auth.ErrInvalidToken
		}
		return &auth.TokenInfo{UserID: asClientID}, nil
	}
	mcpH := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s }, nil)
	var protected http.Handler
	mux.Handle("/mcp", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		a.mu.Lock()
		a.methods = append(a.methods, r.Method)
		a.mu.Unlock()
		protected.ServeHTTP(w, r)
	}))
	a.url = testkit.Serve(t, mux)
	mux.Handle("/.well-known/oauth-protected-resource/mcp", auth.ProtectedResourceMetadataHandler(&oauthex.ProtectedResourceMetadata{
		Resource: a.url + "/mcp", AuthorizationServers: []string{a.url},
	}))
	protected = auth.RequireBearerToken(verify, &auth.RequireBearerTokenOptions{
		ResourceMetadataURL: a.url + "/.well-known/oauth-protected-resource/mcp", AllowMissingExpiration: true,
	})(mcpH)
	return a
}

// randHex is 16 random bytes in hex.
func randHex() string {
	b := make([]byte, 16)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// writeJSON writes v as the JSON body of a 200 response.
func writeJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(v)
}

// TestOAuthClientCredentials: a server declared with "oauth" of the
// client-credentials grant is served: the host discovers the
// authorization server from the 401 and gets a token with the declared
// secret; tokens that expire at once are fetched again for later calls,
// after the connection attempt that first asked has ended.
func TestOAuthClientCredentials(t *testing.T) {
	as := startAS(t, 1) // within oauth2's expiry margin: a new token each request
	var logged testkit.SyncBuffer
	h, _ := declaredHost(t, "far", map[string]any{"url": as.url + "/mcp", "oauth": map[string]any{
		"clientId": asClientID, "clientSecret": asClientSecret, "grant": "client_credentials", "issuer": as.url,
	}}, nil, func(c *core.Config) {
		c.Logger = hclog.New(&hclog.LoggerOptions{Output: io.MultiWriter(&logged, c.Logger.StandardWriter(&hclog.StandardLoggerOptions{})), Level: hclog.Trace})
	}, mcpapi.HTTPOptions{})
	ctx := context.Background()
	for i := range 3 {
		if _, err := h.Call(ctx, "echo", []byte(`{}`)); err != nil {
			t.Fatalf("echo %d: %v (/health: %s)", i, err, farStatus(h).LastError)
		}
	}
	as.mu.Lock()
	defer as.mu.Unlock()
	if len(as.refused) > 0 {
		t.Errorf("token requests refused: %q", as.refused)
	}
	if as.asked < 2 {
		t.Errorf("%d tokens fetched, want a new one after the first expired", as.asked)
	}
	t.Logf("%d tokens fetched for initialize, tools/list and 3 calls", as.asked)
	for _, r := range as.resources {
		if r != "client_credentials "+as.url+"/mcp" {
			t.Errorf("token request %q: want the grant with resource %s/mcp (RFC 8707)", r, as.url)
		}
	}
	if !strings.Contains(logged.String(), "far") {
		t.Fatalf("the trace log says nothing of the server: the check below would prove nothing")
	}
	secrets := []string{asClientSecret}
	for tok := range as.issued {
		secrets = append(secrets, tok)
	}
	for _, sec := range secrets {
		if strings.Contains(logged.String(), sec) {
			t.Errorf("the host's trace log holds a secret or token %q", sec)
		}
	}
}

// TestUnauthorizedNeedsAuthorization: a server answering 401 to a host
// that has no login for it (no "oauth") fails saying it needs
// authorization, and is never retried as an HTTP+SSE server (no GET of
// its URL).
func TestUnauthorizedNeedsAuthorization(t *testing.T) {
	as := startAS(t, 3600)
	dir := t.TempDir()
	body, _ := json.Marshal(map[string]any{"mcpServers": map[string]any{"far": map[string]any{"url": as.url + "/mcp"}}})
	if err := os.WriteFile(filepath.Join(dir, "far.mcp.json"), body, 0o644); err != nil {
		t.Fatal(err)
	}
	h, err := host.New(core.Config{Dir: dir, Logger: testkit.Logger(t), StateDir: t.TempDir(), CallTimeout: hostBound, Declared: declared.Serve})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), hostBound)
	defer cancel()
	if err := h.Start(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = h.Close(context.Background()) })
	testkit.Eventually(t, hostBound, "/health says the server needs authorization", func() bool {
		return strings.Contains(farStatus(h).LastError, "needs authorization (HTTP 401)")
	})
	t.Logf("/health: %s", farStatus(h).LastError)
	as.mu.Lock()
	defer as.mu.Unlock()
	for _, m := range as.methods {
		if m == http.MethodGet {
			t.Fatalf("the host retried the server over HTTP+SSE (requests %v)", as.methods)
		}
	}
}
