package e2e_test

import (
	"encoding/json"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/opentool-host/opentool-host/testkit"
	"github.com/opentool-host/opentool-host/testkit/oidcprovider"
)

// TestPerUserLoginThroughOIDCProvider: host B declares host A's /mcp by
// URL with "credentials": "per-user" and serves two API keys. Until a
// key logs in, no principal holds a token and A's tools are not listed;
// `opentool-host auth login hosta --no-browser --api-key KEY` begins
// that key's own login, the test (as its person) logs in at
// oidc-provider (A's authorization server) as alice, and is sent back to
// B's /oauth/callback. Bob's key, not logged in, is then refused with
// needs_login and a login link of its own, which the test follows as bob.
// Each key's calls then reach A as its own user (A's audit log names
// both), past the token's 15 s lifetime with a refresh and no second
// login; `auth logout hosta` with bob's key ends bob's login only; no JWT
// and no login link's state is in either host's log.
func TestPerUserLoginThroughOIDCProvider(t *testing.T) {
	t.Setenv("OIDC_ACCESS_TOKEN_TTL", "15")
	p := oidcprovider.Start(t)
	a := startOAuthHost(t, p)
	dir, _, keyFlags := declareHostA(t, a, true)
	b := startHostProcUntil(t, dir, "listening;", append(keyFlags, "--api-key", "key-of-alice", "--api-key", "key-of-bob")...)
	add := func(key string) map[string]any {
		req, _ := http.NewRequest(http.MethodPost, b.url+"/opentool/call", strings.NewReader(`{"jsonrpc":"2.0","method":"add","params":{"a":20,"b":22},"id":"1"}`))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Authorization", "Bearer "+key)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var m map[string]any
		_ = json.NewDecoder(resp.Body).Decode(&m)
		return m
	}
	served := func(m map[string]any) bool {
		r, _ := m["result"].(map[string]any)
		return r != nil && r["result"] == 42.0
	}
	bin := testkit.Build(t, "./cmd/opentool-host")
	auth := func(key string, args ...string) (string, error) {
		out, err := exec.Command(bin, append(append([]string{"auth"}, args...), "--url", b.url, "--api-key", key)...).CombinedOutput()
		return string(out), err
	}
	follow := func(key, user, link string) {
		loginAs(t, p, link, user, "hosta")
		testkit.Eventually(t, 30*time.Second, key+"'s add reaches A after its login", func() bool { return served(add(key)) })
	}
	var out string
	testkit.Eventually(t, 30*time.Second, "auth login hosta with alice's key prints a URL", func() bool {
		var err error
		out, err = auth("key-of-alice", "login", "hosta", "--no-browser")
		return err == nil && strings.Contains(out, "http")
	})
	var link string
	for _, l := range strings.Split(out, "\n") {
		if strings.HasPrefix(l, "http") {
			link = strings.TrimSpace(l)
		}
	}
	follow("key-of-alice", "alice", link)

	var m map[string]any
	testkit.Eventually(t, 30*time.Second, "bob's key is told to log in, with a link of its own", func() bool {
		m = add("key-of-bob")
		if served(m) {
			t.Fatalf("bob's key was served before bob logged in (alice's token lent?): %v", m)
		}
		e, _ := m["error"].(map[string]any)
		d, _ := e["data"].(map[string]any)
		link, _ = d["login"].(string)
		return d["kind"] == "needs_login" && strings.HasPrefix(link, "http")
	})
	t.Logf("bob's key before its login: %s", jsonString(m))
	follow("key-of-bob", "bob", link)

	// Past the 15 s lifetime: each key goes on as itself with no second login.
	deadline := time.Now().Add(25 * time.Second)
	for time.Now().Before(deadline) {
		for _, k := range []string{"key-of-alice", "key-of-bob"} {
			if m := add(k); !served(m) {
				t.Logf("B log:\n%s", b.logs.String())
				t.Fatalf("%s during and past its token's life: %v", k, m)
			}
		}
		time.Sleep(500 * time.Millisecond)
	}

	audit, err := os.ReadFile(a.audit)
	if err != nil {
		t.Fatal(err)
	}
	principals := map[string]int{}
	for _, l := range strings.Split(strings.TrimSpace(string(audit)), "\n") {
		var line struct {
			Key string `json:"key"`
		}
		if json.Unmarshal([]byte(l), &line) == nil && strings.HasPrefix(line.Key, "oauth:") {
			principals[line.Key]++
		}
	}
	t.Logf("A's audit, lines per key (principal): %v", principals)
	var alice, bob int
	for pr, n := range principals {
		switch {
		case strings.Contains(pr, "alice"):
			alice += n
		case strings.Contains(pr, "bob"):
			bob += n
		default:
			t.Errorf("A's audit names principal %q, neither alice nor bob", pr)
		}
	}
	if alice == 0 || bob == 0 {
		t.Errorf("A's audit: alice %d lines, bob %d; want both", alice, bob)
	}
	if out, err := auth("key-of-bob", "logout", "hosta"); err != nil {
		t.Fatalf("auth logout with bob's key: %v\n%s", err, out)
	}
	testkit.Eventually(t, 30*time.Second, "bob logged out is told to log in; alice goes on", func() bool {
		e, _ := add("key-of-bob")["error"].(map[string]any)
		d, _ := e["data"].(map[string]any)
		return d["kind"] == "needs_login"
	})
	if m := add("key-of-alice"); !served(m) {
		t.Fatalf("alice after bob's logout: %v", m)
	}
	for who, logs := range map[string]string{"A": a.logs.String(), "B": b.logs.String()} {
		if strings.Contains(logs, "eyJ") {
			t.Errorf("host %s's log holds a JWT", who)
		}
		if strings.Contains(logs, "state=") {
			t.Errorf("host %s's log holds a login link's state (another could finish that login as themselves)", who)
		}
	}
}
