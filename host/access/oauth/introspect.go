package oauth

import (
	"context"
	"net/http"
	"net/url"
	"slices"
	"strings"
)

// introspect asks the RFC 7662 endpoint about an opaque token: it must
// be "active", for this resource when the answer has an "aud", from a
// trusted issuer when it has an "iss" (else the first one's), and
// expire ("exp") when the answer says.
func (v *Verifier) introspect(ctx context.Context, token string) (*Claims, error) {
	form := url.Values{"token": {token}, "token_type_hint": {"access_token"}}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, v.cfg.Introspection, strings.NewReader(form.Encode()))
	if err != nil {
		return nil, refuse("introspection is misconfigured")
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Accept", "application/json")
	req.SetBasicAuth(url.QueryEscape(v.cfg.IntrospectionClient), url.QueryEscape(v.cfg.IntrospectionSecret)) // RFC 6749 §2.3.1
	resp, err := v.cfg.HTTPClient.Do(req)
	if err != nil {
		return nil, refuse("the introspection endpoint did not answer")
	}
	var raw map[string]any
	if err := readJSON(resp, &raw); err != nil {
		return nil, refuse("the introspection endpoint's answer is not valid")
	}
	if active, _ := raw["active"].(bool); !active {
		return nil, refuse("the token is not active")
	}
	iss, _ := raw["iss"].(string)
	switch {
	case iss == "":
		iss = v.cfg.Issuers[0]
	case v.issuers[iss] == nil:
		return nil, refuse("the token's issuer is not trusted here")
	}
	if aud, ok := raw["aud"]; ok && !audienceHas(aud, v.cfg.Resource) {
		return nil, refuse("the token is for another audience")
	}
	c := newClaims(iss, raw)
	if !c.Expiry.IsZero() && !v.cfg.Now().Before(c.Expiry) {
		return nil, refuse("the token expired")
	}
	if c.Expiry.IsZero() {
		c.Expiry = v.cfg.Now().Add(IntrospectionTTL)
	}
	return c, nil
}

// audienceHas reports whether an "aud" value (a string or an array of
// strings) holds resource.
func audienceHas(aud any, resource string) bool {
	switch a := aud.(type) {
	case string:
		return a == resource
	case []any:
		return slices.ContainsFunc(a, func(e any) bool { s, _ := e.(string); return s == resource })
	}
	return false
}
