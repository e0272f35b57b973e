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

// TestClientSessionTravelsInTheExchange holds that a downstream MCP
// client's identity (internal/mcpsession's Session and Request) goes from
// the MCP front end to a declared MCP server in the host's Exchange
// (core.Exchange: Session, Sessionless) and in no context value of its
// own, nor is the Exchange itself a context value (the call path and a
// declared plugin in the host's process take it as a parameter): it
// fails on non-test Go code that reads a *mcpsession.Session,
// *mcpsession.Request or *core.Exchange from a context value
// (ctx.Value(k).(*T)), and on
// internal/mcpsession putting anything on a context or reading it.
func TestClientSessionTravelsInTheExchange(t *testing.T) {
	eachGoFile(t, func(fset *token.FileSet, rel string, f *ast.File) {
		inSession := filepath.Dir(rel) == "internal/mcpsession"
		ast.Inspect(f, func(n ast.Node) bool {
			switch n := n.(type) {
			case *ast.TypeAssertExpr:
				if isValueCall(n.X) && isSessionType(n.Type, inSession) {
					t.Errorf("%s: an MCP client's session read from a context value; take it from the call's core.Exchange", fset.Position(n.Pos()))
				}
				if isValueCall(n.X) && isExchangeType(n.Type) {
					t.Errorf("%s: a call's Exchange read from a context value; it is a parameter of the call (host.Host.CallResult, StreamCall, Request; supervise.Direct)", fset.Position(n.Pos()))
				}
			case *ast.SelectorExpr:
				if inSession && (n.Sel.Name == "WithValue" || n.Sel.Name == "Value") {
					t.Errorf("%s: internal/mcpsession uses a context value (%s); the session travels in core.Exchange", fset.Position(n.Pos()), n.Sel.Name)
				}
			}
			return true
		})
	})
}

// eachGoFile calls fn with every non-test Go file of the module (rel: its
// path from the root, slashed), parsed; bin, testdata, node_modules and
// dot folders left out.
func eachGoFile(t *testing.T, fn func(fset *token.FileSet, rel string, f *ast.File)) {
	t.Helper()
	root := testkit.RepoRoot(t)
	fset := token.NewFileSet()
	err := filepath.WalkDir(root, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, p)
		rel = filepath.ToSlash(rel)
		if d.IsDir() && (d.Name() == "node_modules" || d.Name() == "testdata" || d.Name() == "bin" || strings.HasPrefix(d.Name(), ".") && rel != ".") {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(p, ".go") || strings.HasSuffix(p, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(fset, p, nil, parser.SkipObjectResolution)
		if err != nil {
			return err
		}
		fn(fset, rel, f)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// isValueCall reports whether e is a call of a method named Value (a
// context's).
func isValueCall(e ast.Expr) bool {
	c, ok := e.(*ast.CallExpr)
	if !ok {
		return false
	}
	s, ok := c.Fun.(*ast.SelectorExpr)
	return ok && s.Sel.Name == "Value"
}

// isExchangeType reports whether e is *core.Exchange (or *Exchange, as
// the package that declares it names it).
func isExchangeType(e ast.Expr) bool {
	star, ok := e.(*ast.StarExpr)
	if !ok {
		return false
	}
	switch x := star.X.(type) {
	case *ast.SelectorExpr:
		return x.Sel.Name == "Exchange"
	case *ast.Ident:
		return x.Name == "Exchange"
	}
	return false
}

// isSessionType reports whether e is *mcpsession.Session or
// *mcpsession.Request (*Session, *Request inside the package itself).
func isSessionType(e ast.Expr, inSession bool) bool {
	star, ok := e.(*ast.StarExpr)
	if !ok {
		return false
	}
	var name string
	switch x := star.X.(type) {
	case *ast.SelectorExpr:
		if id, ok := x.X.(*ast.Ident); !ok || id.Name != "mcpsession" {
			return false
		}
		name = x.Sel.Name
	case *ast.Ident:
		if !inSession {
			return false
		}
		name = x.Name
	default:
		return false
	}
	return name == "Session" || name == "Request"
}
