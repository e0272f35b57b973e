package main_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/opentool-host/opentool-host/catalog"
	"github.com/opentool-host/opentool-host/internal/testutil"
)

// TestExamplesServeCleanly (issue 23): the plugins folder `make run`
// serves, laid out as in the checkout (plugins/, bin/mcp-notes,
// pluginsdk/), starts without one ERROR or WARN line, and every example's
// functions are served: the Python and Node examples under their policy
// prefixes (py_, node_) instead of refusing each other's names, their SDK
// found beside their own file (OPENTOOL_PLUGIN_FILE), nothing outside the
// checkout. A language whose runtime is missing here is left out, named.
func TestExamplesServeCleanly(t *testing.T) {
	repo := testutil.RepoRoot(t)
	root := t.TempDir()
	dir := filepath.Join(root, "plugins")
	if err := os.MkdirAll(filepath.Join(root, "bin"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(repo, "pluginsdk"), filepath.Join(root, "pluginsdk")); err != nil {
		t.Fatal(err)
	}
	testutil.CopyFile(t, testutil.Build(t, "./examples/mcp-notes"), filepath.Join(root, "bin", "mcp-notes"), 0o755)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"calculator", "files", "mock"} {
		testutil.InstallPlugin(t, dir, name, "./plugins/"+name)
	}
	want := map[string]string{"add": "calculator", "list_dir": "files", "count": "mock", "add_note": "notes", "word_count": "text"}
	files, _ := filepath.Glob(filepath.Join(repo, "plugins", "*.json"))
	for _, lp := range langPlugins {
		if why := lp.missing(t); why != "" {
			t.Logf("left out: %s", why)
			files = slicesDeleteFunc(files, func(f string) bool { return strings.HasPrefix(filepath.Base(f), lp.name+".") })
			continue
		}
		files = append(files, filepath.Join(repo, "plugins", "opentool-plugin-"+lp.name))
		prefix := map[string]string{"pyecho": "py_", "nodeecho": "node_"}[lp.name]
		want[prefix+"echo"] = lp.name
	}
	for _, f := range files {
		info, err := os.Stat(f)
		if err != nil {
			t.Fatal(err)
		}
		testutil.CopyFile(t, f, filepath.Join(dir, filepath.Base(f)), info.Mode().Perm())
	}
	hp := startHostProc(t, dir, "--log-level", "info")
	l, err := catalog.FetchListing(t.Context(), hp.url, "")
	if err != nil {
		t.Fatal(err)
	}
	served := map[string]string{}
	for _, f := range l.Functions {
		served[f.Function] = f.Plugin
	}
	for fn, plugin := range want {
		if served[fn] != plugin {
			t.Errorf("%s served by %q, want %q", fn, served[fn], plugin)
		}
	}
	for _, p := range l.Plugins {
		if p.State != "ready" {
			t.Errorf("plugin %s is %s: %s", p.Name, p.State, p.LastError)
		}
	}
	for _, line := range strings.Split(hp.logs.String(), "\n") {
		if strings.Contains(line, "[ERROR]") || strings.Contains(line, "[WARN]") {
			t.Errorf("log line: %s", line)
		}
	}
}

// slicesDeleteFunc is slices.DeleteFunc on a copy.
func slicesDeleteFunc(s []string, del func(string) bool) []string {
	var out []string
	for _, v := range s {
		if !del(v) {
			out = append(out, v)
		}
	}
	return out
}
