package e2e_test

import (
	"crypto"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/opentool-host/opentool-host/testkit"
	"github.com/opentool-host/opentool-host/testkit/oidcprovider"
)

// The OAuth e2e tests: the host as an OAuth 2.1 resource server (RFC 9728
// metadata, RFC 9068 JWT access tokens, RFC 8707 audience) with the npm
// oidc-provider (testkit/oidcprovider) as its authorization server.

// opsKey is an API key beside the tokens (keys keep working).
const opsKey = "ops-6b0e1f7a-plain"

// calcTools are the calculator plugin's functions: what the calc-users
// rule grants.
var calcTools = []string{"add", "divide", "multiply", "subtract"}

// oauthAccessFile grants scope calc the calculator plugin and group admin
// everything; opsKey is an API key for everything.
const oauthAccessFile = `{"keys": [{"name": "ops", "key": "` + opsKey + `", "allow": ["*"]}],
 "tokens": [
   {"name": "calc-users", "scopes": ["calc"], "allow": ["plugin:calculator"]},
   {"name": "admins", "claims": {"groups": "admin"}, "allow": ["*"]}
 ]}`

// envTools is a command-line tool that prints the environment of the
// process the host runs for each call.
const envTools = `{"description": "Prints its environment.", "version": "1.0.0", "functions": [
  {"name": "environment", "description": "The environment of the process (env).", "parameters": [], "command": ["env"], "timeout_ms": 5000}
]}`

// oauthHost is a host trusting p with oauthAccessFile, serving the
// calculator, mock, faulty and the environment tool, an audit log beside.
type oauthHost struct {
	*hostProc
	resource string // http://127.0.0.1:PORT/mcp, the default --oauth-resource
	audit    string // the audit log's path
}

// waitAudit waits for the audit log at path to name want: the log is
// written behind the calls (one writer goroutine).
func waitAudit(t *testing.T, path, want string) {
	t.Helper()
	testkit.Eventually(t, 10*time.Second, "the audit log names "+want, func() bool {
		b, err := os.ReadFile(path)
		return err == nil && strings.Contains(string(b), want)
	})
}

func startOAuthHost(t *testing.T, p *oidcprovider.Provider, extra ...string) *oauthHost {
	t.Helper()
	dir := t.TempDir()
	testkit.InstallPlugin(t, dir, "calculator", "./plugins/calculator")
	testkit.InstallPlugin(t, dir, "mock", "./plugins/mock")
	testkit.InstallPlugin(t, dir, "faulty", "./testkit/plugins/faulty")
	files := t.TempDir()
	keys, audit := filepath.Join(files, "keys.json"), filepath.Join(files, "audit.log")
	for name, body := range map[string]string{keys: oauthAccessFile, filepath.Join(dir, "envdump.tools.json"): envTools} {
		if err := os.WriteFile(name, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	args := append([]string{"--api-keys-file", keys, "--audit-log", audit, "--oauth-issuer", p.Issuer}, extra...)
	hp := startHostProc(t, dir, args...)
	return &oauthHost{hostProc: hp, resource: hp.url + "/mcp", audit: audit}
}

// initializeBody is an MCP initialize request.
const initializeBody = `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"e2e","version":"1"}}}`

// wantChallenge checks a refusal: status, and a Bearer WWW-Authenticate
// naming the host's metadata and containing each of parts.
func wantChallenge(t *testing.T, what string, h *oauthHost, st int, hdr http.Header, wantStatus int, parts ...string) {
	t.Helper()
	www := hdr.Get("WWW-Authenticate")
	parts = append(parts, `resource_metadata="`+h.url+`/.well-known/oauth-protected-resource/mcp"`)
	if st != wantStatus || !strings.HasPrefix(www, "Bearer ") {
		t.Errorf("%s: %d WWW-Authenticate %q, want %d Bearer", what, st, www, wantStatus)
		return
	}
	for _, p := range parts {
		if !strings.Contains(www, p) {
			t.Errorf("%s: WWW-Authenticate %q lacks %s", what, www, p)
		}
	}
}

// b64 is base64url without padding (JWS compact serialization).
func b64(b []byte) string { return base64.RawURLEncoding.EncodeToString(b) }

// forged returns tok with its payload's claims changed by edit: unsigned
// (alg none, empty signature) when key is nil, else re-signed RS256 with
// key under tok's own header (kid and all).
func forged(t *testing.T, tok string, key *rsa.PrivateKey, edit func(map[string]any)) string {
	t.Helper()
	parts := strings.Split(tok, ".")
	raw, err := base64.RawURLEncoding.DecodeString(parts[1])
	if err != nil {
		t.Fatal(err)
	}
	var claims map[string]any
	if err := json.Unmarshal(raw, &claims); err != nil {
		t.Fatal(err)
	}
	edit(claims)
	payload, _ := json.Marshal(claims)
	if key == nil {
		return b64([]byte(`{"alg":"none","typ":"at+jwt"}`)) + "." + b64(payload) + "."
	}
	input := parts[0] + "." + b64(payload)
	sum := sha256.Sum256([]byte(input))
	sig, err := rsa.SignPKCS1v15(rand.Reader, key, crypto.SHA256, sum[:])
	if err != nil {
		t.Fatal(err)
	}
	return input + "." + b64(sig)
}

// TestOIDCProviderResourceServer: with oidc-provider as --oauth-issuer the host
// publishes RFC 9728 metadata naming it; a request without a credential
// gets 401 pointing to it; a client-credentials token (both client
// authentications) for the host's resource with scope calc lists exactly
// the calculator's functions and calls add; tokens for another audience,
// from an untrusted issuer, expired, unsigned and re-signed get 401
// invalid_token; a token whose scopes grant nothing gets 403
// insufficient_scope; a claim rule (groups admin) grants everything; an
// API key keeps working; after key rotation at the issuer new tokens work
// without a restart (within the 10 s the host waits between two JWKS
// fetches of one issuer).
func TestOIDCProviderResourceServer(t *testing.T) {
	p := oidcprovider.Start(t)
	h := startOAuthHost(t, p)

	for _, path := range []string{"/.well-known/oauth-protected-resource/mcp", "/.well-known/oauth-protected-resource"} {
		st, hdr, body := httpDo(t, http.MethodGet, h.url+path, "", "")
		var prm struct {
			Resource               string   `json:"resource"`
			AuthorizationServers   []string `json:"authorization_servers"`
			ScopesSupported        []string `json:"scopes_supported"`
			BearerMethodsSupported []string `json:"bearer_methods_supported"`
			ResourceName           string   `json:"resource_name"`
		}
		if st != http.StatusOK || !strings.HasPrefix(hdr.Get("Content-Type"), "application/json") || json.Unmarshal([]byte(body), &prm) != nil {
			t.Fatalf("GET %s: %d %s %s", path, st, hdr.Get("Content-Type"), body)
		}
		if prm.Resource != h.resource || !slices.Equal(prm.AuthorizationServers, []string{p.Issuer}) ||
			!slices.Equal(prm.ScopesSupported, []string{"calc"}) || !slices.Equal(prm.BearerMethodsSupported, []string{"header"}) ||
			prm.ResourceName != "opentool-host" {
			t.Errorf("GET %s: %+v, want resource %s, authorization_servers [%s], scopes_supported [calc], bearer [header]", path, prm, h.resource, p.Issuer)
		}
	}

	st, hdr, _ := httpDo(t, http.MethodPost, h.url+"/mcp", "", initializeBody)
	wantChallenge(t, "no credential", h, st, hdr, http.StatusUnauthorized, `scope="calc"`)
	if www := hdr.Get("WWW-Authenticate"); strings.Contains(www, "error=") {
		t.Errorf("no credential: WWW-Authenticate %q names an error (RFC 6750 section 3.1: none when no token was sent)", www)
	}

	for _, c := range []oidcprovider.Client{oidcprovider.ClientBasic, oidcprovider.ClientPost} {
		tok := p.ClientCredentialsToken(t, c, []string{"calc"}, h.resource)
		cs := connectMCP(t, h.url, tok)
		if got := toolNames(t, cs); !slices.Equal(got, calcTools) {
			t.Errorf("%s token: tools/list %v, want %v", c.ID, got, calcTools)
		}
		res, err := mcpCall(t, cs, "add", map[string]any{"a": 1, "b": 2})
		if b, _ := json.Marshal(res); err != nil || res.IsError || !strings.Contains(string(b), `"result":3`) {
			t.Errorf("%s token: add: %s %v", c.ID, b, err)
		}
		if st, _, body := httpDo(t, http.MethodPost, h.url+"/opentool/call", tok, `{"jsonrpc":"2.0","method":"add","params":{"a":1,"b":2},"id":"1"}`); st != 200 || body != `{"jsonrpc":"2.0","result":{"result":3},"id":"1"}` {
			t.Errorf("%s token: /opentool/call add: %d %s", c.ID, st, body)
		}
	}

	good := p.ClientCredentialsToken(t, oidcprovider.ClientBasic, []string{"calc"}, h.resource)
	stranger, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	untrusted := oidcprovider.Start(t)
	refused := map[string]string{
		"another audience": p.ClientCredentialsToken(t, oidcprovider.ClientBasic, []string{"calc"}, "http://127.0.0.1:1/mcp"),
		"expired":          p.ClientCredentialsToken(t, oidcprovider.ClientExpired, []string{"calc"}, h.resource),
		"untrusted issuer": untrusted.ClientCredentialsToken(t, oidcprovider.ClientBasic, []string{"calc"}, h.resource),
		"alg none":         forged(t, good, nil, func(map[string]any) {}),
		"re-signed":        forged(t, good, stranger, func(c map[string]any) { c["scope"] = "calc admin" }),
		"issuer spoofed":   forged(t, untrusted.ClientCredentialsToken(t, oidcprovider.ClientBasic, []string{"calc"}, h.resource), stranger, func(c map[string]any) { c["iss"] = p.Issuer }),
	}
	for what, tok := range refused {
		for _, path := range []string{"/mcp", "/opentool/load"} {
			method, body := http.MethodPost, initializeBody
			if path != "/mcp" {
				method, body = http.MethodGet, ""
			}
			st, hdr, answer := httpDo(t, method, h.url+path, tok, body)
			wantChallenge(t, what+" "+path, h, st, hdr, http.StatusUnauthorized, `error="invalid_token"`)
			if strings.Contains(answer, tok) || strings.Contains(hdr.Get("WWW-Authenticate"), tok) {
				t.Errorf("%s %s: the answer echoes the token", what, path)
			}
		}
	}
	// The real token still works after the forgeries (nothing poisoned).
	if got := toolNames(t, connectMCP(t, h.url, good)); !slices.Equal(got, calcTools) {
		t.Errorf("good token after the forgeries: %v", got)
	}

	notes := p.ClientCredentialsToken(t, oidcprovider.ClientBasic, []string{"notes"}, h.resource)
	st, hdr, _ = httpDo(t, http.MethodPost, h.url+"/mcp", notes, initializeBody)
	wantChallenge(t, "scope notes", h, st, hdr, http.StatusForbidden, `error="insufficient_scope"`, `scope="calc"`)

	admin := p.ClientCredentialsToken(t, oidcprovider.ClientAdmin, []string{"admin"}, h.resource)
	for who, cred := range map[string]string{"groups admin token": admin, "API key": opsKey} {
		if got := toolNames(t, connectMCP(t, h.url, cred)); !slices.Contains(got, "create") || !slices.Contains(got, "environment") || !slices.Contains(got, "add") {
			t.Errorf("%s: tools/list %v, want everything", who, got)
		}
	}

	kid := p.RotateKeys(t)
	rotated := p.ClientCredentialsToken(t, oidcprovider.ClientBasic, []string{"calc"}, h.resource)
	if hdrJSON, _ := base64.RawURLEncoding.DecodeString(strings.Split(rotated, ".")[0]); !strings.Contains(string(hdrJSON), kid) {
		t.Fatalf("rotated token header %s lacks the new kid %s", hdrJSON, kid)
	}
	// An unknown kid refetches the JWKS at most once per 10 s per issuer
	// (the spoofed-issuer token above made one fetch): accepted within 15 s.
	testkit.Eventually(t, 15*time.Second, "the token of the rotated key accepted", func() bool {
		st, _, _ := httpDo(t, http.MethodGet, h.url+"/opentool/load", rotated, "")
		return st == http.StatusOK
	})
	if res, err := mcpCall(t, connectMCP(t, h.url, rotated), "add", map[string]any{"a": 2, "b": 2}); err != nil || res.IsError {
		t.Errorf("token signed by the rotated key: add: %+v %v", res, err)
	}
}

// TestOIDCProviderNoTokenPassthrough: a token's call reaches the plugin, the
// command-line tool and the audit log as its principal, never as the token:
// not in a plugin's environment, a plugin's command line, a per-call
// process's environment or the audit log, which names the principal
// (oauth:SUB@ISSUER and principal.iss/sub/client_id).
func TestOIDCProviderNoTokenPassthrough(t *testing.T) {
	p := oidcprovider.Start(t)
	h := startOAuthHost(t, p)
	tok := p.ClientCredentialsToken(t, oidcprovider.ClientAdmin, []string{"admin"}, h.resource)
	sig := tok[strings.LastIndex(tok, ".")+1:]
	leaks := func(s string) bool {
		return strings.Contains(s, sig) || strings.Contains(s, tok[:strings.Index(tok, ".")+20])
	}

	for _, fn := range []string{"env", "environment"} {
		st, _, body := httpDo(t, http.MethodPost, h.url+"/opentool/call", tok, `{"jsonrpc":"2.0","method":"`+fn+`","params":{},"id":1}`)
		if st != http.StatusOK || !strings.Contains(body, "PATH") {
			t.Fatalf("%s: %d %s", fn, st, body)
		}
		if leaks(body) {
			t.Errorf("%s: the token is in the environment: %s", fn, body)
		}
	}
	for name, pid := range pluginPIDs(t, h.url, opsKey) {
		if pid == 0 { // envdump: a process per call, checked above
			continue
		}
		for _, f := range []string{"cmdline", "environ"} {
			b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/" + f)
			if err != nil {
				t.Fatalf("plugin %s: %v", name, err)
			}
			if leaks(string(b)) {
				t.Errorf("plugin %s: the token is in its %s", name, f)
			}
		}
	}
	var line string
	testkit.Eventually(t, 10*time.Second, "the audit line of the token's calls", func() bool {
		b, _ := os.ReadFile(h.audit)
		line = string(b)
		return strings.Count(line, `"function":"environment"`) == 1
	})
	if leaks(line) {
		t.Errorf("the token is in the audit log:\n%s", line)
	}
	for _, want := range []string{`"key":"oauth:cc-admin@127.0.0.1`, `"principal":`, `"sub":"cc-admin"`, `"iss":"` + p.Issuer + `"`} {
		if !strings.Contains(line, want) {
			t.Errorf("the audit log lacks %s:\n%s", want, line)
		}
	}
	// The host's own log neither.
	if leaks(h.logs.String()) {
		t.Errorf("the token is in the host's log")
	}
}
