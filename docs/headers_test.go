package docs_test

import (
	"go/ast"
	"go/token"
	"net/http"
	"strconv"
	"testing"
)

// TestHeaderKeysCanonical holds that every header name given as a string
// literal to httpguard.Header (Header inside httpguard), which reads the
// map without canonicalizing the key as http.Header.Get does, is in
// canonical form: a name that is not ("MCP-Protocol-Version") would read
// "" whatever the client sent. It fails on such a call in non-test code.
func TestHeaderKeysCanonical(t *testing.T) {
	calls := 0
	eachGoFile(t, func(fset *token.FileSet, rel string, f *ast.File) {
		inGuard := f.Name.Name == "httpguard"
		ast.Inspect(f, func(n ast.Node) bool {
			c, ok := n.(*ast.CallExpr)
			if !ok || len(c.Args) != 2 || !isHeaderFunc(c.Fun, inGuard) {
				return true
			}
			lit, ok := c.Args[1].(*ast.BasicLit)
			if !ok || lit.Kind != token.STRING {
				return true
			}
			calls++
			if key, _ := strconv.Unquote(lit.Value); key != http.CanonicalHeaderKey(key) {
				t.Errorf("%s: httpguard.Header(..., %s): not canonical, reads nothing; write %q", fset.Position(lit.Pos()), lit.Value, http.CanonicalHeaderKey(key))
			}
			return true
		})
	})
	if calls == 0 {
		t.Fatal("no httpguard.Header call with a literal key found: the check reads nothing")
	}
}

// isHeaderFunc reports whether fun names httpguard.Header (Header within
// the package itself).
func isHeaderFunc(fun ast.Expr, inGuard bool) bool {
	switch x := fun.(type) {
	case *ast.SelectorExpr:
		id, ok := x.X.(*ast.Ident)
		return ok && id.Name == "httpguard" && x.Sel.Name == "Header"
	case *ast.Ident:
		return inGuard && x.Name == "Header"
	}
	return false
}
