// Package oauth validates OAuth 2.1 access tokens for the host as a
// resource server (MCP authorization, 2025-06-18 and later): JWT access
// tokens (RFC 9068) signed by a trusted issuer's JWKS, found by RFC 8414
// or OpenID Connect Discovery, and opaque tokens by RFC 7662
// introspection. It says what a token is (Claims); what a token may do
// is package access's (the "tokens" rules of the keys file).
package oauth

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/coreos/go-oidc/v3/oidc"
	"github.com/go-jose/go-jose/v4"
)

// Algorithms are the JWS algorithms accepted (RFC 7518): never "none",
// never an HMAC (whose key would be the issuer's public key).
var Algorithms = []jose.SignatureAlgorithm{jose.RS256, jose.PS256, jose.ES256, jose.EdDSA}

// Skew is the clock skew allowed on "nbf" and "iat".
const Skew = 60 * time.Second

// IntrospectionTTL is the longest an introspection answer is cached
// (less when the token expires sooner).
const IntrospectionTTL = 60 * time.Second

// MaxCached is how many validated tokens are cached at most.
const MaxCached = 10000

// Config configures a Verifier.
type Config struct {
	// Issuers are the trusted authorization servers' issuer identifiers
	// (--oauth-issuer; https, or http on a loopback host). At least one.
	Issuers []string
	// Resource is this host's canonical MCP endpoint URI
	// (--oauth-resource, RFC 8707): a token's "aud" must contain it.
	Resource string
	// Introspection is the RFC 7662 endpoint for opaque tokens
	// (--oauth-introspection; "" for none), called with HTTP Basic
	// IntrospectionClient:IntrospectionSecret (RFC 7662 §2.1).
	Introspection                            string
	IntrospectionClient, IntrospectionSecret string
	// HTTPClient fetches metadata, JWKS and introspection answers
	// (default: one with a 10 s timeout).
	HTTPClient *http.Client
	// Now is the clock (default time.Now).
	Now func() time.Time
}

// Verifier validates access tokens. It is safe for concurrent use; a
// token validated once is not checked again until it expires (cached by
// its sha256, at most MaxCached), so that a call makes no round trip to
// an issuer.
type Verifier struct {
	cfg     Config
	issuers map[string]*issuer

	mu    sync.RWMutex
	cache map[[sha256.Size]byte]cached
}

// cached is a validated token's claims and until when they hold.
type cached struct {
	claims *Claims
	until  time.Time
}

// Error is why a token was refused: Description is RFC 6750 §3's
// error_description (ASCII, no quotes), naming no secret.
type Error struct{ Description string }

// Error implements error.
func (e *Error) Error() string { return "invalid_token: " + e.Description }

// refuse returns an *Error of a description.
func refuse(format string, args ...any) *Error {
	d := fmt.Sprintf(format, args...)
	return &Error{Description: strings.Map(func(r rune) rune {
		if r == '"' || r == '\\' || r < 0x20 || r > 0x7e {
			return '\''
		}
		return r
	}, d)}
}

// New returns the Verifier of cfg; it reads nothing yet (issuers'
// metadata and keys are fetched at first use). Errors: no issuer, an
// issuer, resource or introspection URL that is not https (or http on
// loopback), introspection without a client id.
func New(cfg Config) (*Verifier, error) {
	if len(cfg.Issuers) == 0 {
		return nil, errors.New("--oauth-issuer: at least one is needed")
	}
	if cfg.HTTPClient == nil {
		cfg.HTTPClient = &http.Client{Timeout: 10 * time.Second}
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if err := CheckURL("--oauth-resource", cfg.Resource); err != nil {
		return nil, err
	}
	if cfg.Introspection != "" {
		if err := CheckURL("--oauth-introspection", cfg.Introspection); err != nil {
			return nil, err
		}
		if cfg.IntrospectionClient == "" {
			return nil, errors.New("--oauth-introspection needs --oauth-introspection-client")
		}
	}
	v := &Verifier{cfg: cfg, issuers: map[string]*issuer{}, cache: map[[sha256.Size]byte]cached{}}
	for _, u := range cfg.Issuers {
		if err := CheckURL("--oauth-issuer", u); err != nil {
			return nil, err
		}
		is := &issuer{url: u, client: cfg.HTTPClient, now: cfg.Now}
		is.verifier = oidc.NewVerifier(u, is, &oidc.Config{ClientID: cfg.Resource, SupportedSigningAlgs: algNames(), Now: cfg.Now})
		v.issuers[u] = is
	}
	return v, nil
}

// algNames are Algorithms as strings.
func algNames() []string {
	out := make([]string, len(Algorithms))
	for i, a := range Algorithms {
		out[i] = string(a)
	}
	return out
}

// Issuers returns the trusted issuers, as configured.
func (v *Verifier) Issuers() []string { return slices.Clone(v.cfg.Issuers) }

// Resource returns the resource URI tokens must be for.
func (v *Verifier) Resource() string { return v.cfg.Resource }

// Introspects reports whether opaque tokens are introspected.
func (v *Verifier) Introspects() bool { return v.cfg.Introspection != "" }

// LooksLikeJWS reports whether token has the form of a compact JWS
// (three base64url parts, the first a JSON object with "alg").
func LooksLikeJWS(token string) bool {
	head, _, ok := strings.Cut(token, ".")
	if !ok || strings.Count(token, ".") != 2 {
		return false
	}
	b, err := base64.RawURLEncoding.DecodeString(head)
	if err != nil {
		return false
	}
	var h struct {
		Alg *string `json:"alg"`
	}
	return json.Unmarshal(b, &h) == nil && h.Alg != nil
}

// Verify validates token and returns its claims. A JWS is checked as an
// RFC 9068 access token: signature by a key of its issuer's JWKS (alg in
// Algorithms), "iss" one of Config.Issuers, "aud" containing
// Config.Resource, "exp" required and not passed, "nbf" and "iat" not
// more than Skew ahead, "typ" at+jwt, application/at+jwt, JWT or none.
// Anything else goes to introspection when configured. Errors: *Error
// saying why the token was refused.
func (v *Verifier) Verify(ctx context.Context, token string) (*Claims, error) {
	sum := sha256.Sum256([]byte(token))
	now := v.cfg.Now()
	if c, ok := v.cached(sum, now); ok {
		return c, nil
	}
	var (
		c     *Claims
		until time.Time
		err   error
	)
	switch {
	case LooksLikeJWS(token):
		c, err = v.verifyJWT(ctx, token, now)
		until = c.expiry()
	case v.Introspects():
		c, err = v.introspect(ctx, token)
		if until = now.Add(IntrospectionTTL); c.expiry().Before(until) {
			until = c.expiry()
		}
	default:
		return nil, refuse("neither an API key nor an access token (a JWT; opaque tokens need introspection)")
	}
	if err != nil {
		return nil, err
	}
	v.remember(sum, cached{claims: c, until: until}, now)
	return c, nil
}

// expiry is c's Expiry (zero for nil c).
func (c *Claims) expiry() time.Time {
	if c == nil {
		return time.Time{}
	}
	return c.Expiry
}

// verifyJWT checks a JWS access token (see Verify).
func (v *Verifier) verifyJWT(ctx context.Context, token string, now time.Time) (*Claims, error) {
	jws, err := jose.ParseSigned(token, Algorithms)
	if err != nil {
		return nil, refuse("the token is not signed with one of %s", strings.Join(algNames(), ", "))
	}
	if len(jws.Signatures) != 1 {
		return nil, refuse("the token must have exactly one signature")
	}
	if typ, _ := jws.Signatures[0].Protected.ExtraHeaders[jose.HeaderType].(string); !okType(typ) {
		return nil, refuse("the token's typ %s is not at+jwt or JWT", typ)
	}
	var unverified struct {
		Iss string `json:"iss"`
	}
	if json.Unmarshal(jws.UnsafePayloadWithoutVerification(), &unverified) != nil {
		return nil, refuse("the token's payload is not a JSON object")
	}
	is := v.issuers[unverified.Iss]
	if is == nil {
		return nil, refuse("the token's issuer is not trusted here")
	}
	var raw map[string]any
	if err := json.Unmarshal(jws.UnsafePayloadWithoutVerification(), &raw); err != nil {
		return nil, refuse("the token's payload is not a JSON object")
	}
	if _, ok := raw["exp"].(float64); !ok {
		return nil, refuse("the token has no exp")
	}
	if _, err := is.verifier.Verify(ctx, token); err != nil {
		var exp *oidc.TokenExpiredError
		if errors.As(err, &exp) {
			return nil, refuse("the token expired")
		}
		return nil, refuse("the token is not valid for this resource: %v", err)
	}
	for _, name := range []string{"nbf", "iat"} {
		if t, ok := raw[name].(float64); ok && time.Unix(int64(t), 0).After(now.Add(Skew)) {
			return nil, refuse("the token's %s is in the future", name)
		}
	}
	return newClaims(is.url, raw), nil
}

// okType reports whether a JWS typ header is one accepted (RFC 9068 §2.1
// and plain JWT, case-insensitive; none).
func okType(typ string) bool {
	switch strings.ToLower(typ) {
	case "", "jwt", "at+jwt", "application/at+jwt":
		return true
	}
	return false
}

// cached returns the claims of a token validated before, unless expired.
func (v *Verifier) cached(sum [sha256.Size]byte, now time.Time) (*Claims, bool) {
	v.mu.RLock()
	e, ok := v.cache[sum]
	v.mu.RUnlock()
	if !ok || !now.Before(e.until) {
		return nil, false // an expired entry goes when the cache is full (remember)
	}
	return e.claims, true
}

// remember caches e; when full, expired entries go first, then
// arbitrary ones.
func (v *Verifier) remember(sum [sha256.Size]byte, e cached, now time.Time) {
	v.mu.Lock()
	defer v.mu.Unlock()
	if len(v.cache) >= MaxCached {
		for k, old := range v.cache {
			if !now.Before(old.until) {
				delete(v.cache, k)
			}
		}
		for k := range v.cache {
			if len(v.cache) < MaxCached {
				break
			}
			delete(v.cache, k)
		}
	}
	v.cache[sum] = e
}
