package docs_test

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/opentool-host/opentool-host/testkit"
)

// aliasUsers are the folders besides the host package that may name
// host/aliases.go's re-exports as host.X; every other package imports
// host/core and host/supervise itself.
var aliasUsers = []string{"frontend/mcpapi", "declared/mcpadapter"}

// TestHostAliasesOnlyWhereLeft fails when Go code outside aliasUsers (and
// outside the host package) names one of host/aliases.go's re-exports as
// host.X instead of importing host/core or host/supervise.
func TestHostAliasesOnlyWhereLeft(t *testing.T) {
	root := testkit.RepoRoot(t)
	src, err := os.ReadFile(filepath.Join(root, "host", "aliases.go"))
	if err != nil {
		t.Skipf("host/aliases.go: %v (gone: nothing to hold)", err)
	}
	var names []string
	for _, m := range regexp.MustCompile(`(?m)^(?:type |func |\t)([A-Z]\w*)\b.*(?:core|supervise)\.`).FindAllStringSubmatch(string(src), -1) {
		names = append(names, m[1])
	}
	if len(names) == 0 {
		t.Fatal("no alias read from host/aliases.go")
	}
	use := regexp.MustCompile(`(?:^|[^\w.])host\.(` + strings.Join(names, "|") + `)\b`)
	err = filepath.WalkDir(root, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, p)
		rel = filepath.ToSlash(rel)
		if d.IsDir() && (d.Name() == "node_modules" || d.Name() == "testdata" || strings.HasPrefix(d.Name(), ".") && rel != ".") {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(p, ".go") || filepath.Dir(rel) == "host" {
			return nil
		}
		for _, u := range aliasUsers {
			if strings.HasPrefix(rel, u+"/") {
				return nil
			}
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		if m := use.FindSubmatch(b); m != nil {
			t.Errorf("%s names host.%s: import host/core or host/supervise instead", rel, m[1])
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}
