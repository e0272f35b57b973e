package mcpadapter_test

import (
	"context"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hashicorp/go-hclog"

	"github.com/opentool-host/opentool-host/declared"
	"github.com/opentool-host/opentool-host/declared/oauthlogin"
	"github.com/opentool-host/opentool-host/frontend/mcpapi"
	"github.com/opentool-host/opentool-host/host"
	"github.com/opentool-host/opentool-host/host/core"
	"github.com/opentool-host/opentool-host/testkit"
)

// TestOAuthLogin: a server declared with "oauth" of the authorization
// code grant needs a login until a person makes one: the registry's
// Begin gives the authorization URL (PKCE S256 and resource on it, the
// declared client, its issuer pinned), the test follows it as the
// person's browser to the host's callback, and the host serves the
// server's tools at once (the login's onLogin rescans); its tokens,
// which expire at once, are refreshed with the refresh token (resource
// on each refresh) and no second authorization; the token file is
// sealed (no token in it, mode 0600); no token reaches the log; after
// logout a call fails saying it needs a login.
func TestOAuthLogin(t *testing.T) {
	as := startAS(t, 1) // within oauth2's expiry margin: each request refreshes
	stateDir := t.TempDir()
	tokens := filepath.Join(stateDir, "oauth-tokens")
	store, err := oauthlogin.OpenFileStore(tokens, []byte("operator secret"))
	if err != nil {
		t.Fatal(err)
	}
	var h *host.Host
	cb := http.NewServeMux()
	var reg *oauthlogin.Registry
	cb.HandleFunc("GET "+oauthlogin.CallbackPath, func(w http.ResponseWriter, r *http.Request) { reg.Callback(w, r) })
	cbURL := testkit.Serve(t, cb)
	reg = oauthlogin.NewRegistry(store, cbURL+oauthlogin.CallbackPath, func(string, string) { _ = h.Rescan(context.Background()) })
	var logged testkit.SyncBuffer
	h, _ = declaredHostBy(t, testkit.StartHostAsIs, "far", map[string]any{"url": as.url + "/mcp", "oauth": map[string]any{
		"clientId": asClientID, "clientSecret": asClientSecret, "issuer": as.url,
	}}, nil, func(c *core.Config) {
		c.Declared = declared.ServeWith(declared.Options{Registry: reg})
		c.Logger = hclog.New(&hclog.LoggerOptions{Output: io.MultiWriter(&logged, c.Logger.StandardWriter(&hclog.StandardLoggerOptions{})), Level: hclog.Trace})
	}, mcpapi.HTTPOptions{})
	testkit.Eventually(t, hostBound, "/health says the server needs a login", func() bool {
		return strings.Contains(farStatus(h).LastError, "opentool-host auth login far")
	})
	t.Logf("before the login, /health: %s", farStatus(h).LastError)

	ctx := context.Background()
	authURL, err := reg.Begin(ctx, "far", "")
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("authorization URL: %s", authURL)
	resp, err := http.Get(authURL) // the person's browser: the AS approves and redirects to the callback
	if err != nil {
		t.Fatal(err)
	}
	page, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || !strings.Contains(string(page), "Logged in to far") {
		t.Fatalf("callback: %d %s", resp.StatusCode, page)
	}
	testkit.Eventually(t, hostBound, "the server's tools are served after the login", func() bool {
		_, err := h.Call(ctx, "echo", []byte(`{}`))
		return err == nil
	})
	for i := range 3 {
		if _, err := h.Call(ctx, "echo", []byte(`{}`)); err != nil {
			t.Fatalf("echo %d: %v", i, err)
		}
	}
	as.mu.Lock()
	if len(as.refused) > 0 {
		t.Errorf("requests refused by the authorization server: %q", as.refused)
	}
	if as.authorize != 1 || as.refreshed < 1 {
		t.Errorf("%d authorizations, %d refreshes: want 1 and at least 1", as.authorize, as.refreshed)
	}
	for _, r := range as.resources {
		if !strings.HasSuffix(r, " "+as.url+"/mcp") {
			t.Errorf("token request %q: want resource %s/mcp (RFC 8707)", r, as.url)
		}
	}
	t.Logf("%d authorization, %d refreshes; token requests: %q", as.authorize, as.refreshed, as.resources)
	secrets := []string{asClientSecret}
	for tok := range as.issued {
		secrets = append(secrets, tok)
	}
	for rt := range as.refreshes {
		secrets = append(secrets, rt)
	}
	as.mu.Unlock()

	sealed, err := os.ReadFile(tokens)
	if err != nil {
		t.Fatal(err)
	}
	if fi, _ := os.Stat(tokens); fi.Mode().Perm() != 0o600 {
		t.Errorf("token file mode %v, want 0600", fi.Mode().Perm())
	}
	for _, sec := range secrets {
		if strings.Contains(string(sealed), sec) {
			t.Errorf("the token file holds %q in plaintext", sec)
		}
		if strings.Contains(logged.String(), sec) {
			t.Errorf("the host's trace log holds a secret or token %q", sec)
		}
	}
	again, err := oauthlogin.OpenFileStore(tokens, []byte("operator secret"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := again.Get("far", ""); err != nil {
		t.Errorf("the token is not kept across a reopen: %v", err)
	}
	if _, err := oauthlogin.OpenFileStore(tokens, []byte("another secret")); err == nil {
		t.Error("the token file opened with another secret")
	}

	if err := reg.Logout("far", ""); err != nil {
		t.Fatal(err)
	}
	_, err = h.Call(ctx, "echo", []byte(`{}`))
	if err == nil || !strings.Contains(err.Error(), "opentool-host auth login far") {
		t.Fatalf("a call after logout: %v, want the login hint", err)
	}
	t.Logf("after logout: %v", err)
}

// TestOAuthIssuerPinned: a server whose Protected Resource Metadata names
// an authorization server other than the declared "issuer" is refused
// before any token request: the declared secret never leaves the host,
// and the error names both issuers.
func TestOAuthIssuerPinned(t *testing.T) {
	as := startAS(t, 3600)
	const pinned = "https://trusted.example"
	h, _ := declaredHostBy(t, testkit.StartHostAsIs, "far", map[string]any{"url": as.url + "/mcp", "oauth": map[string]any{
		"clientId": asClientID, "clientSecret": asClientSecret, "grant": "client_credentials", "issuer": pinned,
	}}, nil, nil, mcpapi.HTTPOptions{})
	testkit.Eventually(t, hostBound, "/health names both issuers", func() bool {
		e := farStatus(h).LastError
		return strings.Contains(e, pinned) && strings.Contains(e, as.url)
	})
	t.Logf("/health: %s", farStatus(h).LastError)
	as.mu.Lock()
	defer as.mu.Unlock()
	if len(as.resources) > 0 || len(as.refused) > 0 {
		t.Errorf("token requests reached the unpinned authorization server: %q %q", as.resources, as.refused)
	}
}
