package discover

import (
	"path/filepath"
	"testing"

	"github.com/opentool-host/opentool-host/host/core"
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
	cfg := core.Config{}
	pol, err := ResolvePolicy(&cfg, "x", FileRef{Policy: PolicyRef{Path: filepath.Join("plugins", "x.policy.json"), Parsed: p}})
	if err != nil {
		t.Fatal(err)
	}
	for _, path := range append(pol.Spec.Read, append(pol.Spec.Write, pol.Dir)...) {
		if !filepath.IsAbs(path) {
			t.Errorf("relative path %q", path)
		}
	}
}
