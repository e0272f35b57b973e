package mcpadapter

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/json"
	"encoding/pem"
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/go-jose/go-jose/v4"
	"github.com/go-jose/go-jose/v4/jwt"
	"golang.org/x/oauth2"
	"golang.org/x/oauth2/clientcredentials"

	"github.com/opentool-host/opentool-host/protocol/decl"
	"github.com/opentool-host/opentool-host/testkit/oidcprovider"
)

// pemOf is key in PEM: PKCS #8.
func pemOf(t *testing.T, key any) string {
	t.Helper()
	der, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	return string(pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der}))
}

// TestSigningKeyRefusesBadKeys: a key that is not PEM, not a private
// key, too small an RSA key or an EC key off P-256 is refused, and the
// error never quotes the key.
func TestSigningKeyRefusesBadKeys(t *testing.T) {
	small, _ := rsa.GenerateKey(rand.Reader, 1024)
	p384, _ := ecdsa.GenerateKey(elliptic.P384(), rand.Reader)
	notKey := string(pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: []byte("not a key at all")}))
	for _, tc := range []struct{ key, want string }{
		{"no PEM here", "not a PEM private key"},
		{notKey, `a PEM "PRIVATE KEY" block that is not a private key`},
		{pemOf(t, small), "an RSA key of 1024 bits; at least 2048 are needed"},
		{pemOf(t, p384), "an EC key on P-384; ES256 needs P-256"},
	} {
		_, err := signingKey(&decl.PrivateKeyJWT{PrivateKey: tc.key})
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("signingKey: %v, want %q", err, tc.want)
			continue
		}
		if len(tc.key) > 40 && strings.Contains(err.Error(), tc.key[30:40]) {
			t.Errorf("the error quotes the key: %v", err)
		}
	}
}

// TestPrivateKeyJWTAtOIDCProvider: the client assertions withAssertion
// signs (RS256 and ES256, each with its kid) get a client-credentials
// token from oidc-provider's token endpoint for a client registered with
// private_key_jwt and the public keys, two in a row (each assertion its
// own jti); the secret the SDK's handler holds is never sent; a key the
// client did not register is refused.
func TestPrivateKeyJWTAtOIDCProvider(t *testing.T) {
	rsaKey, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	ecKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	other, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	jwks, err := json.Marshal(jose.JSONWebKeySet{Keys: []jose.JSONWebKey{
		{Key: rsaKey.Public(), KeyID: "rsa-1", Algorithm: "RS256", Use: "sig"},
		{Key: ecKey.Public(), KeyID: "ec-1", Algorithm: "ES256", Use: "sig"},
	}})
	if err != nil {
		t.Fatal(err)
	}
	t.Setenv(oidcprovider.JWTClientKeys, string(jwks))
	p := oidcprovider.Start(t)

	var sent []url.Values
	token := func(key any, kid string) (*oauth2.Token, error) {
		signer, err := signingKey(&decl.PrivateKeyJWT{PrivateKey: pemOf(t, key), KeyID: kid})
		if err != nil {
			t.Fatal(err)
		}
		hc := &http.Client{Timeout: 30 * time.Second, Transport: withAssertion{
			base: recorder{http.DefaultTransport, &sent}, clientID: oidcprovider.JWTClientID, issuer: p.Issuer, signer: signer, now: time.Now}}
		cfg := clientcredentials.Config{ClientID: oidcprovider.JWTClientID, ClientSecret: unsentSecret, TokenURL: p.Issuer + "/token",
			EndpointParams: url.Values{"resource": {"http://127.0.0.1:1/mcp"}}, AuthStyle: oauth2.AuthStyleInParams}
		return cfg.Token(context.WithValue(context.Background(), oauth2.HTTPClient, hc))
	}
	for _, k := range []struct {
		key any
		kid string
	}{{rsaKey, "rsa-1"}, {ecKey, "ec-1"}, {ecKey, "ec-1"}} {
		tok, err := token(k.key, k.kid)
		if err != nil {
			t.Fatalf("kid %s: %v", k.kid, err)
		}
		if tok.AccessToken == "" {
			t.Fatalf("kid %s: no access token", k.kid)
		}
	}
	if _, err := token(other, "ec-1"); err == nil || !strings.Contains(err.Error(), "invalid_client") {
		t.Errorf("a key the client did not register: %v, want invalid_client", err)
	}
	seen := map[string]bool{}
	for _, f := range sent {
		if f.Has("client_secret") || strings.Contains(f.Encode(), unsentSecret) {
			t.Errorf("a token request carries the handler's secret: %v", f)
		}
		a := f.Get("client_assertion")
		if f.Get("client_assertion_type") != clientAssertionType || a == "" || seen[a] {
			t.Errorf("token request %v: want a client assertion of its own", f)
		}
		seen[a] = true
		parsed, err := jwt.ParseSigned(a, []jose.SignatureAlgorithm{jose.RS256, jose.ES256})
		if err != nil {
			t.Fatalf("client assertion: %v", err)
		}
		var c jwt.Claims
		if err := parsed.UnsafeClaimsWithoutVerification(&c); err != nil {
			t.Fatal(err)
		}
		if c.Issuer != oidcprovider.JWTClientID || c.Subject != oidcprovider.JWTClientID || !c.Audience.Contains(p.Issuer) || c.ID == "" ||
			c.Expiry == nil || c.IssuedAt == nil || c.Expiry.Time().Sub(c.IssuedAt.Time()) > 5*time.Minute {
			t.Errorf("client assertion claims %+v: want iss = sub = %s, aud %s, a jti, exp at most 5 min after iat", c, oidcprovider.JWTClientID, p.Issuer)
		}
	}
	if len(sent) != 4 {
		t.Errorf("%d token requests sent, want 4", len(sent))
	}
}

// recorder is an HTTP transport that keeps the form of each request it
// sends.
type recorder struct {
	base http.RoundTripper
	sent *[]url.Values
}

// RoundTrip implements http.RoundTripper.
func (r recorder) RoundTrip(req *http.Request) (*http.Response, error) {
	if req.GetBody != nil {
		b, _ := req.GetBody()
		var buf strings.Builder
		_, _ = io.Copy(&buf, b)
		f, _ := url.ParseQuery(buf.String())
		*r.sent = append(*r.sent, f)
	}
	return r.base.RoundTrip(req)
}
