package host

import (
	"path/filepath"
	"testing"

	"github.com/opentool-host/opentool-host/protocol/decl"
)

// A policy found through a relative --dir still gives the launcher
// absolute paths (Landlock takes only those).
func TestPolicyPathsAreAbsolute(t *testing.T) {
	t.Chdir(t.TempDir())
	p, err := decl.ParsePolicy([]byte(`{"sandbox": {"read": [".."], "write": ["out"]}}`))
	if err != nil {
		t.Fatal(err)
	}
	cfg := Config{}
	pol, err := resolvePolicy(&cfg, fileRef{policy: policyRef{path: filepath.Join("plugins", "x.policy.json"), p: p}})
	if err != nil {
		t.Fatal(err)
	}
	for _, path := range append(pol.spec.Read, append(pol.spec.Write, pol.dir)...) {
		if !filepath.IsAbs(path) {
			t.Errorf("relative path %q", path)
		}
	}
}
