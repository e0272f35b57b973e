package docs_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"

	"github.com/opentool-host/opentool-host/testkit"
)

// besideTheHouse is the heading of architecture.md's last section: folders
// outside the floors (docs, deployment, scripts), which no floor ranks.
const besideTheHouse = "Beside the house"

// floorHeading is a floor's bold heading in architecture.md's layout; its
// name is the text up to the first colon or full stop.
var floorHeading = regexp.MustCompile(`^\*\*([^:.*]+)`)

// floorRow is a row of a floor's table: the folder it describes.
var floorRow = regexp.MustCompile("^\\| `([^`]+)/` \\|")

// floorOf maps a folder (relative to the repository root, slashes) to its
// floor's rank in architecture.md, 0 the top; beside is the set of folders
// outside the floors.
type floorOf struct {
	rank   map[string]int
	name   []string
	beside map[string]bool
}

// readFloors reads the floors of architecture.md's "Layout, by floor", top
// to bottom: each bold heading opens a floor, each table row under it names
// a folder on that floor.
func readFloors(t *testing.T, doc []byte) floorOf {
	t.Helper()
	f := floorOf{rank: map[string]int{}, beside: map[string]bool{}}
	outside := false
	for _, line := range strings.Split(string(doc), "\n") {
		if m := floorHeading.FindStringSubmatch(line); m != nil {
			outside = strings.TrimSpace(m[1]) == besideTheHouse
			if !outside {
				f.name = append(f.name, strings.TrimSpace(m[1]))
			}
			continue
		}
		m := floorRow.FindStringSubmatch(line)
		if m == nil || (len(f.name) == 0 && !outside) {
			continue
		}
		if outside {
			f.beside[m[1]] = true
		} else {
			f.rank[m[1]] = len(f.name) - 1
		}
	}
	if len(f.name) < 2 {
		t.Fatalf("architecture.md: %d floors read from its layout, want several", len(f.name))
	}
	return f
}

// of returns the floor of the package folder rel: that of the longest row
// that is rel or a parent of it; ok is false for a folder beside the house
// or one no row covers.
func (f floorOf) of(rel string) (rank int, ok bool, beside bool) {
	for dir := rel; dir != "." && dir != "/" && dir != ""; dir = filepath.ToSlash(filepath.Dir(dir)) {
		if r, found := f.rank[dir]; found {
			return r, true, false
		}
		if f.beside[dir] {
			return 0, false, true
		}
	}
	return 0, false, false
}

// upward checks imports (package folder → the project packages it
// imports) against the floors: it returns a fault for each import of a
// floor above and for each package no row covers, and how many pairs
// between ranked folders it checked.
func (f floorOf) upward(imports map[string][]string) (faults []string, pairs int) {
	for pkg, deps := range imports {
		from, ok, beside := f.of(pkg)
		if beside {
			continue
		}
		if !ok {
			faults = append(faults, fmt.Sprintf("%s/ is on no floor of architecture.md's layout", pkg))
			continue
		}
		for _, dep := range deps {
			to, ok, beside := f.of(dep)
			if beside || !ok {
				continue
			}
			pairs++
			if to < from {
				faults = append(faults, fmt.Sprintf("%s (floor %q) imports %s, a floor up (%q)", pkg, f.name[from], dep, f.name[to]))
			}
		}
	}
	sort.Strings(faults)
	return faults, pairs
}

// TestFloorCheckFindsAnUpwardImport runs the floor check over a layout of
// three floors, in architecture.md's form, and imports of which exactly
// one runs up a floor and one package is on no floor.
func TestFloorCheckFindsAnUpwardImport(t *testing.T) {
	doc := []byte("**Top: commands.**\n\n| path | what |\n|---|---|\n| `cmd/` | x |\n\n" +
		"**Middle: the host.**\n\n| `host/` | x |\n| `host/core/` | x |\n\n" +
		"**Bottom: leaves.**\n\n| `internal/` | x |\n\n**Beside the house.**\n\n| `scripts/` | x |\n")
	floors := readFloors(t, doc)
	faults, pairs := floors.upward(map[string][]string{
		"cmd/app":          {"host", "internal/version", "scripts/x"},
		"host/core":        {"internal/version"},
		"internal/version": {"host/core"},
		"scripts/x":        {"cmd/app"},
		"stray":            {"host"},
	})
	want := []string{
		`internal/version (floor "Bottom") imports host/core, a floor up ("Middle")`,
		"stray/ is on no floor of architecture.md's layout",
	}
	if pairs != 4 || strings.Join(faults, "\n") != strings.Join(want, "\n") {
		t.Fatalf("faults %q over %d pairs; want %q over 4", faults, pairs, want)
	}
}

// listedPackage is what `go list -json` says of one package.
type listedPackage struct {
	ImportPath string
	Imports    []string
}

// projectImports runs `go list` over every non-test package of the module at
// root and returns each package (relative to the module) with the project
// packages it imports.
func projectImports(t *testing.T, root string) map[string][]string {
	t.Helper()
	mod, err := exec.Command("go", "list", "-m").Output()
	if err != nil {
		t.Fatalf("go list -m: %v", err)
	}
	module := strings.TrimSpace(string(mod)) + "/"
	cmd := exec.Command("go", "list", "-json=ImportPath,Imports", "./...")
	cmd.Dir = root
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list ./...: %v\n%s", err, stderr.String())
	}
	pkgs := map[string][]string{}
	dec := json.NewDecoder(bytes.NewReader(out))
	for {
		var p listedPackage
		if err := dec.Decode(&p); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			t.Fatalf("go list's output: %v", err)
		}
		rel, ok := strings.CutPrefix(p.ImportPath, module)
		if !ok {
			continue
		}
		var own []string
		for _, imp := range p.Imports {
			if dep, ok := strings.CutPrefix(imp, module); ok {
				own = append(own, dep)
			}
		}
		pkgs[rel] = own
	}
	return pkgs
}

// TestNoImportRunsUpAFloor holds the floor rule of architecture.md ("each
// floor imports only the floors below it") against the code: every import
// of one project package by another, non-test code only, goes to the same
// floor or one below. The floors and their ranking are read from the
// layout's headings and tables, top to bottom; folders beside the house are
// not ranked. A package that no row covers fails too.
func TestNoImportRunsUpAFloor(t *testing.T) {
	root := testkit.RepoRoot(t)
	doc, err := os.ReadFile(filepath.Join(root, "docs", "architecture.md"))
	if err != nil {
		t.Fatal(err)
	}
	floors := readFloors(t, doc)
	faults, pairs := floors.upward(projectImports(t, root))
	for _, f := range faults {
		t.Error(f)
	}
	if pairs == 0 {
		t.Fatal("no import pair checked")
	}
	t.Logf("%d import pairs checked across %d floors", pairs, len(floors.name))
}
