package e2e_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/opentool-host/opentool-host/testkit"
)

// TestDropInsConfinedToThePluginsFolder (issue 30, finding 7): a
// declaration or policy that is a symbolic link leaving the plugins
// folder is refused without being read, and no fault quotes a byte of a
// file that is not a valid declaration: not a secret's first byte (a
// link to it), not a keys file's member names (a link to it), not the
// first byte of a malformed file in the folder itself. The other plugins
// serve.
func TestDropInsConfinedToThePluginsFolder(t *testing.T) {
	outside := t.TempDir()
	secret := filepath.Join(outside, "shadow")
	keys := filepath.Join(outside, "keys.json")
	writeTestFile(t, secret, "Qsecret-4e1d\n")
	writeTestFile(t, keys, `{"keys":[{"name":"admin-name-7c2b","key":"k","allow":["*"]}]}`)
	dir := t.TempDir()
	testkit.InstallPlugin(t, dir, "calculator", "./plugins/calculator")
	testkit.InstallPlugin(t, dir, "mock", "./plugins/mock")
	for link, target := range map[string]string{
		"z.tools.json": secret, "k.mcp.json": keys, "mock.policy.json": keys,
	} {
		if err := os.Symlink(target, filepath.Join(dir, link)); err != nil {
			t.Fatal(err)
		}
	}
	writeTestFile(t, filepath.Join(dir, "w.tools.json"), "Wbad-9f3a")
	// A link that stays inside the folder is read as the file it names.
	writeTestFile(t, filepath.Join(dir, "sub", "real.tools.json"), `{"functions":[{"name":"inner_env","description":"Prints its environment.","command":["env"]}]}`)
	if err := os.Symlink(filepath.Join("sub", "real.tools.json"), filepath.Join(dir, "inner.tools.json")); err != nil {
		t.Fatal(err)
	}

	stdout, stderr, code := runCLI(t, "list", "--dir", dir, "--state-dir", t.TempDir())
	out := stdout + stderr
	for _, leak := range []string{"Q", "secret-4e1d", "admin-name-7c2b", "'W'", "Wbad"} {
		if strings.Contains(out, leak) {
			t.Errorf("list quotes %q of a file that is not a valid declaration:\n%s", leak, out)
		}
	}
	for _, want := range []string{
		"declaration z.tools.json: a symbolic link leaving the plugins folder",
		"declaration k.mcp.json: a symbolic link leaving the plugins folder",
		"policy mock.policy.json: a symbolic link leaving the plugins folder",
		"declaration w.tools.json:1:1: invalid literal (a string or a member name needs double quotes)",
		"inner_env",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("list does not say %q (exit %d):\n%s", want, code, out)
		}
	}
	if !strings.Contains(stdout, "calculator  add") {
		t.Errorf("calculator not served beside the refused files:\n%s", out)
	}
}

// writeTestFile writes body to path, making its folder.
func writeTestFile(t *testing.T, path, body string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
}
