package docs_test

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/opentool-host/opentool-host/testkit"
)

// sdkReadmes are the SDK READMEs whose examples TestSDKReadmeExamples
// checks: the page, relative to the repository, and the runtime its plugin
// needs on PATH.
var sdkReadmes = []struct{ page, runtime string }{
	{"pluginsdk/python/README.md", "python3"},
	{"pluginsdk/node/README.md", "node"},
}

// takenNames are function names a README's plugin must not use: the
// names the shipped examples serve (notes' repeat, the files plugin's, the
// example plugins' before their policy prefix) and those of popular MCP
// servers (filesystem, fetch, git, memory, everything), which a user adds
// beside it. A plugin copied from a README should be served under its
// own names, not as PLUGIN__NAME.
var takenNames = map[string]bool{
	"echo": true, "ticks": true, "picture": true, "add": true, "search": true, "fetch": true,
	"read_file": true, "read_text_file": true, "write_file": true, "edit_file": true,
	"list_directory": true, "create_directory": true, "move_file": true, "search_files": true,
	"get_file_info": true, "directory_tree": true, "read_multiple_files": true,
	"git_status": true, "git_diff": true, "git_log": true, "create_entities": true, "read_graph": true,
	"add_note": true, "list_notes": true, "get_note": true, "repeat": true, "list_dir": true, "read_text": true, "search_text": true,
}

// TestSDKReadmeExamples: every example of the SDK READMEs runs
// somewhere. The one fenced block of each is its whole plugin (the
// cmd/opentool-host tests TestTutorialPluginsServedWhileRunning and
// TestMissingGrpcSaysWhatToInstall serve and call it); a block of another
// kind fails here until a test runs it. The plugin, saved as the page
// says, prints its document with `./opentool-plugin-NAME --document`, and
// none of its functions takes a name of takenNames or of the other
// README's plugin. Each `go test -run
// 'A|B' ./PKG/` the page gives names tests of PKG (every alternative
// matches one), `python3 -m unittest discover -s tests` and `node --test
// test/` have tests to find.
func TestSDKReadmeExamples(t *testing.T) {
	root := testkit.RepoRoot(t)
	seen := map[string]string{} // function → the page whose plugin has it
	goTest := regexp.MustCompile("`go test -race -run '?([^' ]+)'? (\\./[^`]*)`")
	for _, r := range sdkReadmes {
		t.Run(filepath.Base(filepath.Dir(r.page)), func(t *testing.T) {
			md, err := os.ReadFile(filepath.Join(root, r.page))
			if err != nil {
				t.Fatal(err)
			}
			var plugin string
			for _, b := range blocks(string(md)) {
				if !strings.HasPrefix(b.text, "#!") || plugin != "" {
					t.Errorf("%s:%d: a ```%s block no test runs: make it the page's plugin, or run it in a test", r.page, b.line, b.lang)
					continue
				}
				plugin = b.text
			}
			if plugin == "" {
				t.Fatalf("%s shows no plugin", r.page)
			}
			for _, fn := range readmeFunctions(t, root, r.runtime, plugin) {
				if other, ok := seen[fn]; ok {
					t.Errorf("%s's plugin and %s's both name a function %s: a user who copies both gets one as PLUGIN__%s", r.page, other, fn, fn)
				}
				seen[fn] = r.page
			}
			for _, m := range goTest.FindAllStringSubmatch(string(md), -1) {
				checkRunNamesTests(t, root, m[1], m[2])
			}
			if strings.Contains(string(md), "`python3 -m unittest discover -s tests`") {
				if f, _ := filepath.Glob(filepath.Join(root, "pluginsdk", "python", "tests", "test_*.py")); len(f) == 0 {
					t.Error("python3 -m unittest discover -s tests: no tests/test_*.py")
				}
			}
			if strings.Contains(string(md), "`node --test test/`") {
				if f, _ := filepath.Glob(filepath.Join(root, "pluginsdk", "node", "test", "*.js")); len(f) == 0 {
					t.Error("node --test test/: no test/*.js")
				}
			}
		})
	}
}

// readmeFunctions saves plugin as ROOT/plugins/opentool-plugin-readme
// beside a link ROOT/pluginsdk to the checkout's SDKs (make run's
// layout), runs it with --document, checks the document's function
// names against takenNames and returns them. It skips when runtime (or
// its SDK's packages) is missing here.
func readmeFunctions(t *testing.T, repo, runtime, plugin string) []string {
	t.Helper()
	if _, err := exec.LookPath(runtime); err != nil {
		t.Skipf("no %s on PATH", runtime)
	}
	root := t.TempDir()
	if err := os.Symlink(filepath.Join(repo, "pluginsdk"), filepath.Join(root, "pluginsdk")); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(filepath.Join(root, "plugins"), 0o755); err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(root, "plugins", "opentool-plugin-readme")
	if err := os.WriteFile(file, []byte(plugin), 0o755); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(file, "--document").Output()
	if err != nil {
		var stderr []byte
		if ee, ok := err.(*exec.ExitError); ok {
			stderr = ee.Stderr
		}
		if strings.Contains(string(stderr), "No module named 'grpc'") || strings.Contains(string(stderr), "Cannot find module") {
			t.Skipf("the SDK's packages are not installed for %s: %s", runtime, stderr)
		}
		t.Fatalf("./opentool-plugin-readme --document: %v\n%s", err, stderr)
	}
	var doc struct{ Functions []struct{ Name string } }
	if err := json.Unmarshal(out, &doc); err != nil || len(doc.Functions) == 0 {
		t.Fatalf("--document printed no document with functions (%v):\n%s", err, out)
	}
	var names []string
	for _, f := range doc.Functions {
		if takenNames[f.Name] {
			t.Errorf("the page's plugin names a function %s, which a shipped example or a popular MCP server has: choose a name of its own", f.Name)
		}
		names = append(names, f.Name)
	}
	return names
}

// checkRunNamesTests checks that every alternative of the -run pattern
// run matches a test function of the package at pkg (./cmd/opentool-host/).
func checkRunNamesTests(t *testing.T, root, run, pkg string) {
	t.Helper()
	files, _ := filepath.Glob(filepath.Join(root, pkg, "*_test.go"))
	var src strings.Builder
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		src.Write(b)
	}
	for _, alt := range strings.Split(run, "|") {
		if !regexp.MustCompile(`(?m)^func ` + regexp.QuoteMeta(alt) + `\w*\(t \*testing\.T\)`).MatchString(src.String()) {
			t.Errorf("go test -run %s %s: no test of %s matches %s", run, pkg, pkg, alt)
		}
	}
}
