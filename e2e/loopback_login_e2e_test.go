package e2e_test

import (
	"bufio"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/opentool-host/opentool-host/testkit"
	"github.com/opentool-host/opentool-host/testkit/oidcprovider"
)

// TestAuthLoginWithoutAHost: no host answers at --url, so `opentool-host
// auth login hosta --no-browser` reads hosta's declaration from --dir
// (host A's /mcp by URL with "oauth": DCR at oidc-provider), listens on
// a loopback port of its own and prints an authorization URL whose
// redirect_uri is http://127.0.0.1:PORT/callback, with PKCE S256 and
// resource; the test logs in as alice through it and follows the
// redirect to the CLI's listener, and the CLI exits 0 once the token is
// sealed in --state-dir. A host B started afterwards with the same
// --dir, --state-dir and --oauth-token-key reaches A as alice with no
// login (A's audit log), and its auth status shows the token.
func TestAuthLoginWithoutAHost(t *testing.T) {
	p := oidcprovider.Start(t)
	a := startOAuthHost(t, p)
	dir, state, keyFlags := declareHostA(t, a, false)
	bin := testkit.Build(t, "./cmd/opentool-host")

	cmd := exec.Command(bin, append([]string{"auth", "login", "hosta", "--no-browser", "--url", "http://127.0.0.1:1", "--dir", dir}, keyFlags...)...)
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	lines := make(chan string, 16)
	go func() {
		defer close(lines)
		s := bufio.NewScanner(stdout)
		for s.Scan() {
			lines <- s.Text()
		}
	}()
	var authURL string
	var out []string
	timeout := time.After(60 * time.Second)
	for authURL == "" {
		select {
		case l, ok := <-lines:
			if !ok {
				t.Fatalf("auth login ended before an authorization URL: %v\n%s\n%s", cmd.Wait(), strings.Join(out, "\n"), stderr.String())
			}
			out = append(out, l)
			if strings.HasPrefix(l, "http") {
				authURL = strings.TrimSpace(l)
			}
		case <-timeout:
			_ = cmd.Process.Kill()
			_ = cmd.Wait() // then stderr is whole and no longer written
			t.Fatalf("no authorization URL within 60 s:\n%s\n%s", strings.Join(out, "\n"), stderr.String())
		}
	}
	u, err := url.Parse(authURL)
	if err != nil {
		t.Fatal(err)
	}
	q := u.Query()
	redirect, _ := url.Parse(q.Get("redirect_uri"))
	if redirect == nil || redirect.Scheme != "http" || redirect.Hostname() != "127.0.0.1" || redirect.Port() == "" || redirect.Path != "/callback" ||
		q.Get("code_challenge_method") != "S256" || q.Get("code_challenge") == "" || q.Get("resource") != a.resource {
		t.Fatalf("authorization URL %s: want a loopback redirect_uri http://127.0.0.1:PORT/callback, PKCE S256 and resource %s", authURL, a.resource)
	}
	loginAs(t, p, authURL, "alice", "hosta")
	for l := range lines {
		out = append(out, l)
	}
	if err := cmd.Wait(); err != nil {
		t.Fatalf("auth login: %v\n%s\n%s", err, strings.Join(out, "\n"), stderr.String())
	}
	// stderr is read once the command has ended: its copying goroutine
	// writes it until Wait returns.
	if !strings.Contains(stderr.String(), "no host answers at http://127.0.0.1:1") {
		t.Errorf("auth login's stderr does not say no host answers: %q", stderr.String())
	}
	if last := out[len(out)-1]; !strings.HasPrefix(last, "logged in to hosta; the token is sealed in "+state) {
		t.Fatalf("auth login's last line %q", last)
	}

	b := startHostProcUntil(t, dir, "listening;", keyFlags...)
	testkit.Eventually(t, 30*time.Second, "B's add reaches A with the token of the login made without a host", func() bool {
		_, m := rpc(t, b.url, `{"jsonrpc":"2.0","method":"add","params":{"a":20,"b":22},"id":"1"}`)
		r, _ := m["result"].(map[string]any)
		return r != nil && r["result"] == 42.0
	})
	st, err := exec.Command(bin, "auth", "status", "--url", b.url).CombinedOutput()
	if err != nil || !strings.Contains(string(st), "hosta") || !strings.Contains(string(st), "yes") {
		t.Fatalf("auth status on B: %v\n%s", err, st)
	}
	waitAudit(t, a.audit, "alice")
	if strings.Contains(strings.Join(out, "\n")+stderr.String()+b.logs.String(), "eyJ") {
		t.Error("a JWT in the CLI's output or B's log")
	}
}

// TestAuthLoginWithoutAHostNeedsTheTokenKey: a login without a running
// host without --oauth-token-key is refused (exit 2) before it listens
// or reaches any server, saying why: the next run would not see a token
// kept in memory.
func TestAuthLoginWithoutAHostNeedsTheTokenKey(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "hosta.mcp.json"), []byte(`{"mcpServers":{"hosta":{"url":"http://127.0.0.1:1/mcp","oauth":{}}}}`), 0o600); err != nil {
		t.Fatal(err)
	}
	bin := testkit.Build(t, "./cmd/opentool-host")
	out, err := exec.Command(bin, "auth", "login", "hosta", "--local", "--no-browser", "--dir", dir).CombinedOutput()
	ee, ok := err.(*exec.ExitError)
	if !ok || ee.ExitCode() != 2 || !strings.Contains(string(out), "give --oauth-token-key NAME") || strings.Contains(string(out), "http://127.0.0.1:1") {
		t.Fatalf("auth login --local without --oauth-token-key: %v\n%s", err, out)
	}
}
