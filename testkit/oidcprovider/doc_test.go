package oidcprovider_test

import (
	"encoding/json"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/opentool-host/opentool-host/testkit"
	"github.com/opentool-host/opentool-host/testkit/oidcprovider"
)

// docExample returns the sh block of docs/security.md's "Example:
// oidc-provider", its continued lines joined.
func docExample(t *testing.T) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(testkit.RepoRoot(t), "docs", "security.md"))
	if err != nil {
		t.Fatal(err)
	}
	_, sec, ok := strings.Cut(string(b), "### Example: oidc-provider\n")
	if !ok {
		t.Fatal(`docs/security.md has no "### Example: oidc-provider"`)
	}
	_, block, ok := strings.Cut(sec, "```sh\n")
	if block, _, _ = strings.Cut(block, "```"); !ok || block == "" {
		t.Fatal("the oidc-provider example has no sh block")
	}
	return strings.ReplaceAll(block, "\\\n", " ")
}

// TestDocExample: the commands of docs/security.md's oidc-provider example
// work as written: its make targets exist, provider.mjs is where it says,
// every flag it gives `opentool-host run` is one (run --help), and its
// curl gets a token from a running provider for the resource it names.
func TestDocExample(t *testing.T) {
	doc := docExample(t)
	root := testkit.RepoRoot(t)
	makefile, err := os.ReadFile(filepath.Join(root, "Makefile"))
	if err != nil {
		t.Fatal(err)
	}
	var curl []string
	for _, line := range strings.Split(doc, "\n") {
		line, _, _ = strings.Cut(line, "#")
		f := strings.Fields(line)
		if len(f) == 0 {
			continue
		}
		switch f[0] {
		case "make":
			for _, target := range f[1:] {
				if !regexp.MustCompile(`(?m)^` + regexp.QuoteMeta(target) + `:`).Match(makefile) {
					t.Errorf("make %s: no such target in the Makefile", target)
				}
			}
		case "node":
			if _, err := os.Stat(filepath.Join(root, f[1])); err != nil {
				t.Errorf("node %s: %v", f[1], err)
			}
		case "./bin/opentool-host":
			help, err := exec.Command(testkit.Build(t, "./cmd/opentool-host"), f[1], "--help").CombinedOutput()
			if err != nil {
				t.Fatalf("%s --help: %v\n%s", f[1], err, help)
			}
			for _, a := range f[2:] {
				if strings.HasPrefix(a, "--") && !strings.Contains(string(help), a+" ") {
					t.Errorf("opentool-host %s: %s is not among its flags", f[1], a)
				}
			}
		case "curl":
			curl = f[1:]
		default:
			t.Errorf("the example runs %q, which this test does not check", f[0])
		}
	}
	if curl == nil {
		t.Fatal("the example gets no token (no curl)")
	}
	p := oidcprovider.Start(t)
	form := url.Values{}
	var user, endpoint string
	for i := 0; i < len(curl); i++ {
		switch curl[i] {
		case "-s":
		case "-u":
			i++
			user = curl[i]
		case "-d":
			i++
			k, v, _ := strings.Cut(curl[i], "=")
			form.Add(k, v)
		default:
			endpoint = strings.Replace(curl[i], "http://127.0.0.1:PORT", p.Issuer, 1)
		}
	}
	req, err := http.NewRequest(http.MethodPost, endpoint, strings.NewReader(form.Encode()))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	id, secret, _ := strings.Cut(user, ":")
	req.SetBasicAuth(id, secret)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var tok struct {
		AccessToken string `json:"access_token"`
		Scope       string `json:"scope"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&tok); err != nil || resp.StatusCode != http.StatusOK || strings.Count(tok.AccessToken, ".") != 2 || tok.Scope != "calc" {
		t.Errorf("the example's curl: %d %v %+v, want a JWT with scope calc", resp.StatusCode, err, tok)
	}
}
