package access_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/opentool-host/opentool-host/host/access"
	"github.com/opentool-host/opentool-host/host/access/oauth"
	"github.com/opentool-host/opentool-host/host/access/oauth/oauthtest"
)

const tokenResource = "http://127.0.0.1:1/mcp"

const tokenRules = `{"keys": [{"name": "k", "key": "the-api-key", "allow": ["*"]}],
 "tokens": [
   {"name": "calc-users", "scopes": ["calc"], "allow": ["plugin:calculator"], "rate": {"per_second": 50}},
   {"name": "admins", "claims": {"groups": "admin"}, "allow": ["*"]},
   {"name": "readers", "scopes": ["read"], "allow": []}
 ]}`

// tokenGuard is a Guard of rules trusting is, and its file.
func tokenGuard(t testing.TB, is *oauthtest.Issuer, rules string) (*access.Guard, string) {
	t.Helper()
	v, err := oauth.New(oauth.Config{Issuers: []string{is.URL}, Resource: tokenResource})
	if err != nil {
		t.Fatal(err)
	}
	file := writeFile(t, rules)
	g, err := access.New(access.Config{File: file, OAuth: v})
	if err != nil {
		t.Fatal(err)
	}
	return g, file
}

func tokenOf(t testing.TB, is *oauthtest.Issuer, extra map[string]any) string {
	c := map[string]any{"iss": is.URL, "sub": "alice", "aud": tokenResource, "exp": time.Now().Add(time.Hour).Unix()}
	for k, v := range extra {
		c[k] = v
	}
	return is.Token(t, c)
}

// serve sends a request with Authorization: Bearer bearer ("" none)
// through g and returns the response and the grant the handler saw.
func serve(g *access.Guard, bearer string) (*httptest.ResponseRecorder, *access.Grant) {
	var got *access.Grant
	h := g.Middleware(http.HandlerFunc(func(_ http.ResponseWriter, r *http.Request) { got = access.GrantFrom(r.Context()) }))
	req := httptest.NewRequest(http.MethodPost, "/mcp", nil)
	if bearer != "" {
		req.Header.Set("Authorization", "Bearer "+bearer)
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	return rec, got
}

func TestTokenGrants(t *testing.T) {
	is := oauthtest.New(t)
	g, _ := tokenGuard(t, is, tokenRules)
	host := strings.TrimPrefix(is.URL, "http://")
	for _, tc := range []struct {
		name   string
		extra  map[string]any
		calc   bool // may call plugin calculator
		other  bool // may call plugin other
		limits bool
	}{
		{"scope calc", map[string]any{"scope": "calc"}, true, false, true},
		{"scp array", map[string]any{"scp": []string{"calc", "x"}}, true, false, true},
		{"group admin", map[string]any{"groups": []string{"dev", "admin"}}, true, true, false},
		{"scope and group: the union, no limit", map[string]any{"scope": "calc", "groups": "admin"}, true, true, false},
	} {
		rec, gr := serve(g, tokenOf(t, is, tc.extra))
		if rec.Code != http.StatusOK || gr == nil {
			t.Errorf("%s: %d %s", tc.name, rec.Code, rec.Body)
			continue
		}
		if gr.Allows("calculator", "add") != tc.calc || gr.Allows("other", "x") != tc.other ||
			access.Limited(access.WithGrant(context.Background(), gr)) != tc.limits {
			t.Errorf("%s: calc %v other %v limited %v", tc.name, gr.Allows("calculator", "add"), gr.Allows("other", "x"), access.Limited(access.WithGrant(context.Background(), gr)))
		}
		if p := gr.Principal(); gr.Name() != "oauth:alice@"+host || p == nil || p.Subject != "alice" || p.Issuer != is.URL {
			t.Errorf("%s: name %q principal %+v", tc.name, gr.Name(), p)
		}
	}
	// The same principal and rules: the same grant (one rate limiter).
	_, a := serve(g, tokenOf(t, is, map[string]any{"scope": "calc", "jti": "1"}))
	_, b := serve(g, tokenOf(t, is, map[string]any{"scope": "calc", "jti": "2"}))
	if a != b {
		t.Error("two tokens of one principal got two grants (two rate buckets)")
	}
	// An API key still works beside tokens.
	if rec, gr := serve(g, "the-api-key"); rec.Code != http.StatusOK || gr.Name() != "k" || gr.Principal() != nil {
		t.Errorf("API key: %d %v", rec.Code, gr)
	}
}

func TestTokenChallenges(t *testing.T) {
	is := oauthtest.New(t)
	g, _ := tokenGuard(t, is, tokenRules)
	meta := `resource_metadata="http://127.0.0.1:1/.well-known/oauth-protected-resource/mcp"`
	for _, tc := range []struct {
		name, bearer string
		status       int
		header       string
	}{
		{"none", "", 401, `Bearer ` + meta + `, scope="calc read"`},
		{"expired", tokenOf(t, is, map[string]any{"scope": "calc", "exp": time.Now().Add(-time.Minute).Unix()}), 401,
			`Bearer ` + meta + `, scope="calc read", error="invalid_token", error_description="the token expired"`},
		{"wrong key", "not-a-key", 401,
			`Bearer ` + meta + `, scope="calc read", error="invalid_token", error_description="neither an API key nor an access token (a JWT; opaque tokens need introspection)"`},
		{"no rule", tokenOf(t, is, map[string]any{"scope": "write"}), 403, `Bearer error="insufficient_scope", scope="calc", ` + meta},
		{"a rule that allows nothing", tokenOf(t, is, map[string]any{"scope": "read"}), 403, `Bearer error="insufficient_scope", scope="calc", ` + meta},
	} {
		rec, gr := serve(g, tc.bearer)
		if rec.Code != tc.status || gr != nil || rec.Header().Get("WWW-Authenticate") != tc.header || !strings.Contains(rec.Body.String(), `"code":`) {
			t.Errorf("%s: %d\n got WWW-Authenticate: %s\nwant WWW-Authenticate: %s\n%s", tc.name, rec.Code, rec.Header().Get("WWW-Authenticate"), tc.header, rec.Body)
		}
	}
}

func TestTokenRulesFaults(t *testing.T) {
	for _, tc := range []struct{ file, path, msg string }{
		{`{"keys":[],"tokens":{}}`, "$.tokens", "must be an array"},
		{`{"keys":[],"tokens":[{"name":"a","scopes":["x"]}]}`, "$.tokens[0].allow", "is required"},
		{`{"keys":[],"tokens":[{"name":"a","allow":[]},{"name":"b","scope":"x","allow":[]}]}`, "$.tokens[1].scope", "unknown member"},
		{`{"keys":[],"tokens":[{"name":"a","scopes":["x y"],"allow":[]}]}`, "$.tokens[0].scopes[0]", "must be a scope"},
		{`{"keys":[],"tokens":[{"name":"a","claims":{"groups":["admin"]},"allow":[]}]}`, "$.tokens[0].claims", "must be a string"},
		{`{"keys":[],"tokens":[{"name":"a","allow":["a[b"]}]}`, "$.tokens[0].allow[0]", "bad glob"},
		{`{"keys":[],"tokens":[{"name":"a","allow":[],"rate":{"per_second":0}}]}`, "$.tokens[0].rate.per_second", "above 0"},
		{`{"keys":[],"tokens":[{"name":"a","allow":[]},{"name":"a","allow":[]}]}`, "$.tokens[1].name", "also the name of $.tokens[0]"},
		{`{"keys":[],"tokens":[{"allow":[]}]}`, "$.tokens[0].name", "is required"},
	} {
		_, err := access.ParseFile([]byte(tc.file))
		var f *access.Fault
		if !errors.As(err, &f) || f.Path != tc.path || !strings.Contains(f.Message, tc.msg) {
			t.Errorf("%s:\n got %v\nwant %s: ...%s...", tc.file, err, tc.path, tc.msg)
		}
	}
}

func TestTokenRulesReload(t *testing.T) {
	is := oauthtest.New(t)
	g, file := tokenGuard(t, is, tokenRules)
	calc := tokenOf(t, is, map[string]any{"scope": "calc"})
	_, before := serve(g, calc)
	if before == nil {
		t.Fatal("refused before the reload")
	}
	// A malformed rule: the rules in force stay, and so does the grant.
	if err := os.WriteFile(file, []byte(strings.Replace(tokenRules, `"scopes": ["calc"]`, `"scopes": "calc"`, 1)), 0o600); err != nil {
		t.Fatal(err)
	}
	var f *access.Fault
	if err := g.Reload(); !errors.As(err, &f) || f.Path != "$.tokens[0].scopes" {
		t.Fatalf("reload of a bad file: %v", err)
	}
	if _, gr := serve(g, calc); gr != before {
		t.Fatal("a bad file changed the token's grant")
	}
	// New rules: the old grant is revoked, the token is granted anew.
	if err := os.WriteFile(file, []byte(strings.Replace(tokenRules, `"plugin:calculator"`, `"plugin:calc2"`, 1)), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := g.Reload(); err != nil {
		t.Fatal(err)
	}
	select {
	case <-before.Revoked():
	default:
		t.Fatal("the grant of changed rules was not revoked")
	}
	if _, gr := serve(g, calc); gr == nil || gr.Allows("calculator", "add") || !gr.Allows("calc2", "add") {
		t.Fatalf("after the reload: %v", gr)
	}
}

func TestTokenMetadata(t *testing.T) {
	is := oauthtest.New(t)
	g, _ := tokenGuard(t, is, tokenRules)
	m := g.Metadata()
	if m.Resource != tokenResource || len(m.AuthorizationServers) != 1 || m.AuthorizationServers[0] != is.URL ||
		strings.Join(m.ScopesSupported, " ") != "calc read" {
		t.Fatalf("%+v", m)
	}
	plain, _ := access.New(access.Config{Keys: []string{"k"}})
	if plain.Metadata() != nil {
		t.Fatal("metadata without OAuth")
	}
}
