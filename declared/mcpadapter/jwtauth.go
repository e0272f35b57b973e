package mcpadapter

import (
	"bytes"
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/base64"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/go-jose/go-jose/v4"
	"github.com/go-jose/go-jose/v4/jwt"

	"github.com/opentool-host/opentool-host/protocol/decl"
)

// clientAssertionType is the client_assertion_type of a JWT client
// assertion (RFC 7523 section 2.2).
const clientAssertionType = "urn:ietf:params:oauth:client-assertion-type:jwt-bearer"

// assertionLifetime is how long a client assertion is valid (its exp
// after its iat): one token request's time, well under the 5 minutes
// the client-credentials extension allows.
const assertionLifetime = 2 * time.Minute

// minRSABits is the smallest RSA key a client assertion is signed with.
const minRSABits = 2048

// unsentSecret is the client secret the SDK's client-credentials handler
// is given for a client that authenticates with private_key_jwt (it
// takes no other method): withAssertion takes it out of every token
// request, where the assertion stands instead, so it never leaves the
// host.
const unsentSecret = "private_key_jwt"

// signingKey parses k's PEM private key (PKCS #8, PKCS #1 or SEC 1)
// into a JWS signer of the algorithm its type has: RS256 for an RSA key
// of at least minRSABits, ES256 for an EC P-256 key, with k's "kid"
// header when set. Errors: no PEM block, a key that does not parse, of
// another type, curve or size; the error never quotes the key.
func signingKey(k *decl.PrivateKeyJWT) (jose.Signer, error) {
	block, _ := pem.Decode([]byte(strings.TrimSpace(k.PrivateKey)))
	if block == nil {
		return nil, errors.New("privateKeyJwt.privateKey: not a PEM private key")
	}
	var key crypto.PrivateKey
	var err error
	switch block.Type {
	case "RSA PRIVATE KEY":
		key, err = x509.ParsePKCS1PrivateKey(block.Bytes)
	case "EC PRIVATE KEY":
		key, err = x509.ParseECPrivateKey(block.Bytes)
	default:
		key, err = x509.ParsePKCS8PrivateKey(block.Bytes)
	}
	if err != nil {
		return nil, fmt.Errorf("privateKeyJwt.privateKey: a PEM %q block that is not a private key: %v", block.Type, err)
	}
	var alg jose.SignatureAlgorithm
	switch key := key.(type) {
	case *rsa.PrivateKey:
		if key.N.BitLen() < minRSABits {
			return nil, fmt.Errorf("privateKeyJwt.privateKey: an RSA key of %d bits; at least %d are needed", key.N.BitLen(), minRSABits)
		}
		alg = jose.RS256
	case *ecdsa.PrivateKey:
		if key.Curve != elliptic.P256() {
			return nil, fmt.Errorf("privateKeyJwt.privateKey: an EC key on %s; ES256 needs P-256", key.Curve.Params().Name)
		}
		alg = jose.ES256
	default:
		return nil, fmt.Errorf("privateKeyJwt.privateKey: a %T key; RSA (RS256) or EC P-256 (ES256) is needed", key)
	}
	opts := (&jose.SignerOptions{}).WithType("JWT")
	if k.KeyID != "" {
		opts = opts.WithHeader(jose.HeaderKey("kid"), k.KeyID)
	}
	return jose.NewSigner(jose.SigningKey{Algorithm: alg, Key: key}, opts)
}

// withAssertion is an HTTP transport that authenticates the token
// requests of a client declared with "privateKeyJwt" (RFC 7523 section
// 2.2; the client-credentials extension, SEP-1046): each POST form with
// a grant_type (client_credentials, and refresh_token should a server
// issue one) loses the client secret the SDK's handler put in its body
// or Authorization header (unsentSecret) and gets client_id,
// client_assertion_type and a client_assertion signed now: iss and sub
// the client id, aud the pinned issuer (the authorization server's
// issuer identifier, which the extension names as the audience; the
// SDK's handler refuses another issuer before any token request), a
// random jti, iat now and exp assertionLifetime later. So every token
// request, the first and each one after a token expires, carries an
// assertion of its own. Other requests pass as they are.
type withAssertion struct {
	base     http.RoundTripper
	clientID string
	issuer   string
	signer   jose.Signer
	now      func() time.Time
}

// RoundTrip implements http.RoundTripper.
func (t withAssertion) RoundTrip(r *http.Request) (*http.Response, error) {
	b, isForm, err := formBody(r)
	if err != nil {
		return nil, err
	}
	if !isForm {
		return t.base.RoundTrip(r)
	}
	if len(b) > maxTokenRequestBody {
		return nil, fmt.Errorf("a token request of more than %d bytes", maxTokenRequestBody)
	}
	f, err := url.ParseQuery(string(b))
	if err != nil || f.Get("grant_type") == "" {
		return t.base.RoundTrip(withBody(r, b))
	}
	a, err := t.assertion()
	if err != nil {
		return nil, fmt.Errorf("private_key_jwt: signing the client assertion: %w", err)
	}
	f.Del("client_secret")
	f.Set("client_id", t.clientID)
	f.Set("client_assertion_type", clientAssertionType)
	f.Set("client_assertion", a)
	c := withBody(r, []byte(f.Encode()))
	c.Header.Del("Authorization")
	return t.base.RoundTrip(c)
}

// assertion is a client assertion signed now (withAssertion).
func (t withAssertion) assertion() (string, error) {
	jti := make([]byte, 16)
	if _, err := rand.Read(jti); err != nil {
		return "", err
	}
	now := t.now()
	return jwt.Signed(t.signer).Claims(jwt.Claims{
		Issuer:    t.clientID,
		Subject:   t.clientID,
		Audience:  jwt.Audience{t.issuer},
		ID:        base64.RawURLEncoding.EncodeToString(jti),
		IssuedAt:  jwt.NewNumericDate(now),
		NotBefore: jwt.NewNumericDate(now),
		Expiry:    jwt.NewNumericDate(now.Add(assertionLifetime)),
	}).Serialize()
}

// formBody reads the body of r when r is a POST of a form (what a token
// request is): up to maxTokenRequestBody+1 bytes (a longer body is cut
// there: its caller refuses or passes it unchanged), r's body closed.
// isForm false: another request, its body unread. Errors: reading it.
func formBody(r *http.Request) (b []byte, isForm bool, err error) {
	if r.Method != http.MethodPost || r.Body == nil || !strings.HasPrefix(r.Header.Get("Content-Type"), "application/x-www-form-urlencoded") {
		return nil, false, nil
	}
	b, err = io.ReadAll(io.LimitReader(r.Body, maxTokenRequestBody+1))
	_ = r.Body.Close()
	return b, true, err
}

// withBody is a clone of request r (headers copied) whose body is b.
func withBody(r *http.Request, b []byte) *http.Request {
	c := r.Clone(r.Context())
	c.Body, c.ContentLength = io.NopCloser(bytes.NewReader(b)), int64(len(b))
	c.GetBody = func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(b)), nil }
	return c
}
