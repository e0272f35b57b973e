package oauth

import (
	"net/url"
	"slices"
	"strings"
	"time"
)

// Claims are what a validated access token says about its caller: the
// JWT claims of RFC 9068 §2.2, or the members of an RFC 7662 §2.2
// introspection response.
type Claims struct {
	// Issuer is the configured issuer that issued the token (its "iss").
	Issuer string
	// Subject is "sub" ("" when the token has none, as some
	// client-credentials tokens).
	Subject string
	// ClientID is "client_id" (RFC 9068 §2.2), else "azp".
	ClientID string
	// Scopes are the token's scopes: "scope" split on spaces, or the
	// "scp" array (Entra, Okta).
	Scopes []string
	// Expiry is "exp".
	Expiry time.Time
	// raw holds every claim, for rules over claims (Has).
	raw map[string]any
	// principal is Principal's value, made once.
	principal string
}

// Principal is the caller's name where a key's name goes (audit "key",
// task and session owner, rate limit bucket): "oauth:<sub>@<issuer>"
// for a token with a "sub", "oauth-client:<client_id>@<issuer>" for one
// without (a client-credentials token), where <issuer> is the issuer's
// host and path ("kc.example/realms/a"), so that neither a user whose
// "sub" equals a client's id nor the same "sub" in another realm of one
// host takes another's tasks or sessions.
func (c *Claims) Principal() string {
	if c.principal == "" {
		c.principal = c.makePrincipal()
	}
	return c.principal
}

// makePrincipal is Principal, made.
func (c *Claims) makePrincipal() string {
	prefix, who := "oauth:", c.Subject
	if who == "" {
		prefix, who = "oauth-client:", c.ClientID
	}
	iss := c.Issuer
	if u, err := url.Parse(c.Issuer); err == nil && u.Host != "" {
		iss = u.Host + strings.TrimSuffix(u.Path, "/")
	}
	return prefix + who + "@" + iss
}

// HasScope reports whether the token carries scope s.
func (c *Claims) HasScope(s string) bool { return slices.Contains(c.Scopes, s) }

// Has reports whether claim name equals value: a string claim by
// equality, an array claim when one of its strings equals value, a
// number or boolean by its JSON text. A missing claim never matches.
func (c *Claims) Has(name, value string) bool {
	switch v := c.raw[name].(type) {
	case string:
		return v == value
	case []any:
		for _, e := range v {
			if s, ok := e.(string); ok && s == value {
				return true
			}
		}
	case bool:
		return (v && value == "true") || (!v && value == "false")
	case float64:
		return jsonNumber(v) == value
	}
	return false
}

// newClaims builds Claims of raw, issued by iss.
func newClaims(iss string, raw map[string]any) *Claims {
	c := &Claims{Issuer: iss, raw: raw}
	c.Subject, _ = raw["sub"].(string)
	c.ClientID, _ = raw["client_id"].(string)
	if c.ClientID == "" {
		c.ClientID, _ = raw["azp"].(string)
	}
	if s, ok := raw["scope"].(string); ok {
		c.Scopes = strings.Fields(s)
	} else if arr, ok := raw["scp"].([]any); ok {
		for _, e := range arr {
			if s, ok := e.(string); ok {
				c.Scopes = append(c.Scopes, s)
			}
		}
	} else if s, ok := raw["scp"].(string); ok {
		c.Scopes = strings.Fields(s)
	}
	if exp, ok := raw["exp"].(float64); ok {
		c.Expiry = time.Unix(int64(exp), 0)
	}
	c.principal = c.makePrincipal() // before c is shared: Principal only reads it then
	return c
}
