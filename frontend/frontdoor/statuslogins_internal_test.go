package frontdoor

import (
	"context"
	"net/http/httptest"
	"testing"

	"github.com/opentool-host/opentool-host/declared/oauthlogin"
	"github.com/opentool-host/opentool-host/host/access"
)

// TestStatusLogins: /status.json's logins show each caller its own: a
// per-user server's login of the caller's principal (its waiting link,
// never another principal's), a shared server's login with its waiting
// link to an unrestricted key only (who alone may make that login), and
// nothing of a server the key may not use.
func TestStatusLogins(t *testing.T) {
	reg := oauthlogin.NewRegistry(&oauthlogin.MemoryStore{}, "http://127.0.0.1/oauth/callback", nil)
	link := func(server, principal string) string {
		return "https://as.example/authorize?server=" + server + "&as=" + principal + "&state=s-" + server + "-" + principal
	}
	for _, s := range []struct {
		name    string
		perUser bool
	}{{"crm", false}, {"mail", true}, {"hidden", false}} {
		reg.Register(s.name, s.perUser, func(_ context.Context, principal string) (string, error) { return link(s.name, principal), nil })
	}
	for _, b := range [][2]string{{"crm", ""}, {"mail", "alice"}, {"mail", "bob"}} {
		if _, err := reg.Begin(context.Background(), b[0], b[1]); err != nil {
			t.Fatal(err)
		}
	}
	view := func(g *access.Grant) map[string]string {
		r := httptest.NewRequest("GET", "/status.json", nil)
		r = r.WithContext(access.WithGrant(r.Context(), g))
		out := map[string]string{}
		for _, l := range statusLogins(reg)(r) {
			if l.LoggedIn || l.Command != "opentool-host auth login "+l.Server {
				t.Errorf("%s sees %+v, want not logged in with the command", g.Name(), l)
			}
			out[l.Server+"/"+l.Principal] = l.Link
		}
		return out
	}
	alice := view(access.NewGrant("alice", []string{"plugin:crm", "plugin:mail"}))
	if len(alice) != 2 || alice["mail/alice"] != link("mail", "alice") || alice["crm/"] != "" {
		t.Errorf("alice (restricted) sees %v, want her own mail link and crm without its shared link", alice)
	}
	op := view(access.NewGrant("bob", []string{"*"}))
	if len(op) != 3 || op["mail/bob"] != link("mail", "bob") || op["crm/"] != link("crm", "") || op["hidden/"] != "" {
		t.Errorf("bob (unrestricted) sees %v, want his own mail link, crm's shared link, hidden", op)
	}
}
