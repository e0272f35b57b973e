package validate_test

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/opentool-host/opentool-host/ops/validate"
)

// write writes body to dir/name and returns its path.
func write(t *testing.T, dir, name, body string) string {
	t.Helper()
	path := filepath.Join(dir, name)
	if err := os.WriteFile(path, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// contains fails the test unless faults hold each of want.
func contains(t *testing.T, file string, faults []string, want ...string) {
	t.Helper()
	for _, w := range want {
		found := false
		for _, f := range faults {
			found = found || strings.Contains(f, w)
		}
		if !found {
			t.Errorf("%s: faults lack %q:\n%s", file, w, strings.Join(faults, "\n"))
		}
	}
}

func TestValidateDeclaration(t *testing.T) {
	dir := t.TempDir()
	good := write(t, dir, "good.mcp.json", `{"mcpServers":{"notes":{"command":"./mcp-notes"}}}`)
	if err := os.WriteFile(filepath.Join(dir, "mcp-notes"), []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	bad := write(t, dir, "bad.mcp.json", `{"mcpServers":{"notes":{"command":"x","args":["a",{}]}}}`)
	if faults := validate.File(good); faults != nil {
		t.Errorf("good.mcp.json: %q; want no fault", faults)
	}
	contains(t, bad, validate.File(bad), "$.mcpServers.notes.args[1]: must be a string")
	// A desktop client's config by its own name, as it is: every entry's
	// fault, none for what the host ignores.
	desktop := write(t, dir, "claude_desktop_config.json", `{"globalShortcut":"x","mcpServers":{
		"a.b":{"command":"sh","autoApprove":[]},
		"c":{"command":1},
		"d":{"url":"ftp://h"},"e":{"command":"x","args":[1],"disabled":true}}}`)
	want := []string{
		"3:8: $.mcpServers.c.command: must be a non-empty string\n\t\t\"c\":{\"command\":1},\n\t\t     ^",
		"4:8: $.mcpServers.d.url: must be an absolute http or https URL\n\t\t\"d\":{\"url\":\"*******\"},\"e\":{\"command\":\"*\",\"args\":[1],\"disabled\":true}}}\n\t\t     ^",
	}
	if got := validate.File(desktop); !reflect.DeepEqual(got, want) {
		t.Errorf("%s: %q\nwant %q", desktop, got, want)
	}
}

// TestValidateMissingProgram: a declared program that is not installed,
// or a path that does not exist, is a fault naming the program and
// where it was looked for: the folders of validate's PATH (a plugin
// gets the host's), or the path tried.
func TestValidateMissingProgram(t *testing.T) {
	dir := t.TempDir()
	t.Setenv("PATH", "/nonexistent/a:"+dir)
	tools := write(t, dir, "x.tools.json", `{"functions":[{"name":"f","description":"d","command":["frobnicate"]}]}`)
	mcp := write(t, dir, "x.mcp.json", `{"mcpServers":{"s":{"command":"./bin/srv"}}}`)
	contains(t, tools, validate.File(tools), `the plugin's program "frobnicate" is not installed: not found in any folder of the plugin's PATH: /nonexistent/a, `+dir)
	contains(t, mcp, validate.File(mcp), `$.mcpServers.s.command: the plugin's program "./bin/srv" does not exist: `+filepath.Join(dir, "bin", "srv"))
}

func TestValidatePolicyAndLock(t *testing.T) {
	dir := t.TempDir()
	good := write(t, dir, "good.policy.json", `{"timeout_ms": 5000, "secrets": {"T": "t"}, "sandbox": {"read": [".."], "network": "deny"}}`)
	bad := write(t, dir, "bad.policy.json", `{"sandbox": {"read": ["."], "network": "deny", "connect_tcp": [99999]}}`)
	lock := write(t, dir, "opentool.lock", `{"lockfile_version": 1, "files": {"opentool-plugin-x": "nothex"}, "functions": {}}`)
	if faults := validate.File(good); faults != nil {
		t.Errorf("good.policy.json: %q; want no fault", faults)
	}
	contains(t, bad, validate.File(bad), "$.sandbox.connect_tcp[0]: must be a TCP port (1..65535)")
	contains(t, lock, validate.File(lock), `$.files["opentool-plugin-x"]: not a hex sha256`)
}

// TestValidateReportsEveryFault (issue 23): every fault of a
// NAME.tools.json or NAME.policy.json, each with its JSON path, not the
// first alone, and none twice.
func TestValidateReportsEveryFault(t *testing.T) {
	tools := write(t, t.TempDir(), "bad.tools.json", `{"functions":[{"name":"a b","description":"d","command":[]},{"name":"ok","description":"d","command":["echo"],"timeout_ms":-1}],"extra":1}`)
	faults := validate.File(tools)
	contains(t, tools, faults, "$.extra: unknown member", "$.functions[0].command:", "$.functions[0].name:", "$.functions[1].timeout_ms:")
	if n := strings.Count(strings.Join(faults, "\n"), "$.extra"); n != 1 {
		t.Errorf("$.extra said %d times:\n%s", n, strings.Join(faults, "\n"))
	}
}

// TestValidateOtherFiles: an OpenTool document's faults one per fault, an
// executable and an unreadable file one fault each.
func TestValidateOtherFiles(t *testing.T) {
	dir := t.TempDir()
	doc := write(t, dir, "bad.json", `{"opentool":"1.0.0","info":{"title":"x"},"functions":[{"name":"a b","description":"d","parameters":[{"name":"p","schema":{"type":"array"},"required":true}]}]}`)
	faults := validate.File(doc)
	contains(t, doc, faults, "info.version", "functions[0].name", "functions[0].parameters[0].schema.items")
	if len(faults) < 3 {
		t.Errorf("%s: %q; want one fault each", doc, faults)
	}
	exe := write(t, dir, "plugin", "#!/bin/sh\necho\n")
	if got := validate.File(exe); len(got) != 1 || !strings.HasPrefix(got[0], "an executable, not a document") {
		t.Errorf("%s: %q; want one fault saying it is an executable", exe, got)
	}
	missing := filepath.Join(dir, "missing.json")
	if got := validate.File(missing); len(got) != 1 || !strings.Contains(got[0], "no such file") {
		t.Errorf("%s: %q; want the read error", missing, got)
	}
}

// TestValidateDropInLinksAndQuotes (issue 30, finding 7): validate reads
// a drop-in as the host does: a symbolic link leaving its folder is
// refused without reading the target, and a file that is not JSON is
// faulted without quoting a byte of it; a link within the folder is
// followed.
func TestValidateDropInLinksAndQuotes(t *testing.T) {
	outside, dir := t.TempDir(), t.TempDir()
	secret := filepath.Join(outside, "shadow")
	if err := os.WriteFile(secret, []byte("Qsecret-4e1d\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"z.tools.json", "z.policy.json", "z.mcp.json", "opentool.lock"} {
		if err := os.Symlink(secret, filepath.Join(dir, name)); err != nil {
			t.Fatal(err)
		}
		got := validate.File(filepath.Join(dir, name))
		if len(got) != 1 || !strings.Contains(got[0], "a symbolic link leaving the plugins folder") || strings.Contains(got[0], "Q") {
			t.Errorf("%s -> %s: %q", name, secret, got)
		}
	}
	bad := filepath.Join(dir, "sub", "w.tools.json")
	if err := os.MkdirAll(filepath.Dir(bad), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(bad, []byte("Wbad-9f3a"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join("sub", "w.tools.json"), filepath.Join(dir, "w.tools.json")); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{bad, filepath.Join(dir, "w.tools.json")} {
		got := validate.File(p)
		if len(got) == 0 || got[0] != "1:1: invalid literal (a string or a member name needs double quotes)" || strings.Contains(strings.Join(got, "\n"), "W") {
			t.Errorf("%s: %q", p, got)
		}
	}
}
