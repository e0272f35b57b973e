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
}
