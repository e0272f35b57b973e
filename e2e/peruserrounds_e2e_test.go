package e2e_test

import (
	"context"
	"encoding/json"
	"net/http"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/opentool-host/opentool-host/testkit"
	"github.com/opentool-host/opentool-host/testkit/oidcprovider"
)

// TestPerUserLoginOverInputRequired: host B declares host A's /mcp by
// URL with "credentials": "per-user"; alice's key logs in with `auth
// login`, so that A's tools are listed. The MCP Go SDK's client of
// 2026-07-28 (sessionless, input_required rounds) with bob's key, which
// holds no token, calls add: the call is answered with an input_required
// round whose request is a URL-mode elicitation/create with bob's own
// login link (not alice's login, and never a token); the client's
// handler plays bob's browser through it at oidc-provider and accepts,
// and the client's retry is answered with add's result, which reached A
// as bob (A's audit log). While bob's login waits, /status.json shows
// bob's key its own login of hosta (not logged in, the command, the link
// of the round) and alice's key hers (logged in, no link), never a token.
func TestPerUserLoginOverInputRequired(t *testing.T) {
	p := oidcprovider.Start(t)
	a := startOAuthHost(t, p)
	dir, _, keyFlags := declareHostA(t, a, true)
	b := startHostProcUntil(t, dir, "listening;", append(keyFlags, "--api-key", "key-of-alice", "--api-key", "key-of-bob")...)
	bin := testkit.Build(t, "./cmd/opentool-host")
	var out []byte
	testkit.Eventually(t, 30*time.Second, "auth login hosta with alice's key prints a URL", func() bool {
		var err error
		out, err = exec.Command(bin, "auth", "login", "hosta", "--no-browser", "--url", b.url, "--api-key", "key-of-alice").CombinedOutput()
		return err == nil && strings.Contains(string(out), "http")
	})
	var aliceLink string
	for _, l := range strings.Split(string(out), "\n") {
		if strings.HasPrefix(l, "http") {
			aliceLink = strings.TrimSpace(l)
		}
	}
	loginAs(t, p, aliceLink, "alice", "hosta")

	var mu sync.Mutex
	var asked []*mcp.ElicitParams
	logins := map[string][]map[string]any{} // /status.json's logins, by key, while bob's login waits
	c := mcp.NewClient(&mcp.Implementation{Name: "e2e", Version: "1"}, &mcp.ClientOptions{
		Capabilities: &mcp.ClientCapabilities{Elicitation: &mcp.ElicitationCapabilities{URL: &mcp.URLElicitationCapabilities{}}},
		ElicitationHandler: func(_ context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			mu.Lock()
			asked = append(asked, req.Params)
			mu.Unlock()
			if req.Params.Mode != "url" || !strings.HasPrefix(req.Params.URL, p.Issuer) {
				return &mcp.ElicitResult{Action: "decline"}, nil
			}
			logins["bob"], logins["alice"] = statusLogins(t, b.url, "key-of-bob"), statusLogins(t, b.url, "key-of-alice")
			loginAs(t, p, req.Params.URL, "bob", "hosta") // the person, in the browser
			return &mcp.ElicitResult{Action: "accept"}, nil
		},
	})
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	cs, err := c.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: b.url + "/mcp", HTTPClient: &http.Client{Transport: bearer("key-of-bob")}}, nil)
	if err != nil {
		t.Fatalf("MCP connect with bob's key: %v", err)
	}
	defer cs.Close()
	if v := cs.InitializeResult().ProtocolVersion; v != "2026-07-28" {
		t.Fatalf("the client speaks %s, want 2026-07-28", v)
	}
	var res *mcp.CallToolResult
	testkit.Eventually(t, 30*time.Second, "add is listed to bob's key (alice's login lists A's tools)", func() bool {
		lt, err := cs.ListTools(ctx, nil)
		if err != nil {
			return false
		}
		for _, tl := range lt.Tools {
			if tl.Name == "add" {
				return true
			}
		}
		return false
	})
	res, err = cs.CallTool(ctx, &mcp.CallToolParams{Name: "add", Arguments: map[string]any{"a": 20, "b": 22}})
	if err != nil {
		t.Fatalf("add with bob's key: %v", err)
	}
	got, _ := json.Marshal(res)
	if res.IsError || !strings.Contains(string(got), "42") {
		t.Fatalf("add with bob's key after its login round: %s", got)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(asked) != 1 || asked[0].Mode != "url" || asked[0].URL == aliceLink || !strings.HasPrefix(asked[0].ElicitationID, "login-") {
		t.Fatalf("elicitations asked: %+v, want one URL-mode login of bob's own", asked)
	}
	t.Logf("the login round: %s", jsonString(asked[0]))
	t.Logf("status.json's logins while bob's login waits: %s", jsonString(logins))
	bob, alice := logins["bob"], logins["alice"]
	if len(bob) != 1 || bob[0]["server"] != "hosta" || bob[0]["loggedIn"] != false || bob[0]["link"] != asked[0].URL || bob[0]["command"] != "opentool-host auth login hosta" {
		t.Errorf("bob's status.json logins: %v, want hosta not logged in, with bob's waiting link and the command", bob)
	}
	if len(alice) != 1 || alice[0]["loggedIn"] != true || alice[0]["link"] != nil || strings.Contains(jsonString(alice), asked[0].URL) || bob[0]["principal"] == alice[0]["principal"] {
		t.Errorf("alice's status.json logins: %v, want her own, logged in, without bob's link", alice)
	}
	for _, l := range append(bob, alice...) {
		if strings.Contains(jsonString(l), "eyJ") || l["accessToken"] != nil || l["access_token"] != nil {
			t.Errorf("a token in status.json: %v", l)
		}
	}
	waitAudit(t, a.audit, "bob")
	if strings.Contains(b.logs.String(), "eyJ") {
		t.Error("host B's log holds a JWT")
	}
}

// statusLogins returns the logins of /status.json of the host at base
// for key.
func statusLogins(t *testing.T, base, key string) []map[string]any {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, base+"/status.json", nil)
	req.Header.Set("Authorization", "Bearer "+key)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Error(err)
		return nil
	}
	defer resp.Body.Close()
	var st struct {
		Logins []map[string]any `json:"logins"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&st); err != nil || resp.StatusCode != http.StatusOK {
		t.Errorf("status.json for %s: HTTP %d %v", key, resp.StatusCode, err)
	}
	return st.Logins
}
