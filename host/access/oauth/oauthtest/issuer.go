// Package oauthtest is an in-process OAuth authorization server for
// tests of the host as a resource server: OpenID discovery and a JWKS on
// an httptest server on 127.0.0.1, RS256 access tokens signed by its
// current key, and key rotation.
package oauthtest

import (
	"crypto/rand"
	"crypto/rsa"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/go-jose/go-jose/v4"
)

// Issuer is a test authorization server.
type Issuer struct {
	// URL is the issuer identifier (the server's base URL).
	URL string
	// JWKSFetches counts the GETs of the JWKS.
	JWKSFetches atomic.Int64

	mu   sync.Mutex
	key  *rsa.PrivateKey
	kid  string
	next int
}

// New starts an Issuer, closed at the end of t. It serves OpenID
// discovery (/.well-known/openid-configuration; RFC 8414's path answers
// 404, so that the fallback is used) and its JWKS at /jwks.
func New(t testing.TB) *Issuer {
	t.Helper()
	is := &Issuer{}
	is.Rotate()
	mux := http.NewServeMux()
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	is.URL = srv.URL
	mux.HandleFunc("GET /.well-known/openid-configuration", func(w http.ResponseWriter, _ *http.Request) {
		_ = json.NewEncoder(w).Encode(map[string]any{"issuer": is.URL, "jwks_uri": is.URL + "/jwks",
			"authorization_endpoint": is.URL + "/auth", "token_endpoint": is.URL + "/token",
			"code_challenge_methods_supported": []string{"S256"}})
	})
	mux.HandleFunc("GET /jwks", func(w http.ResponseWriter, _ *http.Request) {
		is.JWKSFetches.Add(1)
		is.mu.Lock()
		set := jose.JSONWebKeySet{Keys: []jose.JSONWebKey{{Key: is.key.Public(), KeyID: is.kid, Algorithm: "RS256", Use: "sig"}}}
		is.mu.Unlock()
		_ = json.NewEncoder(w).Encode(set)
	})
	return is
}

// Rotate replaces the signing key by a new one of a new kid ("k1",
// "k2", ...); the JWKS then lists only the new key.
func (is *Issuer) Rotate() {
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		panic(err)
	}
	is.mu.Lock()
	defer is.mu.Unlock()
	is.next++
	is.key, is.kid = key, "k"+strconv.Itoa(is.next)
}

// Key returns the current signing key and its kid.
func (is *Issuer) Key() (*rsa.PrivateKey, string) {
	is.mu.Lock()
	defer is.mu.Unlock()
	return is.key, is.kid
}

// Token signs claims (RS256, typ at+jwt) with the current key.
func (is *Issuer) Token(t testing.TB, claims map[string]any) string {
	key, kid := is.Key()
	return Sign(t, jose.RS256, key, kid, claims)
}

// Sign signs claims as a compact JWS with alg and key (any go-jose
// signing key: an *rsa.PrivateKey, []byte for HMAC), header kid and
// typ at+jwt.
func Sign(t testing.TB, alg jose.SignatureAlgorithm, key any, kid string, claims map[string]any) string {
	t.Helper()
	opts := (&jose.SignerOptions{}).WithType("at+jwt").WithHeader(jose.HeaderKey("kid"), kid)
	s, err := jose.NewSigner(jose.SigningKey{Algorithm: alg, Key: key}, opts)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := json.Marshal(claims)
	jws, err := s.Sign(b)
	if err != nil {
		t.Fatal(err)
	}
	out, err := jws.CompactSerialize()
	if err != nil {
		t.Fatal(err)
	}
	return out
}
