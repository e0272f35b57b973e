package oidcprovider_test

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"golang.org/x/oauth2"
	"golang.org/x/oauth2/clientcredentials"

	"github.com/opentool-host/opentool-host/testkit/oidcprovider"
)

const resource = "http://127.0.0.1:22001/mcp"

// jwtParts decodes a JWS compact token's header and payload.
func jwtParts(t *testing.T, tok string) (map[string]any, map[string]any) {
	t.Helper()
	parts := strings.Split(tok, ".")
	if len(parts) != 3 {
		t.Fatalf("not a JWS: %q", tok)
	}
	var h, p map[string]any
	for i, v := range []*map[string]any{&h, &p} {
		b, err := base64.RawURLEncoding.DecodeString(parts[i])
		if err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal(b, v); err != nil {
			t.Fatal(err)
		}
	}
	return h, p
}

// TestClientCredentialsTokens: both client authentications get an RFC 9068
// JWT for the resource with the scope asked; ClientExpired's is expired;
// ClientAdmin's carries groups admin; a resource that is not
// http://127.0.0.1:PORT/mcp is refused.
func TestClientCredentialsTokens(t *testing.T) {
	p := oidcprovider.Start(t)
	for _, c := range []oidcprovider.Client{oidcprovider.ClientBasic, oidcprovider.ClientPost} {
		h, pl := jwtParts(t, p.ClientCredentialsToken(t, c, []string{"calc"}, resource))
		if h["typ"] != "at+jwt" || h["alg"] != "RS256" || h["kid"] == nil {
			t.Errorf("%s: header %v, want typ at+jwt, RS256, a kid", c.ID, h)
		}
		if pl["aud"] != resource || pl["iss"] != p.Issuer || pl["scope"] != "calc" || pl["client_id"] != c.ID || pl["sub"] != c.ID {
			t.Errorf("%s: payload %v", c.ID, pl)
		}
		if exp, _ := pl["exp"].(float64); time.Unix(int64(exp), 0).Before(time.Now()) {
			t.Errorf("%s: exp %v in the past", c.ID, pl["exp"])
		}
	}
	_, pl := jwtParts(t, p.ClientCredentialsToken(t, oidcprovider.ClientExpired, []string{"calc"}, resource))
	if exp, _ := pl["exp"].(float64); !time.Unix(int64(exp), 0).Before(time.Now().Add(-30 * time.Minute)) {
		t.Errorf("expired client: exp %v not an hour ago", pl["exp"])
	}
	_, pl = jwtParts(t, p.ClientCredentialsToken(t, oidcprovider.ClientAdmin, []string{"admin"}, resource))
	if g, _ := pl["groups"].([]any); !slices.Contains(g, any("admin")) {
		t.Errorf("admin client: groups %v", pl["groups"])
	}
	foreign := clientcredentials.Config{
		ClientID: oidcprovider.ClientBasic.ID, ClientSecret: oidcprovider.ClientBasic.Secret,
		TokenURL: p.Issuer + "/token", EndpointParams: map[string][]string{"resource": {"https://elsewhere.example/api"}},
	}
	if _, err := foreign.Token(context.Background()); err == nil || !strings.Contains(err.Error(), "invalid_target") {
		t.Errorf("token for a foreign resource: %v, want invalid_target", err)
	}
}

// TestAuthorizationCodeLoginAndRotation: the public client's authorization
// code flow with PKCE S256, the test as the browser, yields a JWT for the
// resource with sub = the user; after RotateKeys tokens carry the new kid
// and the JWKS lists both keys.
func TestAuthorizationCodeLoginAndRotation(t *testing.T) {
	p := oidcprovider.Start(t)
	cfg := &oauth2.Config{
		ClientID:    oidcprovider.PublicClientID,
		Endpoint:    oauth2.Endpoint{AuthURL: p.Issuer + "/auth", TokenURL: p.Issuer + "/token", AuthStyle: oauth2.AuthStyleInParams},
		RedirectURL: "http://127.0.0.1:22002/callback",
		Scopes:      []string{"calc", "notes"},
	}
	verifier := oauth2.GenerateVerifier()
	authURL := cfg.AuthCodeURL("st4te", oauth2.S256ChallengeOption(verifier), oauth2.SetAuthURLParam("resource", resource))
	back := p.AuthorizationCodeLogin(t, authURL, "alice")
	q := back.Query()
	if !strings.HasPrefix(back.String(), cfg.RedirectURL) || q.Get("state") != "st4te" || q.Get("code") == "" || q.Get("iss") != p.Issuer {
		t.Fatalf("redirect %s", back)
	}
	tok, err := cfg.Exchange(context.Background(), q.Get("code"), oauth2.VerifierOption(verifier), oauth2.SetAuthURLParam("resource", resource))
	if err != nil {
		t.Fatal(err)
	}
	h, pl := jwtParts(t, tok.AccessToken)
	if pl["sub"] != "alice" || pl["aud"] != resource || pl["scope"] != "calc notes" || h["typ"] != "at+jwt" {
		t.Errorf("code flow token: %v %v", h, pl)
	}

	kid := p.RotateKeys(t)
	h2, _ := jwtParts(t, p.ClientCredentialsToken(t, oidcprovider.ClientBasic, []string{"calc"}, resource))
	if h2["kid"] != kid || kid == h["kid"] {
		t.Errorf("after rotation: kid %v, want the new %s (old %v)", h2["kid"], kid, h["kid"])
	}
	resp, err := http.Get(p.Issuer + "/jwks")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var jwks struct{ Keys []struct{ Kid string } }
	if err := json.NewDecoder(resp.Body).Decode(&jwks); err != nil {
		t.Fatal(err)
	}
	if len(jwks.Keys) != 2 || jwks.Keys[0].Kid != kid || jwks.Keys[1].Kid != h["kid"] {
		t.Errorf("jwks after rotation: %+v", jwks.Keys)
	}
}
