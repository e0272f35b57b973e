package e2e_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/opentool-host/opentool-host/testkit"
	"github.com/opentool-host/opentool-host/testkit/oidcprovider"
)

// TestAuthLoginThroughOIDCProvider: host B declares host A's /mcp by URL
// with "oauth" (the authorization code grant, B registering itself at
// oidc-provider, A's authorization server, by DCR). `opentool-host auth
// login hosta --no-browser` prints the authorization URL, the test logs
// in as alice through it (oidc-provider's login and consent forms) and
// follows the redirect to B's /oauth/callback; B's calls then reach A as
// alice (A's audit log), and go on past the token's 15 s lifetime with a
// refresh (auth status shows a new expiry) and no second login; the token
// file is sealed (mode 0600, no JWT in it) and no token is in either
// host's log; `auth logout hosta` ends it: a call then says how to log in.
func TestAuthLoginThroughOIDCProvider(t *testing.T) {
	t.Setenv("OIDC_ACCESS_TOKEN_TTL", "15") // refreshed 10 s before it expires: 5 s after each token
	p := oidcprovider.Start(t)
	a := startOAuthHost(t, p)
	dir, state, keyFlags := declareHostA(t, a, false)
	b := startHostProcUntil(t, dir, "listening;", keyFlags...)
	bin := testkit.Build(t, "./cmd/opentool-host")
	auth := func(args ...string) (string, error) {
		out, err := exec.Command(bin, append(append([]string{"auth"}, args...), "--url", b.url)...).CombinedOutput()
		return string(out), err
	}
	testkit.Eventually(t, 30*time.Second, "auth status lists hosta as needing a login", func() bool {
		out, err := auth("status")
		return err == nil && strings.Contains(out, "needs login: opentool-host auth login hosta")
	})

	out, err := auth("login", "hosta", "--no-browser")
	if err != nil {
		t.Fatalf("auth login: %v\n%s", err, out)
	}
	var authURL string
	for _, l := range strings.Split(out, "\n") {
		if strings.HasPrefix(l, "http") {
			authURL = strings.TrimSpace(l)
		}
	}
	loginAs(t, p, authURL, "alice", "hosta")

	add := func() (map[string]any, bool) {
		_, m := rpc(t, b.url, `{"jsonrpc":"2.0","method":"add","params":{"a":20,"b":22},"id":"1"}`)
		r, _ := m["result"].(map[string]any)
		return m, r != nil && r["result"] == 42.0
	}
	testkit.Eventually(t, 30*time.Second, "B's add reaches A after the login", func() bool { _, ok := add(); return ok })
	first, _ := auth("status")
	t.Logf("auth status after the login:\n%s", first)
	if !strings.Contains(first, "hosta") || !strings.Contains(first, "yes") {
		t.Fatalf("auth status after the login: %s", first)
	}
	testkit.Eventually(t, 60*time.Second, "a refresh: a new expiry, calls going on", func() bool {
		if m, ok := add(); !ok {
			t.Fatalf("add during the token's life: %v", m)
		}
		now, _ := auth("status")
		return now != first && strings.Contains(now, "yes")
	})
	again, _ := auth("status")
	t.Logf("auth status after the refresh:\n%s", again)

	waitAudit(t, a.audit, "alice")
	sealed, err := filepath.Glob(filepath.Join(state, "oauth-tokens-*.sealed"))
	if err != nil || len(sealed) != 1 {
		t.Fatalf("token files %v (%v), want one", sealed, err)
	}
	body, _ := os.ReadFile(sealed[0])
	fi, _ := os.Stat(sealed[0])
	if fi.Mode().Perm() != 0o600 || strings.Contains(string(body), "eyJ") || strings.Contains(string(body), "refresh") {
		t.Errorf("token file %s: mode %v, plaintext JWT or member names in it", sealed[0], fi.Mode().Perm())
	}
	for who, logs := range map[string]string{"A": a.logs.String(), "B": b.logs.String()} {
		if strings.Contains(logs, "eyJ") {
			t.Errorf("host %s's log holds a JWT", who)
		}
	}

	if out, err := auth("logout", "hosta"); err != nil {
		t.Fatalf("auth logout: %v\n%s", err, out)
	}
	m, ok := add()
	if ok || !strings.Contains(strings.ToLower(jsonString(m)), "opentool-host auth login hosta") {
		t.Fatalf("add after logout: %v, want the login hint", m)
	}
	t.Logf("after logout: %s", jsonString(m))
}

// declareHostA writes a plugins folder declaring host A's /mcp by URL as
// "hosta" with "oauth" (dynamic registration at A's authorization
// server), "credentials": "per-user" when perUser, and a sealing secret
// beside it; it returns the folder, the state folder and the flags that
// keep tokens sealed there (--state-dir, --secret, --oauth-token-key).
func declareHostA(t *testing.T, a *oauthHost, perUser bool) (dir, state string, keyFlags []string) {
	t.Helper()
	dir, state, files := t.TempDir(), t.TempDir(), t.TempDir()
	server := map[string]any{"url": a.resource, "oauth": map[string]any{}}
	if perUser {
		server["credentials"] = "per-user"
	}
	decl, _ := json.Marshal(map[string]any{"mcpServers": map[string]any{"hosta": server}})
	secret := filepath.Join(files, "tokens.secret")
	for name, body := range map[string][]byte{filepath.Join(dir, "hosta.mcp.json"): decl, secret: []byte("e2e sealing secret of at least 32 bytes\n")} {
		if err := os.WriteFile(name, body, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	return dir, state, []string{"--state-dir", state, "--secret", "tokenkey=file:" + secret, "--oauth-token-key", "tokenkey"}
}

// loginAs plays the person's browser: it logs in as user at p through
// authURL (oidc-provider's login and consent forms), follows the
// redirect back to the host's /oauth/callback and checks its page says
// the login to server succeeded.
func loginAs(t *testing.T, p *oidcprovider.Provider, authURL, user, server string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	back, err := p.Login(ctx, authURL, user)
	if err != nil {
		t.Fatalf("login as %s at %s: %v", user, authURL, err)
	}
	resp, err := http.Get(back.String()) // the browser, back at the host's callback
	if err != nil {
		t.Fatal(err)
	}
	page, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || !strings.Contains(string(page), "Logged in to "+server) {
		t.Fatalf("callback for %s: %d %s", user, resp.StatusCode, page)
	}
}

// jsonString is v in JSON.
func jsonString(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}
