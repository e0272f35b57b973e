package access

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/opentool-host/opentool-host/host/access/oauth"
)

// Principal is who an OAuth access token speaks for: its issuer, "sub"
// and "client_id" (RFC 9068 §2.2), as the audit log's "principal".
type Principal struct {
	Issuer   string `json:"iss"`
	Subject  string `json:"sub,omitempty"`
	ClientID string `json:"client_id,omitempty"`
}

// Principal returns the principal of a token's grant, nil for a key's.
func (g *Grant) Principal() *Principal {
	if g == nil {
		return nil
	}
	return g.principal
}

// maxPrincipals bounds the token grants a keySet holds; beyond it they
// are dropped (and made again at their principal's next request).
const maxPrincipals = 100000

// principals are the grants made for tokens: by principal and the rules
// matched, so that a principal's rate limit holds across its requests.
type principals struct {
	m sync.Map // string -> *Grant
	n atomic.Int64
}

// grant returns the grant of key, made by mk at first.
func (p *principals) grant(key string, mk func() *Grant) *Grant {
	if g, ok := p.m.Load(key); ok {
		return g.(*Grant)
	}
	if p.n.Add(1) > maxPrincipals {
		p.m.Clear()
		p.n.Store(1)
	}
	g, _ := p.m.LoadOrStore(key, mk())
	return g.(*Grant)
}

// revokeAll revokes every grant (the rules changed).
func (p *principals) revokeAll() {
	p.m.Range(func(_, g any) bool {
		g.(*Grant).revoke()
		return true
	})
}

// errNoGrant is token's error for a valid token the rules grant nothing.
var errNoGrant = errors.New("insufficient_scope")

// token validates an access token and returns its grant. Errors: an
// *oauth.Error (401), errNoGrant (403).
func (g *Guard) token(ctx context.Context, set *keySet, token string) (*Grant, error) {
	c, err := g.cfg.OAuth.Verify(ctx, token)
	if err != nil {
		return nil, err
	}
	if gr := set.tokenGrant(c, g.Count); gr != nil {
		return gr, nil
	}
	return nil, errNoGrant
}

// tokenGrant returns the grant of c by the rules of s: the union of the
// allow lists of the rules c matches, with the most generous rate; nil
// when it allows nothing. keys is the Guard's Count (Grant.KeysInForce).
func (s *keySet) tokenGrant(c *oauth.Claims, keys func() int) *Grant {
	var matched []int
	var allow []string
	key := make([]byte, 0, 128)
	for i := range s.rules {
		if s.rules[i].matches(c) {
			matched = append(matched, i)
			allow = append(allow, *s.rules[i].Allow...)
			key = strconv.AppendInt(append(key, ','), int64(i), 10)
		}
	}
	if len(allow) == 0 {
		return nil
	}
	name := c.Principal()
	key = append(append(append(append(key, 0), c.Issuer...), 0), name...)
	return s.principals.grant(string(key), func() *Grant {
		gr := newGrant(name, allow, s.rateOf(matched), true, keys)
		gr.principal = &Principal{Issuer: c.Issuer, Subject: c.Subject, ClientID: c.ClientID}
		return gr
	})
}

// rateOf is the most generous rate of the rules matched: nil (none) when
// one has none.
func (s *keySet) rateOf(matched []int) *Rate {
	var best *Rate
	for _, i := range matched {
		r := s.rules[i].Rate
		if r == nil {
			return nil
		}
		if best == nil || r.PerSecond > best.PerSecond || (r.PerSecond == best.PerSecond && r.burst() > best.burst()) {
			best = r
		}
	}
	return best
}

// refuseToken writes the answer to a refused token: 401 invalid_token
// for an *oauth.Error, 403 insufficient_scope for errNoGrant (RFC 6750
// §3.1).
func (g *Guard) refuseToken(w http.ResponseWriter, r *http.Request, set *keySet, err error) {
	h := w.Header()
	h["Content-Type"] = contentJSON
	h["Www-Authenticate"] = []string{g.challenge(set, err)}
	status, msg := http.StatusUnauthorized, "unauthorized: the access token is not valid"
	var oe *oauth.Error
	if errors.As(err, &oe) {
		msg += ": " + oe.Description
	} else {
		status, msg = http.StatusForbidden, "forbidden: the access token grants nothing here (insufficient_scope)"
		if sc := scopesOf(set.rules, true); len(sc) > 0 {
			msg += "; a token with scope " + strings.Join(sc, " or ") + " would"
		}
	}
	g.cfg.Logger.Debug("request refused", "path", r.URL.Path, "remote", r.RemoteAddr, "status", status, "why", msg)
	b, _ := json.Marshal(map[string]any{"error": map[string]any{"code": status, "message": msg}})
	w.WriteHeader(status)
	_, _ = w.Write(b)
}

// challenge is the WWW-Authenticate value of a refusal with OAuth on
// (RFC 9728 §5.1, RFC 6750 §3): resource_metadata and the scopes
// supported for a missing or refused credential, with
// error="invalid_token" and its description for a refused token;
// error="insufficient_scope" with the scopes that would grant something
// for errNoGrant.
func (g *Guard) challenge(set *keySet, err error) string {
	meta := `resource_metadata="` + oauth.MetadataURL(g.cfg.OAuth.Resource()) + `"`
	if errors.Is(err, errNoGrant) {
		return `Bearer error="insufficient_scope", scope="` + strings.Join(scopesOf(set.rules, true), " ") + `", ` + meta
	}
	v := "Bearer " + meta
	if sc := scopesOf(set.rules, false); len(sc) > 0 {
		v += `, scope="` + strings.Join(sc, " ") + `"`
	}
	var oe *oauth.Error
	if errors.As(err, &oe) {
		v += `, error="invalid_token", error_description="` + oe.Description + `"`
	}
	return v
}

// Metadata returns this resource's Protected Resource Metadata (RFC
// 9728 §2) for the OAuth verifier of g, with the scopes of the rules in
// force; nil without OAuth.
func (g *Guard) Metadata() *oauth.ResourceMetadata {
	if g == nil || g.cfg.OAuth == nil {
		return nil
	}
	return &oauth.ResourceMetadata{
		Resource:             g.cfg.OAuth.Resource(),
		AuthorizationServers: g.cfg.OAuth.Issuers(),
		ScopesSupported:      slices.Clip(scopesOf(g.cur.Load().rules, false)),
	}
}
