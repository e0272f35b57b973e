package pluginsdk_test

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/opentool-host/opentool-host/host"
	"github.com/opentool-host/opentool-host/host/core"
	"github.com/opentool-host/opentool-host/testkit"
)

// TestMinimalPluginOutsideTheRepository builds the minimal plugin of the
// package doc (as `go doc` prints it) in a module of its own, the way the
// doc says (a replace directive and go mod tidy), and calls it through a
// real host.
func TestMinimalPluginOutsideTheRepository(t *testing.T) {
	root := testkit.RepoRoot(t)
	docOut, err := exec.Command("go", "doc", filepath.Join(root, "pluginsdk")).Output()
	if err != nil {
		t.Fatalf("go doc: %v", err)
	}
	src := minimalPlugin(t, string(docOut))
	mod := t.TempDir()
	if err := os.WriteFile(filepath.Join(mod, "main.go"), []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	run := func(args ...string) {
		t.Helper()
		cmd := exec.Command("go", args...)
		cmd.Dir = mod
		// A module of its own: not the -modfile make gives this
		// repository's builds (the patched MCP SDK of the Makefile).
		cmd.Env = append(os.Environ(), "GOFLAGS="+withoutModfile(os.Getenv("GOFLAGS")))
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("go %s: %v\n%s", strings.Join(args, " "), err, out)
		}
	}
	run("mod", "init", "example.com/hello")
	run("mod", "edit", "-replace", "github.com/opentool-host/opentool-host="+root)
	run("mod", "tidy")
	plugins := t.TempDir()
	run("build", "-o", filepath.Join(plugins, "opentool-plugin-hello"), ".")

	h, err := host.New(core.Config{Dir: plugins, StateDir: t.TempDir(), Logger: testkit.Logger(t)})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := h.Start(ctx); err != nil {
		t.Fatal(err)
	}
	defer h.Close(ctx)
	res, err := h.Call(ctx, "hello", []byte(`{"name":"Ada"}`))
	if err != nil || string(res) != `{"greeting":"Hello, Ada"}` {
		t.Fatalf("hello = %s, %v", res, err)
	}
}

// minimalPlugin cuts the program out of the package doc: from "package
// main" to the line before "Build it", without go doc's indentation.
func minimalPlugin(t *testing.T, doc string) string {
	t.Helper()
	start := strings.Index(doc, "package main")
	end := strings.Index(doc, "Build it")
	if start < 0 || end < start {
		t.Fatalf("no minimal plugin in the package doc:\n%s", doc)
	}
	var b strings.Builder
	for _, line := range strings.Split(doc[start:end], "\n") {
		b.WriteString(strings.TrimPrefix(line, "    ") + "\n")
	}
	return b.String()
}

// withoutModfile is the go flags of flags but -modfile.
func withoutModfile(flags string) string {
	var out []string
	for _, f := range strings.Fields(flags) {
		if !strings.HasPrefix(f, "-modfile=") {
			out = append(out, f)
		}
	}
	return strings.Join(out, " ")
}
