package decl

import (
	"errors"
	"fmt"
	"maps"
	"net/http"
	"net/url"
	"slices"
	"strings"

	"github.com/opentool-host/opentool-host/internal/strictjson"
)

// OAuth is how the host logs in to a server declared by URL: the
// "oauth" member beside "url", for a server that answers 401 as the MCP
// authorization spec (2025-11-25, "Authorization") has it. The host is
// then the OAuth 2.1 client (package mcpadapter, on the Go SDK's auth and
// auth/extauth); one login serves every caller (shared credentials).
type OAuth struct {
	// ClientID is the pre-registered client identifier ("clientId").
	// Empty: the host registers itself (Dynamic Client Registration,
	// RFC 7591). Required for GrantClientCredentials.
	ClientID string `json:"clientId,omitempty"`
	// ClientSecret is the pre-registered client's secret
	// ("clientSecret"; variables as in "headers", e.g. ${env:VAR} in an
	// operator's file), sent to the token endpoint only. Empty: a public
	// client. GrantClientCredentials needs it or PrivateKeyJWT.
	ClientSecret string `json:"clientSecret,omitempty"`
	// PrivateKeyJWT authenticates the client with a signed assertion
	// instead of a secret ("privateKeyJwt", RFC 7523 section 2.2, the
	// private_key_jwt method of OpenID Connect Core section 9); for
	// GrantClientCredentials only, with Issuer. Nil: none.
	PrivateKeyJWT *PrivateKeyJWT `json:"privateKeyJwt,omitempty"`
	// Scopes are the scopes asked for when the server's WWW-Authenticate
	// and its Protected Resource Metadata name none ("scopes"). Nil: the
	// spec's scope selection alone.
	Scopes []string `json:"scopes,omitempty"`
	// Grant is GrantAuthorizationCode ("", the default: a person logs
	// in) or GrantClientCredentials (a machine account, RFC 6749 4.4).
	Grant string `json:"grant,omitempty"`
	// Issuer pins the authorization server ("issuer", an absolute http
	// or https URL, compared as RFC 8414 section 3.3 has it): the host
	// refuses one whose metadata names another issuer, so that the
	// server's Protected Resource Metadata (RFC 9728), which the server
	// chooses, cannot send the host and its client secret to an
	// authorization server of its own. Required with ClientSecret.
	// Empty: the authorization server the metadata names (a public
	// client, which has no secret to lose).
	Issuer string `json:"issuer,omitempty"`
}

// PrivateKeyJWT is the client's signing key of "privateKeyJwt": the
// host signs each token request's client assertion with it (package
// mcpadapter, jwtauth.go).
type PrivateKeyJWT struct {
	// PrivateKey is the key in PEM ("privateKey": PKCS #8, PKCS #1 or
	// SEC 1; an RSA key of at least 2048 bits, signed RS256, or an EC
	// P-256 key, signed ES256). Variables as in "headers" (${env:VAR} in
	// an operator's file). Required.
	PrivateKey string `json:"privateKey"`
	// KeyID is the "kid" header of the assertions ("kid"), which names
	// the key among the client's registered keys. Empty: none.
	KeyID string `json:"kid,omitempty"`
}

// The values of OAuth.Grant.
const (
	GrantAuthorizationCode = "authorization_code"
	GrantClientCredentials = "client_credentials"
)

// parseOAuth decodes the "oauth" object at path p. Errors: a *Fault at
// the member at fault (an unknown member included: a login is not a
// thing to half-read).
func parseOAuth(p string, v any) (*OAuth, error) {
	m, ok := v.(map[string]any)
	if !ok {
		return nil, &Fault{Path: p, Message: "must be an object"}
	}
	o := &OAuth{}
	for _, k := range slices.Sorted(maps.Keys(m)) {
		kp := strictjson.AppendKey(p, k)
		var err error
		switch k {
		case "clientId":
			o.ClientID, err = nonEmpty(m[k])
		case "clientSecret":
			o.ClientSecret, err = nonEmpty(m[k])
		case "scopes":
			o.Scopes, err = stringList(kp, m[k])
		case "issuer":
			o.Issuer, err = nonEmpty(m[k])
			if err == nil {
				err = checkIssuer(o.Issuer)
			}
		case "grant":
			if s, isStr := m[k].(string); isStr && (s == GrantAuthorizationCode || s == GrantClientCredentials) {
				o.Grant = s
			} else {
				err = errors.New(`must be "authorization_code" or "client_credentials"`)
			}
		case "privateKeyJwt":
			o.PrivateKeyJWT, err = parsePrivateKeyJWT(kp, m[k])
		default:
			err = errors.New(`is not a member of "oauth" (clientId, clientSecret, privateKeyJwt, scopes, grant, issuer)`)
		}
		if err != nil {
			var f *Fault
			if errors.As(err, &f) {
				return nil, f
			}
			return nil, &Fault{Path: kp, Message: err.Error()}
		}
	}
	return o, nil
}

// parsePrivateKeyJWT decodes the "privateKeyJwt" object at path p.
// Errors: a *Fault at the member at fault, or at p when "privateKey" is
// missing.
func parsePrivateKeyJWT(p string, v any) (*PrivateKeyJWT, error) {
	m, ok := v.(map[string]any)
	if !ok {
		return nil, &Fault{Path: p, Message: "must be an object"}
	}
	k := &PrivateKeyJWT{}
	for _, name := range slices.Sorted(maps.Keys(m)) {
		var err error
		switch name {
		case "privateKey":
			k.PrivateKey, err = nonEmpty(m[name])
		case "kid":
			k.KeyID, err = nonEmpty(m[name])
		default:
			err = errors.New(`is not a member of "privateKeyJwt" (privateKey, kid)`)
		}
		if err != nil {
			return nil, &Fault{Path: strictjson.AppendKey(p, name), Message: err.Error()}
		}
	}
	if k.PrivateKey == "" {
		return nil, &Fault{Path: p, Message: `needs "privateKey" (the client's private key, PEM)`}
	}
	return k, nil
}

// checkOAuth checks the "oauth" of server s at path p (the entry's):
// for a url only, not over "type": "sse" (the SDK's HTTP+SSE transport
// has no OAuth), without an Authorization header (one of the two logs
// in), a secret only with its client id, and a client-credentials grant
// with both.
func checkOAuth(p string, s MCPServer) *Fault {
	o := s.OAuth
	if s.PerUser() && o == nil {
		return &Fault{Path: p + ".credentials", Message: `"per-user" needs "url" and "oauth": each caller logs in for itself`}
	}
	if o == nil {
		return nil
	}
	if s.PerUser() && o.Grant == GrantClientCredentials {
		return &Fault{Path: p + ".credentials", Message: `"per-user" needs a person's login ("grant": "authorization_code"), not "client_credentials", a machine account shared by every caller`}
	}
	p += ".oauth"
	authHeader := false
	for k := range s.Headers {
		authHeader = authHeader || strings.EqualFold(k, "Authorization")
	}
	switch {
	case s.URL == "":
		return &Fault{Path: p, Message: `"oauth" is for a url, not a command`}
	case s.Transport == TransportSSE:
		return &Fault{Path: p, Message: `"oauth" needs streamable HTTP, not "type": "sse"`}
	case authHeader:
		return &Fault{Path: p, Message: `has both "oauth" and an ` + http.CanonicalHeaderKey("authorization") + ` header; declare one`}
	case o.ClientSecret != "" && o.ClientID == "":
		return &Fault{Path: p + ".clientSecret", Message: `needs "clientId"`}
	case o.PrivateKeyJWT != nil && o.ClientSecret != "":
		return &Fault{Path: p + ".privateKeyJwt", Message: `has both "privateKeyJwt" and "clientSecret"; declare one`}
	case o.PrivateKeyJWT != nil && o.Grant != GrantClientCredentials:
		return &Fault{Path: p + ".privateKeyJwt", Message: `is for "grant": "client_credentials" (a machine account)`}
	case o.PrivateKeyJWT != nil && (o.ClientID == "" || o.Issuer == ""):
		return &Fault{Path: p + ".privateKeyJwt", Message: `needs "clientId" and "issuer" (the authorization server the assertions are for)`}
	case o.Grant == GrantClientCredentials && (o.ClientID == "" || o.ClientSecret == "" && o.PrivateKeyJWT == nil):
		return &Fault{Path: p + ".grant", Message: `"client_credentials" needs "clientId" and "clientSecret" or "privateKeyJwt"`}
	case o.ClientSecret != "" && o.Issuer == "":
		return &Fault{Path: p + ".clientSecret", Message: `needs "issuer": the authorization server the secret may be sent to (else the server's metadata chooses it)`}
	}
	return nil
}

// checkIssuer checks an "issuer": an absolute http or https URL with a
// host, no query and no fragment (RFC 8414 section 2).
func checkIssuer(s string) error {
	u, err := url.Parse(s)
	switch {
	case err != nil:
		return fmt.Errorf("must be a URL: %v", err)
	case u.Scheme != "https" && u.Scheme != "http", u.Host == "":
		return errors.New("must be an absolute https (or http) URL")
	case u.RawQuery != "" || u.Fragment != "":
		return errors.New("must have no query or fragment (RFC 8414)")
	}
	return nil
}

// clone returns a copy of o sharing no slice with it. Nil-safe.
func (o *OAuth) clone() *OAuth {
	if o == nil {
		return nil
	}
	c := *o
	c.Scopes = append([]string(nil), o.Scopes...)
	if o.PrivateKeyJWT != nil {
		k := *o.PrivateKeyJWT
		c.PrivateKeyJWT = &k
	}
	return &c
}
