package oauth

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/coreos/go-oidc/v3/oidc"
	"github.com/go-jose/go-jose/v4"
	"github.com/modelcontextprotocol/go-sdk/oauthex"
)

// RefreshEvery is the shortest time between two fetches of one issuer's
// JWKS (and between two discovery attempts that failed): a token with an
// unknown "kid" fetches the JWKS again at most this often, so that
// forged tokens cannot make the host hammer the issuer.
const RefreshEvery = 10 * time.Second

// issuer is one trusted authorization server: its metadata (RFC 8414 or
// OpenID Connect Discovery), found at first use, and its JWKS.
type issuer struct {
	url    string
	client *http.Client
	now    func() time.Time

	mu        sync.Mutex
	jwksURI   string // "" until discovered
	lastTry   time.Time
	keys      []jose.JSONWebKey
	lastFetch time.Time // of the JWKS
	verifier  *oidc.IDTokenVerifier
}

// discover fetches the issuer's metadata when not yet known (at most
// once per RefreshEvery after a failure). Callers hold i.mu.
func (i *issuer) discover(ctx context.Context) error {
	if i.jwksURI != "" {
		return nil
	}
	if now := i.now(); !i.lastTry.IsZero() && now.Sub(i.lastTry) < RefreshEvery {
		return fmt.Errorf("the metadata of issuer %s could not be read; retrying after %s", i.url, RefreshEvery)
	} else {
		i.lastTry = now
	}
	var errs []error
	for _, u := range metadataURLs(i.url) {
		m, err := i.fetchMeta(ctx, u)
		if err == nil {
			if err = CheckURL("jwks_uri", m.JWKSURI); err == nil {
				i.jwksURI = m.JWKSURI
				return nil
			}
		}
		errs = append(errs, err)
	}
	return fmt.Errorf("issuer %s: no usable metadata: %w", i.url, errors.Join(errs...))
}

// fetchMeta reads one metadata document and checks that its "issuer" is
// i's (RFC 8414 §3.3, OpenID Connect Discovery §4.3).
func (i *issuer) fetchMeta(ctx context.Context, u string) (*oauthex.AuthServerMeta, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Accept", "application/json")
	resp, err := i.client.Do(req)
	if err != nil {
		return nil, err
	}
	var m oauthex.AuthServerMeta
	if err := readJSON(resp, &m); err != nil {
		return nil, err
	}
	if m.Issuer != i.url {
		return nil, fmt.Errorf("%s names issuer %q, not %q", u, m.Issuer, i.url)
	}
	return &m, nil
}

// metadataURLs are the places of an issuer's metadata: RFC 8414 §3.1
// (path inserted after /.well-known/oauth-authorization-server), then
// OpenID Connect Discovery §4 (/.well-known/openid-configuration
// appended to the issuer, then inserted).
func metadataURLs(iss string) []string {
	u, err := url.Parse(iss)
	if err != nil {
		return nil
	}
	p := strings.TrimSuffix(u.Path, "/")
	at := func(path string) string { v := *u; v.Path, v.RawPath = path, ""; return v.String() }
	out := []string{at("/.well-known/oauth-authorization-server" + p), at(p + "/.well-known/openid-configuration")}
	if p != "" {
		out = append(out, at("/.well-known/openid-configuration"+p))
	}
	return out
}

// VerifySignature implements oidc.KeySet: it checks jwt's signature with
// the cached key of its "kid" (every cached key when it has none); an
// unknown kid fetches the JWKS again, at most once per RefreshEvery. A
// known kid whose signature fails never fetches.
func (i *issuer) VerifySignature(ctx context.Context, jwt string) ([]byte, error) {
	jws, err := jose.ParseSigned(jwt, Algorithms)
	if err != nil || len(jws.Signatures) != 1 {
		return nil, errors.New("not a JWS with one signature of an allowed algorithm")
	}
	kid := jws.Signatures[0].Header.KeyID
	i.mu.Lock()
	defer i.mu.Unlock()
	if err := i.discover(ctx); err != nil {
		return nil, err
	}
	payload, known := verifyWith(jws, i.keys, kid)
	if payload != nil {
		return payload, nil
	}
	if known && kid != "" {
		return nil, errors.New("the signature does not verify")
	}
	if !i.lastFetch.IsZero() && i.now().Sub(i.lastFetch) < RefreshEvery {
		return nil, fmt.Errorf("no key %q in the issuer's JWKS", kid)
	}
	if err := i.fetchKeys(ctx); err != nil {
		return nil, err
	}
	if payload, _ = verifyWith(jws, i.keys, kid); payload != nil {
		return payload, nil
	}
	return nil, fmt.Errorf("no key %q of the issuer's JWKS verifies the signature", kid)
}

// verifyWith verifies jws with the keys of kid (every key for kid ""),
// returning the payload, and whether a key of that kid was there.
func verifyWith(jws *jose.JSONWebSignature, keys []jose.JSONWebKey, kid string) ([]byte, bool) {
	known := false
	for k := range keys {
		if kid != "" && keys[k].KeyID != kid {
			continue
		}
		known = true
		if p, err := jws.Verify(&keys[k]); err == nil {
			return p, true
		}
	}
	return nil, known
}

// fetchKeys reads the JWKS. Callers hold i.mu.
func (i *issuer) fetchKeys(ctx context.Context) error {
	i.lastFetch = i.now()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, i.jwksURI, nil)
	if err != nil {
		return err
	}
	req.Header.Set("Accept", "application/json")
	resp, err := i.client.Do(req)
	if err != nil {
		return fmt.Errorf("fetching the JWKS of %s: %w", i.url, err)
	}
	var set struct {
		Keys []json.RawMessage `json:"keys"`
	}
	if err := readJSON(resp, &set); err != nil {
		return fmt.Errorf("the JWKS of %s: %w", i.url, err)
	}
	var keys []jose.JSONWebKey
	for _, raw := range set.Keys {
		var k jose.JSONWebKey // a key go-jose cannot read (Ed448, ES256K) is skipped (RFC 7517 §5)
		if json.Unmarshal(raw, &k) == nil && k.Valid() && k.IsPublic() && (k.Use == "" || k.Use == "sig") {
			keys = append(keys, k)
		}
	}
	i.keys = keys
	return nil
}
