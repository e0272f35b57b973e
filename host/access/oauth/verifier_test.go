package oauth_test

import (
	"context"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-jose/go-jose/v4"

	"github.com/opentool-host/opentool-host/host/access/oauth"
	"github.com/opentool-host/opentool-host/host/access/oauth/oauthtest"
)

const resource = "http://127.0.0.1:1/mcp"

// clock is a settable clock for the verifier.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *clock) add(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

func newVerifier(t *testing.T, cfg oauth.Config) (*oauth.Verifier, *clock) {
	t.Helper()
	clk := &clock{t: time.Now()}
	cfg.Now = clk.now
	if cfg.Resource == "" {
		cfg.Resource = resource
	}
	v, err := oauth.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return v, clk
}

// claims are valid claims of is for resource at now, with extra merged.
func claims(is *oauthtest.Issuer, now time.Time, extra map[string]any) map[string]any {
	c := map[string]any{"iss": is.URL, "sub": "alice", "aud": []string{resource}, "client_id": "cli",
		"scope": "calc read", "exp": now.Add(time.Hour).Unix(), "iat": now.Unix()}
	for k, v := range extra {
		if v == nil {
			delete(c, k)
		} else {
			c[k] = v
		}
	}
	return c
}

func TestVerifyValid(t *testing.T) {
	is := oauthtest.New(t)
	v, clk := newVerifier(t, oauth.Config{Issuers: []string{is.URL}})
	c, err := v.Verify(context.Background(), is.Token(t, claims(is, clk.now(), map[string]any{"groups": []string{"admin", "dev"}})))
	if err != nil {
		t.Fatal(err)
	}
	host := strings.TrimPrefix(is.URL, "http://")
	if c.Principal() != "oauth:alice@"+host || !c.HasScope("calc") || !c.HasScope("read") || c.HasScope("write") ||
		!c.Has("groups", "admin") || c.Has("groups", "ops") || !c.Has("sub", "alice") || c.ClientID != "cli" {
		t.Fatalf("claims %+v, principal %s", c, c.Principal())
	}
	c, err = v.Verify(context.Background(), is.Token(t, claims(is, clk.now(), map[string]any{"sub": nil, "scope": nil, "scp": []string{"a", "b"}})))
	if err != nil || c.Principal() != "oauth-client:cli@"+host || !c.HasScope("b") {
		t.Fatalf("no sub, scp array: %+v %v", c, err)
	}
}

func TestVerifyRefusals(t *testing.T) {
	is := oauthtest.New(t)
	other := oauthtest.New(t) // an issuer not trusted
	v, clk := newVerifier(t, oauth.Config{Issuers: []string{is.URL}})
	now := clk.now()
	key, kid := is.Key()
	forger, _ := rsa.GenerateKey(rand.Reader, 2048)
	pubDER, _ := x509.MarshalPKIXPublicKey(&key.PublicKey)
	none := func(c map[string]any) string {
		h := base64.RawURLEncoding.EncodeToString([]byte(`{"alg":"none","typ":"at+jwt","kid":"` + kid + `"}`))
		b, _ := json.Marshal(c)
		return h + "." + base64.RawURLEncoding.EncodeToString(b) + "."
	}
	for _, tc := range []struct{ name, token, want string }{
		{"wrong aud", is.Token(t, claims(is, now, map[string]any{"aud": "http://127.0.0.1:2/mcp"})), "not valid for this resource"},
		{"no aud", is.Token(t, claims(is, now, map[string]any{"aud": nil})), "not valid for this resource"},
		{"wrong iss", other.Token(t, claims(other, now, nil)), "issuer is not trusted"},
		{"iss claims a trusted issuer, signed by another", other.Token(t, claims(is, now, nil)), "not valid"},
		{"expired", is.Token(t, claims(is, now, map[string]any{"exp": now.Add(-time.Second).Unix()})), "expired"},
		{"no exp", is.Token(t, claims(is, now, map[string]any{"exp": nil})), "no exp"},
		{"nbf future", is.Token(t, claims(is, now, map[string]any{"nbf": now.Add(2 * time.Minute).Unix()})), "nbf is in the future"},
		{"iat future", is.Token(t, claims(is, now, map[string]any{"iat": now.Add(2 * time.Minute).Unix()})), "iat is in the future"},
		{"alg none", none(claims(is, now, nil)), "not signed with one of"},
		{"HS256 with the public key", oauthtest.Sign(t, jose.HS256, pubDER, kid, claims(is, now, nil)), "not signed with one of"},
		{"re-signed by another key, same kid", oauthtest.Sign(t, jose.RS256, forger, kid, claims(is, now, nil)), "not valid"},
		{"typ", signTyp(t, key, kid, "dpop+jwt", claims(is, now, nil)), "typ"},
		{"opaque without introspection", "opaque-token-value", "opaque tokens need introspection"},
	} {
		_, err := v.Verify(context.Background(), tc.token)
		var oe *oauth.Error
		if !errors.As(err, &oe) || !strings.Contains(oe.Description, tc.want) {
			t.Errorf("%s: got %v, want ...%s...", tc.name, err, tc.want)
		}
	}
	// A skew of up to 60 s is allowed.
	if _, err := v.Verify(context.Background(), is.Token(t, claims(is, now, map[string]any{"nbf": now.Add(30 * time.Second).Unix()}))); err != nil {
		t.Errorf("nbf 30 s ahead: %v", err)
	}
}

// signTyp signs claims with RS256 and header typ.
func signTyp(t *testing.T, key *rsa.PrivateKey, kid, typ string, c map[string]any) string {
	opts := (&jose.SignerOptions{}).WithType(jose.ContentType(typ)).WithHeader("kid", kid)
	s, err := jose.NewSigner(jose.SigningKey{Algorithm: jose.RS256, Key: key}, opts)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := json.Marshal(c)
	jws, _ := s.Sign(b)
	out, _ := jws.CompactSerialize()
	return out
}

func TestRotationFollowedAndRefreshBounded(t *testing.T) {
	is := oauthtest.New(t)
	v, clk := newVerifier(t, oauth.Config{Issuers: []string{is.URL}})
	ctx := context.Background()
	if _, err := v.Verify(ctx, is.Token(t, claims(is, clk.now(), nil))); err != nil {
		t.Fatal(err)
	}
	if n := is.JWKSFetches.Load(); n != 1 {
		t.Fatalf("JWKS fetched %d times for the first token, want 1", n)
	}
	// Forged tokens of unknown kids fetch the JWKS at most once per 10 s.
	forger, _ := rsa.GenerateKey(rand.Reader, 2048)
	clk.add(oauth.RefreshEvery)
	for i := range 20 {
		if _, err := v.Verify(ctx, oauthtest.Sign(t, jose.RS256, forger, "unknown-"+string(rune('a'+i)), claims(is, clk.now(), nil))); err == nil {
			t.Fatal("a forged token was accepted")
		}
	}
	if n := is.JWKSFetches.Load(); n != 2 {
		t.Fatalf("JWKS fetched %d times after 20 unknown kids, want 2", n)
	}
	// A forged token of the known kid never fetches.
	_, kid := is.Key()
	clk.add(oauth.RefreshEvery)
	_, _ = v.Verify(ctx, oauthtest.Sign(t, jose.RS256, forger, kid, claims(is, clk.now(), nil)))
	if n := is.JWKSFetches.Load(); n != 2 {
		t.Fatalf("a bad signature of a known kid fetched the JWKS (%d)", n)
	}
	// Rotation at the issuer: the new kid is fetched, no restart.
	is.Rotate()
	if _, err := v.Verify(ctx, is.Token(t, claims(is, clk.now(), nil))); err != nil {
		t.Fatalf("after rotation: %v", err)
	}
	if n := is.JWKSFetches.Load(); n != 3 {
		t.Fatalf("JWKS fetched %d times after rotation, want 3", n)
	}
}

func TestVerifyCachedNoRoundTrip(t *testing.T) {
	is := oauthtest.New(t)
	v, clk := newVerifier(t, oauth.Config{Issuers: []string{is.URL}})
	tok := is.Token(t, claims(is, clk.now(), map[string]any{"exp": clk.now().Add(time.Minute).Unix()}))
	for range 50 {
		if _, err := v.Verify(context.Background(), tok); err != nil {
			t.Fatal(err)
		}
	}
	if n := is.JWKSFetches.Load(); n != 1 {
		t.Fatalf("JWKS fetched %d times for one token verified 50 times", n)
	}
	clk.add(2 * time.Minute) // past exp: the cache does not keep it
	if _, err := v.Verify(context.Background(), tok); err == nil {
		t.Fatal("an expired token was served from the cache")
	}
}

func TestIntrospection(t *testing.T) {
	is := oauthtest.New(t)
	var calls atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		calls.Add(1)
		id, secret, ok := r.BasicAuth()
		if !ok || id != "rs" || secret != "s3cret" || r.Method != http.MethodPost {
			w.WriteHeader(http.StatusUnauthorized)
			return
		}
		switch r.PostFormValue("token") {
		case "good":
			_ = json.NewEncoder(w).Encode(map[string]any{"active": true, "scope": "calc", "sub": "bob", "iss": is.URL,
				"aud": resource, "exp": time.Now().Add(time.Hour).Unix()})
		case "other-aud":
			_ = json.NewEncoder(w).Encode(map[string]any{"active": true, "aud": "http://elsewhere/mcp", "exp": time.Now().Add(time.Hour).Unix()})
		default:
			_ = json.NewEncoder(w).Encode(map[string]any{"active": false})
		}
	}))
	defer srv.Close()
	v, clk := newVerifier(t, oauth.Config{Issuers: []string{is.URL}, Introspection: srv.URL, IntrospectionClient: "rs", IntrospectionSecret: "s3cret"})
	ctx := context.Background()
	for range 3 {
		c, err := v.Verify(ctx, "good")
		if err != nil || c.Subject != "bob" || !c.HasScope("calc") || c.Issuer != is.URL {
			t.Fatalf("good: %+v %v", c, err)
		}
	}
	if calls.Load() != 1 {
		t.Fatalf("introspected %d times, want 1 (cached)", calls.Load())
	}
	clk.add(oauth.IntrospectionTTL)
	if _, err := v.Verify(ctx, "good"); err != nil || calls.Load() != 2 {
		t.Fatalf("after %s: %v, %d calls (want 2)", oauth.IntrospectionTTL, err, calls.Load())
	}
	for tok, want := range map[string]string{"revoked": "not active", "other-aud": "another audience"} {
		var oe *oauth.Error
		if _, err := v.Verify(ctx, tok); !errors.As(err, &oe) || !strings.Contains(oe.Description, want) {
			t.Errorf("%s: %v, want %s", tok, err, want)
		}
	}
}

func TestNewRefusesConfig(t *testing.T) {
	for _, cfg := range []oauth.Config{
		{Resource: resource},
		{Issuers: []string{"http://idp.example.com"}, Resource: resource},
		{Issuers: []string{"https://idp.example.com"}, Resource: "ftp://x/mcp"},
		{Issuers: []string{"https://idp.example.com"}, Resource: resource, Introspection: "https://idp.example.com/i"},
	} {
		if _, err := oauth.New(cfg); err == nil {
			t.Errorf("%+v: accepted", cfg)
		}
	}
}

func TestMetadataURL(t *testing.T) {
	if got := oauth.MetadataURL("https://h.example:8443/mcp"); got != "https://h.example:8443/.well-known/oauth-protected-resource/mcp" {
		t.Fatal(got)
	}
}
