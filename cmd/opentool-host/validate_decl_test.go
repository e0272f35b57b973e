package main_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestValidateDeclaration(t *testing.T) {
	dir := t.TempDir()
	good := filepath.Join(dir, "good.mcp.json")
	bad := filepath.Join(dir, "bad.mcp.json")
	if err := os.WriteFile(good, []byte(`{"mcpServers":{"notes":{"command":"../bin/mcp-notes"}}}`), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(bad, []byte(`{"mcpServers":{"notes":{"command":"x","args":["a",{}]}}}`), 0o644); err != nil {
		t.Fatal(err)
	}
	out, _, code := runCLI(t, "validate", good)
	if code != 0 || !strings.Contains(out, "good.mcp.json: ok") {
		t.Fatalf("validate good: exit %d\n%s", code, out)
	}
	out, _, code = runCLI(t, "validate", bad)
	if code != 1 || !strings.Contains(out, "bad.mcp.json: $.mcpServers.notes.args[1]: must be a string") {
		t.Fatalf("validate bad: exit %d\n%s", code, out)
	}
	// A desktop client's config by its own name, as it is: every entry's
	// fault, none for what the host ignores.
	desktop := filepath.Join(dir, "claude_desktop_config.json")
	if err := os.WriteFile(desktop, []byte(`{"globalShortcut":"x","mcpServers":{
		"a.b":{"command":"x","autoApprove":[]},"c":{"command":1},"d":{"url":"ftp://h"},"e":{"command":"x","args":[1],"disabled":true}}}`), 0o644); err != nil {
		t.Fatal(err)
	}
	out, _, code = runCLI(t, "validate", desktop)
	want := desktop + ": $.mcpServers.c.command: must be a non-empty string\n" + desktop + ": $.mcpServers.d.url: must be an absolute http or https URL\n"
	if code != 1 || out != want {
		t.Fatalf("validate %s: exit %d\n%s\nwant\n%s", desktop, code, out, want)
	}
}

func TestValidatePolicyAndLock(t *testing.T) {
	dir := t.TempDir()
	files := map[string]string{
		"good.policy.json": `{"timeout_ms": 5000, "secrets": {"T": "t"}, "sandbox": {"read": [".."], "network": "deny"}}`,
		"bad.policy.json":  `{"sandbox": {"read": ["."], "network": "deny", "connect_tcp": [99999]}}`,
		"opentool.lock":    `{"lockfile_version": 1, "files": {"opentool-plugin-x": "nothex"}, "functions": {}}`,
	}
	for name, body := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	out, _, code := runCLI(t, "validate", filepath.Join(dir, "good.policy.json"), filepath.Join(dir, "bad.policy.json"), filepath.Join(dir, "opentool.lock"))
	for _, want := range []string{
		"good.policy.json: ok",
		"bad.policy.json: $.sandbox.connect_tcp[0]: must be a TCP port (1..65535)",
		`opentool.lock: $.files["opentool-plugin-x"]: not a hex sha256`,
	} {
		if !strings.Contains(out, want) {
			t.Errorf("validate output lacks %q:\n%s", want, out)
		}
	}
	if code != 1 {
		t.Errorf("exit %d, want 1", code)
	}
}

// TestValidateReportsEveryFault (issue 23): validate prints every fault
// of a NAME.tools.json or NAME.policy.json, each with its JSON path, not
// the first alone.
func TestValidateReportsEveryFault(t *testing.T) {
	dir := t.TempDir()
	tools := filepath.Join(dir, "bad.tools.json")
	if err := os.WriteFile(tools, []byte(`{"functions":[{"name":"a b","description":"d","command":[]},{"name":"ok","description":"d","command":["echo"],"timeout_ms":-1}],"extra":1}`), 0o644); err != nil {
		t.Fatal(err)
	}
	out, _, code := runCLI(t, "validate", tools)
	for _, want := range []string{"$.extra: unknown member", "$.functions[0].command:", "$.functions[0].name:", "$.functions[1].timeout_ms:"} {
		if !strings.Contains(out, tools+": "+want) {
			t.Errorf("validate output lacks %q:\n%s", want, out)
		}
	}
	if code != 1 || strings.Count(out, "$.extra") != 1 {
		t.Errorf("exit %d (want 1), or a fault said twice:\n%s", code, out)
	}
}
