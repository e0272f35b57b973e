package supervise

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/opentool-host/opentool-host/process/sandbox"
)

// TestSandboxHint: a confined plugin's denied path, as Node, Python, Go
// and the shell report it, is named with what was denied (read, write,
// create) and the flag or policy member that allows it; a path the host
// cannot read either is the file's own permissions; an unconfined
// plugin gets no hint.
func TestSandboxHint(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "f.txt")
	if err := os.WriteFile(file, []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	confined := sandbox.Spec{Confine: true}
	readable := sandbox.Spec{Confine: true, Read: []string{dir}}
	for _, c := range []struct {
		name   string
		spec   sandbox.Spec
		host   bool
		policy string
		line   string
		want   string
	}{
		{"node read", confined, true, "", "Error: EACCES: permission denied, open '" + file + "'", "the sandbox denied it reading " + file + ": allow it with --sandbox-read " + file + " on the host"},
		{"python read, policy", confined, true, "/p/x.policy.json", "PermissionError: [Errno 13] Permission denied: '" + file + "'", "--sandbox-read " + file + " on the host and " + file + " in sandbox.read of x.policy.json"},
		{"go read, policy only", confined, false, "/p/x.policy.json", "open " + file + ": permission denied", "allow it with " + file + " in sandbox.read of x.policy.json"},
		{"shell write", readable, true, "", "sh: 1: cannot create " + file + ": Permission denied", "the sandbox denied it writing " + file + " (it may only read it): allow it with --sandbox-write " + dir + " on the host and a policy file"},
		{"node create", confined, true, "", "EACCES: permission denied, mkdir '" + filepath.Join(dir, "cache") + "'", "the sandbox denied it creating " + filepath.Join(dir, "cache") + ": allow it with --sandbox-write " + dir},
		{"no path", readable, true, "", "ModuleNotFoundError: No module named 'x'", "it ran in the sandbox, which lets it read only the system folders and " + dir},
	} {
		if got := sandboxHint(c.spec, c.host, c.policy, []string{"[DEBUG] sandbox: Landlock ABI 7", c.line}); !strings.Contains(got, c.want) {
			t.Errorf("%s: %q lacks %q", c.name, got, c.want)
		}
	}
	if got := sandboxHint(sandbox.Spec{}, false, "", []string{"open " + file + ": permission denied"}); got != "" {
		t.Errorf("unconfined: %q", got)
	}
	if os.Geteuid() != 0 { // root reads a mode-0 file
		locked := filepath.Join(dir, "locked")
		if err := os.WriteFile(locked, nil, 0); err != nil {
			t.Fatal(err)
		}
		if got := sandboxHint(confined, true, "", []string{"open " + locked + ": permission denied"}); !strings.Contains(got, "file's own permissions") {
			t.Errorf("mode 0: %q", got)
		}
	}
}
