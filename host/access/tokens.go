package access

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/opentool-host/opentool-host/host/access/oauth"
	"github.com/opentool-host/opentool-host/internal/strictjson"
)

// TokenRule is one rule of a keys file's "tokens": what an OAuth access
// token (package oauth) may see and call, by its scopes and claims.
//
//	{"name": "calc-users", "scopes": ["calc"], "allow": ["plugin:calculator"], "rate": {"per_second": 50}}
//	{"name": "admins", "claims": {"groups": "admin"}, "allow": ["*"]}
//
// A rule matches a token that has every scope of Scopes and every claim
// of Claims. A token's grant is the union of the Allow of the rules it
// matches; a token no rule matches may do nothing (HTTP 403
// insufficient_scope).
type TokenRule struct {
	// Name names the rule in logs: 1 to 64 of [A-Za-z0-9_.@-], unique
	// among the rules.
	Name string `json:"name"`
	// Scopes the token must all have (its "scope" claim, space-separated,
	// or its "scp" array); each a scope-token of RFC 6749 §3.3. They are
	// this resource's scopes_supported (RFC 9728).
	Scopes []string `json:"scopes,omitempty"`
	// Claims the token must all have: claim name to value, equal as
	// strings; an array claim matches when it holds the value ("groups":
	// "admin"). E.g. "sub", "client_id", "azp", a group claim.
	Claims map[string]string `json:"claims,omitempty"`
	// Allow is as a key's (KeyDecl.Allow). Required.
	Allow *[]string `json:"allow"`
	// Rate, when present, limits each principal (issuer and sub) the rule
	// matches on its own. A token matching several rules gets the most
	// generous: none when one of them has no rate.
	Rate *Rate `json:"rate,omitempty"`
}

// parseTokens decodes the "tokens" member v of a checked tree (nil when
// absent), each rule on its own so that a type fault names its index.
func parseTokens(v any) ([]TokenRule, error) {
	if v == nil {
		return nil, nil
	}
	list, ok := v.([]any)
	if !ok {
		return nil, &Fault{Path: "$.tokens", Message: "must be an array of rules"}
	}
	out := make([]TokenRule, len(list))
	for i, e := range list {
		b, _ := json.Marshal(e) // a decoded tree always encodes
		if err := json.Unmarshal(b, &out[i]); err != nil {
			return nil, strictjson.TypeFault(fmt.Sprintf("$.tokens[%d]", i), err)
		}
	}
	return out, nil
}

// checkTokens checks every rule and that names are unique.
func checkTokens(rules []TokenRule) error {
	names := map[string]int{}
	for i := range rules {
		r := &rules[i]
		p := fmt.Sprintf("$.tokens[%d]", i)
		if err := r.check(p); err != nil {
			return err
		}
		if j, dup := names[r.Name]; dup {
			return &Fault{Path: p + ".name", Message: fmt.Sprintf("%q is also the name of $.tokens[%d]", r.Name, j)}
		}
		names[r.Name] = i
	}
	return nil
}

// check checks one rule at path p.
func (r *TokenRule) check(p string) error {
	if !nameRE.MatchString(r.Name) {
		return &Fault{Path: p + ".name", Message: "is required: 1 to 64 of A-Z a-z 0-9 _ . @ -"}
	}
	for j, s := range r.Scopes {
		if s == "" || strings.ContainsAny(s, " \"\\") || strings.IndexFunc(s, func(c rune) bool { return c < 0x21 || c > 0x7e }) >= 0 {
			return &Fault{Path: fmt.Sprintf("%s.scopes[%d]", p, j), Message: "must be a scope (RFC 6749 3.3: printable ASCII, no space, quote or backslash)"}
		}
	}
	for name := range r.Claims {
		if name == "" {
			return &Fault{Path: p + ".claims", Message: "a claim name must not be empty"}
		}
	}
	if err := checkAllow(p, r.Allow); err != nil {
		return err
	}
	return checkRate(p, r.Rate)
}

// matches reports whether c satisfies r.
func (r *TokenRule) matches(c *oauth.Claims) bool {
	for _, s := range r.Scopes {
		if !c.HasScope(s) {
			return false
		}
	}
	for name, want := range r.Claims {
		if !c.Has(name, want) {
			return false
		}
	}
	return true
}

// Scopes returns every scope the rules name, sorted, without repeats:
// the resource's scopes_supported (RFC 9728 §2). granting keeps only
// the rules that allow something.
func scopesOf(rules []TokenRule, granting bool) []string {
	var out []string
	for i := range rules {
		if granting && len(*rules[i].Allow) == 0 {
			continue
		}
		out = append(out, rules[i].Scopes...)
	}
	slices.Sort(out)
	return slices.Compact(out)
}
