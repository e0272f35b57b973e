// Command unalias rewrites the Go files of the repository so that no file
// names host/core's or host/supervise's names through package host: a
// selector .X (X one of the names in moved) becomes core.X or
// supervise.X, and in the files of package host itself a bare X that no
// declaration of the file resolves becomes the same. It adds the import
// of host/core or host/supervise where a file now needs it, drops the
// import of host where a file no longer names it, gofmts what it changed
// and deletes host/aliases.go. It reads the source only (no type check),
// so it runs on a tree that does not build because those names are gone.
//
// Usage: go run ./scripts/unalias [ROOT]
//
// ROOT is the repository root (default "."). It prints each file it
// rewrites and exits 1 when a file cannot be parsed or written, or when a
// file declares a name core or supervise that a rewritten name would
// resolve to instead.
package main

import (
	"bytes"
	"fmt"
	"go/ast"
	"go/format"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
)

const module = "github.com/opentool-host/opentool-host"

// moved maps each name package host re-exported to the package that
// defines it ("core" or "supervise") and its name there.
var moved = map[string][2]string{}

func init() {
	for _, n := range strings.Fields(`Error Kind Fault Config RestartPolicy State Event Caller CallRecord
		KindInvalidParams KindNotFound KindWrongKind KindTool KindExited KindFailed KindStopped
		KindTransport KindTimeout KindBusy KindCanceled KindResultRejected KindNeedsLogin
		ErrFunctionNotFound ErrWrongKind ErrPluginExited ErrPluginFailed ErrPluginStopped ErrTimeout
		ErrBusy ErrCanceled ErrResultRejected ErrInvalidParams ErrClosed
		StateStarting StateReady StateRestarting StateDraining StateStopped StateFailed StateDegraded
		EventFound EventReady EventReplaced EventRejected EventRestarting EventFailed EventHeld
		EventChanged EventRemoved EventCollision
		DefaultMaxResultMemory DefaultMaxResultBytes TransportEnv AsError WithCaller CallerFrom`) {
		moved[n] = [2]string{"core", n}
	}
	for _, n := range strings.Fields(`Plugin PluginStatus Conflict ReadinessReady ReadinessStarting
		ReadinessDraining PluginFileEnv Readiness`) {
		moved[n] = [2]string{"supervise", n}
	}
	moved["offer"] = [2]string{"supervise", "Offer"}
	var names []string
	for n := range moved {
		if n != "offer" {
			names = append(names, n)
		}
	}
	sort.Sort(sort.Reverse(sort.StringSlice(names)))
	prose = regexp.MustCompile(`(^|[^\w./-])host\.(` + strings.Join(names, "|") + `)\b`)
}

func main() {
	root := "."
	if len(os.Args) > 1 {
		root = os.Args[1]
	}
	failed := false
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		name := d.Name()
		if d.IsDir() {
			if p != root && (strings.HasPrefix(name, ".") || name == "node_modules" || name == "bin" || name == "testdata") {
				return filepath.SkipDir
			}
			return nil
		}
		if strings.HasSuffix(name, ".md") {
			b, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			if t := reword(string(b)); t != string(b) {
				fmt.Println(p)
				return os.WriteFile(p, []byte(t), 0o644)
			}
			return nil
		}
		if !strings.HasSuffix(name, ".go") {
			return nil
		}
		rel, _ := filepath.Rel(root, p)
		rel = filepath.ToSlash(rel)
		if rel == "host/aliases.go" {
			return nil
		}
		changed, err := rewrite(p, filepath.ToSlash(filepath.Dir(rel)) == "host")
		if err != nil {
			fmt.Fprintf(os.Stderr, "%s: %v\n", rel, err)
			failed = true
		} else if changed {
			fmt.Println(rel)
		}
		return nil
	})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	if err := os.Remove(filepath.Join(root, "host", "aliases.go")); err != nil && !os.IsNotExist(err) {
		fmt.Fprintln(os.Stderr, err)
		failed = true
	}
	if failed {
		os.Exit(1)
	}
}

// rewrite rewrites the file at path; inHost says it lies in the host
// folder, where files of package host name the moved names bare.
func rewrite(path string, inHost bool) (bool, error) {
	src, err := os.ReadFile(path)
	if err != nil {
		return false, err
	}
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, path, src, parser.ParseComments)
	if err != nil {
		return false, err
	}
	local := map[string]string{} // import path -> name in this file
	for _, is := range f.Imports {
		ip := strings.Trim(is.Path.Value, `"`)
		n := ip[strings.LastIndex(ip, "/")+1:]
		if is.Name != nil {
			n = is.Name.Name
		}
		local[ip] = n
	}
	hostName, hasHost := local[module+"/host"]
	bare := inHost && f.Name.Name == "host"

	pkgName := func(pkg string) string {
		if n, ok := local[module+"/host/"+pkg]; ok {
			return n
		}
		return pkg
	}
	var edits []edit
	need := map[string]bool{}
	hostLeft := false
	if hasHost {
		ast.Inspect(f, func(n ast.Node) bool {
			sel, ok := n.(*ast.SelectorExpr)
			if !ok {
				return true
			}
			x, ok := sel.X.(*ast.Ident)
			if !ok || x.Name != hostName || x.Obj != nil {
				return true
			}
			m, ok := moved[sel.Sel.Name]
			if !ok || sel.Sel.Name == "offer" {
				hostLeft = true
				return true
			}
			edits = append(edits, edit{fset.Position(sel.Pos()).Offset, fset.Position(sel.End()).Offset, pkgName(m[0]) + "." + m[1]})
			need[m[0]] = true
			return false
		})
	}
	if bare {
		for _, id := range f.Unresolved {
			m, ok := moved[id.Name]
			if !ok {
				continue
			}
			edits = append(edits, edit{fset.Position(id.Pos()).Offset, fset.Position(id.End()).Offset, pkgName(m[0]) + "." + m[1]})
			need[m[0]] = true
		}
	}
	textEdits := proseEdits(f, fset, src)
	if len(edits) == 0 && len(textEdits) == 0 {
		return false, nil
	}
	// A name core or supervise declared in a function would capture the
	// rewritten selectors after it in that function.
	for pkg := range need {
		if at := captured(f, fset, pkgName(pkg), edits); at != "" {
			return false, fmt.Errorf("%s declares %q, which the rewritten %s names after it would resolve to", at, pkgName(pkg), pkg)
		}
	}
	edits = append(edits, textEdits...)
	sort.Slice(edits, func(i, j int) bool { return edits[i].from > edits[j].from })
	out := append([]byte(nil), src...)
	for _, e := range edits {
		out = append(out[:e.from:e.from], append([]byte(e.text), out[e.to:]...)...)
	}
	out, err = fixImports(out, hasHost && !hostLeft, need, local)
	if err != nil {
		return false, err
	}
	res, err := format.Source(out)
	if err != nil {
		return false, fmt.Errorf("after rewriting: %v", err)
	}
	if bytes.Equal(res, src) {
		return false, nil
	}
	return true, os.WriteFile(path, res, 0o644)
}

// captured returns the position of a declaration of name inside a
// function of f before one of the edits in that function, or "".
func captured(f *ast.File, fset *token.FileSet, name string, edits []edit) string {
	var at string
	var funcs []ast.Node
	ast.Inspect(f, func(n ast.Node) bool {
		if at != "" {
			return false
		}
		switch n := n.(type) {
		case nil:
			return true
		case *ast.FuncDecl, *ast.FuncLit:
			funcs = append(funcs, n)
		case *ast.Ident:
			if n.Name != name || n.Obj == nil || n.Obj.Decl == nil {
				return true
			}
			decl := fset.Position(n.Pos()).Offset
			for _, fn := range funcs {
				from, to := fset.Position(fn.Pos()).Offset, fset.Position(fn.End()).Offset
				if decl < from || decl >= to {
					continue
				}
				for _, e := range edits {
					if e.from > decl && e.from < to {
						at = fset.Position(n.Pos()).String()
					}
				}
			}
		}
		return true
	})
	return at
}

// prose matches .X in text, X a moved name.
var prose *regexp.Regexp

// reword returns text with each .X of prose as core.X or supervise.X.
func reword(text string) string {
	var out strings.Builder
	last := 0
	for _, m := range prose.FindAllStringSubmatchIndex(text, -1) {
		to := moved[text[m[4]:m[5]]]
		out.WriteString(text[last:m[3]])
		out.WriteString(to[0] + "." + to[1])
		last = m[1]
	}
	out.WriteString(text[last:])
	return out.String()
}

// proseEdits rewords the comments and string literals of f.
func proseEdits(f *ast.File, fset *token.FileSet, src []byte) []edit {
	var edits []edit
	add := func(from, to token.Pos) {
		a, b := fset.Position(from).Offset, fset.Position(to).Offset
		if t := reword(string(src[a:b])); t != string(src[a:b]) {
			edits = append(edits, edit{a, b, t})
		}
	}
	for _, cg := range f.Comments {
		for _, c := range cg.List {
			add(c.Pos(), c.End())
		}
	}
	ast.Inspect(f, func(n ast.Node) bool {
		if lit, ok := n.(*ast.BasicLit); ok && lit.Kind == token.STRING {
			add(lit.Pos(), lit.End())
		}
		return true
	})
	return edits
}

// edit replaces src[from:to] with text.
type edit struct {
	from, to int
	text     string
}

var hostImport = regexp.MustCompile(`(?m)^(\t+)(?:\w+ )?"` + regexp.QuoteMeta(module) + `/host"\n`)
var anyModuleImport = regexp.MustCompile(`(?m)^(\t+)(?:\w+ )?"` + regexp.QuoteMeta(module) + `/[^"]*"\n`)
var importBlock = regexp.MustCompile(`(?m)^import \(\n`)

// fixImports adds the imports of the packages in need not yet in local,
// beside the file's import of host (dropping that line when dropHost) or
// its first import of this module, and leaves the sorting to gofmt.
func fixImports(src []byte, dropHost bool, need map[string]bool, local map[string]string) ([]byte, error) {
	var add []string
	for _, pkg := range []string{"core", "supervise"} {
		if _, ok := local[module+"/host/"+pkg]; need[pkg] && !ok {
			add = append(add, `"`+module+`/host/`+pkg+`"`)
		}
	}
	if loc := hostImport.FindSubmatchIndex(src); loc != nil {
		indent := string(src[loc[2]:loc[3]])
		lines := ""
		for _, a := range add {
			lines += indent + a + "\n"
		}
		if !dropHost {
			lines = string(src[loc[0]:loc[1]]) + lines
		}
		return append(append(append([]byte(nil), src[:loc[0]]...), lines...), src[loc[1]:]...), nil
	}
	if bytes.Contains(src, []byte(`import "`+module+`/host"`)) {
		return nil, fmt.Errorf("a lone import of host: make it an import block first")
	}
	if len(add) == 0 {
		return src, nil
	}
	lines := ""
	for _, a := range add {
		lines += "\t" + a + "\n"
	}
	if loc := anyModuleImport.FindIndex(src); loc != nil {
		return append(append(append([]byte(nil), src[:loc[1]]...), lines...), src[loc[1]:]...), nil
	}
	if loc := importBlock.FindIndex(src); loc != nil {
		// No import of this module yet: a group of its own at the end.
		end := bytes.Index(src[loc[1]:], []byte("\n)\n"))
		if end < 0 {
			return nil, fmt.Errorf("cannot place the imports")
		}
		at := loc[1] + end + 1
		return append(append(append([]byte(nil), src[:at]...), append([]byte("\n"), lines...)...), src[at:]...), nil
	}
	if !bytes.Contains(src, []byte("\nimport")) {
		// No import at all: a block after the package clause.
		loc := regexp.MustCompile(`(?m)^package \w+\n`).FindIndex(src)
		if loc == nil {
			return nil, fmt.Errorf("no package clause")
		}
		decl := "\nimport (\n" + lines + ")\n"
		if len(add) == 1 {
			decl = "\nimport " + add[0] + "\n"
		}
		return append(append(append([]byte(nil), src[:loc[1]]...), decl...), src[loc[1]:]...), nil
	}
	return nil, fmt.Errorf("no import block to add %v to", add)
}
