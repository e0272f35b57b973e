package docs_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/opentool-host/opentool-host/testkit"
)

// TestHostReExportsNothing fails when a non-test file of package host
// declares a type alias of a host/core or host/supervise type
// (type X = core.Y): the
// names of host/core and host/supervise are named there, by every caller
// (`go run ./scripts/unalias` rewrites callers that still name them
// through host).
func TestHostReExportsNothing(t *testing.T) {
	dir := filepath.Join(testkit.RepoRoot(t), "host")
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	files := 0
	for _, e := range entries {
		if !strings.HasSuffix(e.Name(), ".go") || strings.HasSuffix(e.Name(), "_test.go") {
			continue
		}
		fset := token.NewFileSet()
		f, err := parser.ParseFile(fset, filepath.Join(dir, e.Name()), nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		files++
		for _, d := range f.Decls {
			for _, ts := range typeSpecs(d) {
				if sel, ok := ts.Type.(*ast.SelectorExpr); ok && ts.Assign.IsValid() && isIdent(sel.X, "core", "supervise") {
					t.Errorf("%s: type %s is an alias: name the package that defines it", fset.Position(ts.Pos()), ts.Name.Name)
				}
			}
		}
	}
	if files == 0 {
		t.Fatal("no Go file read in host/")
	}
}

// typeSpecs returns the type specs of d, none when d declares no type.
func typeSpecs(d ast.Decl) []*ast.TypeSpec {
	g, ok := d.(*ast.GenDecl)
	if !ok || g.Tok != token.TYPE {
		return nil
	}
	var out []*ast.TypeSpec
	for _, s := range g.Specs {
		out = append(out, s.(*ast.TypeSpec))
	}
	return out
}

// isIdent reports whether e is an identifier named one of names.
func isIdent(e ast.Expr, names ...string) bool {
	id, ok := e.(*ast.Ident)
	if !ok {
		return false
	}
	for _, n := range names {
		if id.Name == n {
			return true
		}
	}
	return false
}
