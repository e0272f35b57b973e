package docs_test

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/opentool-host/opentool-host/testkit"
)

// layered are the floors whose every package has its own row in
// architecture.md's layout (the other folders are described as a whole:
// bench, plugins, scripts, the test plugins).
var layered = []string{"cmd", "frontend", "declared", "host", "ops", "protocol", "process", "internal"}

// TestArchitectureListsEveryPackage holds docs/architecture.md's layout
// against the tree: every package of a layered floor has a row, and every
// row names a folder that exists.
func TestArchitectureListsEveryPackage(t *testing.T) {
	root := testkit.RepoRoot(t)
	b, err := os.ReadFile(filepath.Join(root, "docs", "architecture.md"))
	if err != nil {
		t.Fatal(err)
	}
	rows := map[string]bool{}
	for _, m := range regexp.MustCompile("(?m)^\\| `([^`]+/)` \\|").FindAllStringSubmatch(string(b), -1) {
		rows[strings.TrimSuffix(m[1], "/")] = true
	}
	for row := range rows {
		if fi, err := os.Stat(filepath.Join(root, row)); err != nil || !fi.IsDir() {
			t.Errorf("architecture.md lists %s/, which is not a folder", row)
		}
	}
	for _, top := range layered {
		for _, pkg := range goPackages(t, filepath.Join(root, top)) {
			rel, _ := filepath.Rel(root, pkg)
			if !rows[filepath.ToSlash(rel)] && !generated(rel) {
				t.Errorf("architecture.md's layout has no row for the package %s/", rel)
			}
		}
	}
}

// generated says whether dir holds generated code only (described with the
// package that generates it).
func generated(dir string) bool { return strings.HasSuffix(dir, "toolpb") }

// goPackages returns the folders under dir holding a non-test Go file.
func goPackages(t *testing.T, dir string) []string {
	t.Helper()
	seen := map[string]bool{}
	var out []string
	err := filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (d.Name() == "testdata" || d.Name() == "node_modules") {
			return filepath.SkipDir
		}
		if !d.IsDir() && strings.HasSuffix(p, ".go") && !strings.HasSuffix(p, "_test.go") && !seen[filepath.Dir(p)] {
			seen[filepath.Dir(p)] = true
			out = append(out, filepath.Dir(p))
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}
