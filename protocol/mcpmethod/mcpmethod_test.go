package mcpmethod_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/opentool-host/opentool-host/protocol/mcpmethod"
)

// sdkDir is the folder of the MCP Go SDK's mcp package this test binary
// is built with (the patched copy under GOFLAGS' -modfile, else the
// module cache's).
func sdkDir(t *testing.T) string {
	t.Helper()
	out, err := exec.Command("go", "list", "-f", "{{.Dir}}", "github.com/modelcontextprotocol/go-sdk/mcp").Output()
	if err != nil {
		t.Fatalf("go list the SDK's mcp package: %v", err)
	}
	return strings.TrimSpace(string(out))
}

// sdkMethods returns the SDK's method and notification names: the string
// constants named method* or notification* in its non-test files.
func sdkMethods(t *testing.T, dir string) map[string]string {
	t.Helper()
	fset := token.NewFileSet()
	files, _ := filepath.Glob(filepath.Join(dir, "*.go"))
	names := map[string]string{}
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		file, err := parser.ParseFile(fset, f, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range file.Decls {
			g, ok := d.(*ast.GenDecl)
			if !ok || g.Tok != token.CONST {
				continue
			}
			for _, s := range g.Specs {
				vs := s.(*ast.ValueSpec)
				for i, id := range vs.Names {
					if !strings.HasPrefix(id.Name, "method") && !strings.HasPrefix(id.Name, "notification") || i >= len(vs.Values) {
						continue
					}
					if lit, ok := vs.Values[i].(*ast.BasicLit); ok && lit.Kind == token.STRING {
						if v, _ := strconv.Unquote(lit.Value); v == strings.ToLower(v) && !strings.ContainsAny(v, " -") {
							names[v] = id.Name // a method's name, not a header's ("Mcp-Method")
						}
					}
				}
			}
		}
	}
	return names
}

// TestEverySDKMethodIsInTheTable fails when the SDK knows a method the
// table has no row for, relayed or listed as NotRelayed.
func TestEverySDKMethodIsInTheTable(t *testing.T) {
	names := sdkMethods(t, sdkDir(t))
	if len(names) < 20 {
		t.Fatalf("found only %d method constants in the SDK: %v", len(names), names)
	}
	for v, id := range names {
		if _, ok := mcpmethod.Lookup(v); !ok {
			t.Errorf("the SDK's %s (%q) is neither in the table nor listed as NotRelayed", id, v)
		}
	}
}

// TestRows checks each row's shape: a direction and route, a revision,
// params types that are pointers, no result for a notification, a key
// only for a Plugin route.
func TestRows(t *testing.T) {
	for _, m := range mcpmethod.All() {
		if m.Dir == 0 || m.Route == 0 || m.Revisions == 0 {
			t.Errorf("%s: direction %v, route %v, revisions %v", m.Name, m.Dir, m.Route, m.Revisions)
		}
		if m.Params != nil && m.Params.Kind().String() != "ptr" {
			t.Errorf("%s: params type %v is not a pointer", m.Name, m.Params)
		}
		if m.Dir.Notification() && m.Result != nil {
			t.Errorf("%s: a notification with a result type %v", m.Name, m.Result)
		}
		if (m.Key != mcpmethod.NoKey) != (m.Route == mcpmethod.Plugin) {
			t.Errorf("%s: key %v with route %v", m.Name, m.Key, m.Route)
		}
		if got, ok := mcpmethod.Lookup(m.Name); !ok || got.Name != m.Name {
			t.Errorf("Lookup(%q) = %v, %v", m.Name, got, ok)
		}
	}
	if _, ok := mcpmethod.Lookup("tools/nope"); ok {
		t.Error("Lookup of a name not in the table succeeded")
	}
}

// TestRevisions checks the lookups by revision against the spec's
// changelogs: elicitation from 2025-06-18, initialize gone in 2026-07-28,
// server/discover only there.
func TestRevisions(t *testing.T) {
	for _, c := range []struct {
		method, rev string
		want        bool
	}{
		{mcpmethod.ElicitationCreate, "2025-03-26", false},
		{mcpmethod.ElicitationCreate, "2025-06-18", true},
		{mcpmethod.Initialize, "2025-11-25", true},
		{mcpmethod.Initialize, "2026-07-28", false},
		{mcpmethod.Discover, "2026-07-28", true},
		{mcpmethod.Discover, "2025-11-25", false},
		{mcpmethod.ToolsCall, "2024-11-05", true},
		{mcpmethod.ToolsCall, "1999-01-01", false},
	} {
		m, _ := mcpmethod.Lookup(c.method)
		if got := m.In(c.rev); got != c.want {
			t.Errorf("%s in %s = %v, want %v", c.method, c.rev, got, c.want)
		}
	}
	if got := mcpmethod.FromR20241105.Names(); !slices.Equal(got, mcpmethod.AllRevisions()) {
		t.Errorf("every revision's names = %v", got)
	}
	if r, ok := mcpmethod.Lookup(mcpmethod.RootsList); !ok || r.NewResult() == nil || !mcpmethod.IsClientRequest(mcpmethod.RootsList) {
		t.Errorf("roots/list: %v %v", r, ok)
	}
}

// notTheHouse are the folders of tests, measurements and the SDK's
// patched copy: their hostile and raw MCP servers write messages by hand.
var notTheHouse = []string{"bin", "e2e", "testkit", "bench", "conformance", "examples", "webtest"}

// notMCP is the one file whose method-like literal is not MCP's: the
// status page's SSE keep-alive comment "ping".
const notMCP = "frontend/statusui/events.go"

// TestNamesOnlyInTheTable fails on a string literal equal to a method's
// name in a non-test Go file of the repository outside this package:
// such a name is written here and read from the table.
func TestNamesOnlyInTheTable(t *testing.T) {
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(root, "go.mod")); err != nil {
		t.Fatalf("repository root: %v", err)
	}
	names := map[string]bool{}
	for _, m := range mcpmethod.All() {
		names[m.Name] = true
	}
	fset := token.NewFileSet()
	err = filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, path)
		if d.IsDir() {
			switch {
			case rel == "protocol/mcpmethod", slices.Contains(notTheHouse, rel), d.Name() == "node_modules", d.Name() == "testdata", strings.HasPrefix(d.Name(), "."):
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(rel, ".go") || strings.HasSuffix(rel, "_test.go") || rel == notMCP {
			return nil
		}
		file, err := parser.ParseFile(fset, path, nil, 0)
		if err != nil {
			return err
		}
		ast.Inspect(file, func(n ast.Node) bool {
			if lit, ok := n.(*ast.BasicLit); ok && lit.Kind == token.STRING {
				if v, err := strconv.Unquote(lit.Value); err == nil && names[v] {
					t.Errorf("%s: %s written as a literal; name it mcpmethod's constant", fset.Position(lit.Pos()), lit.Value)
				}
			}
			return true
		})
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// TestName: Name gives the table's name of every method and allocates
// nothing; false for a name not in the table.
func TestName(t *testing.T) {
	for _, m := range mcpmethod.All() {
		if got, ok := mcpmethod.Name([]byte(m.Name)); !ok || got != m.Name {
			t.Errorf("Name(%q) = %q, %v", m.Name, got, ok)
		}
	}
	if got, ok := mcpmethod.Name([]byte("tools/calls")); ok || got != "" {
		t.Errorf("Name(tools/calls) = %q, %v", got, ok)
	}
	b := []byte(mcpmethod.ToolsCall)
	if n := testing.AllocsPerRun(100, func() { _, _ = mcpmethod.Name(b) }); n != 0 {
		t.Errorf("Name allocates %v times", n)
	}
}
