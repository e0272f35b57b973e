package e2e_test

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"
)

// TestHandWrittenFilesSayWhere: a real host reads every hand-written
// file kind with comments and trailing commas, and a malformed one's
// fault names FILE:LINE:COLUMN and shows the line with a caret: a
// NAME.tools.json, a NAME.mcp.json and a NAME.policy.json in /health,
// the keys file and an --mcp-config as the host's exit; `validate`
// prints the same for each.
func TestHandWrittenFilesSayWhere(t *testing.T) {
	dir := t.TempDir()
	writeTestFile(t, filepath.Join(dir, "ok.tools.json"), `{
  // comments and trailing commas, as VS Code's configs
  "functions": [
    {"name": "hello", "description": "Says hello.", "command": ["echo", "hello",],},
  ],
}`)
	writeTestFile(t, filepath.Join(dir, "bad.tools.json"), "{\n  \"functions\": [\n    {\"name\": \"f\" \"description\": \"d\"}\n  ]\n}")
	writeTestFile(t, filepath.Join(dir, "badm.mcp.json"), "{\"mcpServers\": {\n\t\"s\": {\"command\": \"sh\", \"args\": [1]}\n}}")
	writeTestFile(t, filepath.Join(dir, "pol.tools.json"), `{"functions": [{"name": "p", "description": "d", "command": ["true"]}]}`)
	writeTestFile(t, filepath.Join(dir, "pol.policy.json"), "{\n  \"timeout_ms\": 5000,\n  \"timeot_ms\": 1,\n}")
	hp := startHostProc(t, dir)

	if _, m := rpc(t, hp.url, `{"jsonrpc":"2.0","method":"hello","params":{},"id":1}`); !strings.Contains(fmt.Sprint(m["result"]), "hello") {
		t.Errorf("hello from a tools.json with comments and trailing commas = %v", m)
	}
	h := healthOf(t, hp.url)
	for name, want := range map[string]string{
		"bad": "declaration bad.tools.json:3:18: invalid character after object value (expecting ',' or '}')\n    {\"name\": \"*\" \"description\": \"*\"}\n                 ^",
		"s":   "declaration badm.mcp.json:2:34: $.mcpServers.s.args[0]: must be a string\n\t\"s\": {\"command\": \"**\", \"args\": [1]}\n\t                                ^",
		"pol": "policy pol.policy.json:3:3: $.timeot_ms: unknown member\n  \"timeot_ms\": 1,\n  ^",
	} {
		if st := h[name]; st.State != "failed" || !strings.Contains(st.LastError, want) {
			t.Errorf("%s: %s %q\nwant failed with\n%s", name, st.State, st.LastError, want)
		}
	}

	keys := filepath.Join(t.TempDir(), "keys.json")
	writeTestFile(t, keys, "{\"keys\": [\n  {\"name\": \"ci\", \"key\": \"sk-0123456789abcdef0123\", \"allow\": [\"*\"],},\n  {\"name\": \"x\" \"key\": \"sk-secret-do-not-show-0001\"}\n]}")
	_, stderr, code := runCLI(t, "run", "--dir", t.TempDir(), "--addr", "127.0.0.1:0", "--state-dir", t.TempDir(), "--api-keys-file", keys)
	if code == 0 || !strings.Contains(stderr, keys+":3:16: invalid character after object value (expecting ',' or '}')") || strings.Contains(stderr, "sk-") {
		t.Errorf("a malformed keys file: exit %d\n%s", code, stderr)
	}
	desk := filepath.Join(t.TempDir(), "claude_desktop_config.json")
	writeTestFile(t, desk, "{\n  \"mcpServers\": {\n    \"a\": {\"command\": \"sh\",}\n  }\n  \"x\": 1\n}")
	_, stderr, code = runCLI(t, "run", "--dir", t.TempDir(), "--addr", "127.0.0.1:0", "--state-dir", t.TempDir(), "--mcp-config", desk)
	if code == 0 || !strings.Contains(stderr, desk+":5:3: invalid character after object value (expecting ',' or '}')") {
		t.Errorf("a malformed --mcp-config: exit %d\n%s", code, stderr)
	}

	for file, want := range map[string]string{
		filepath.Join(dir, "bad.tools.json"):  ":3:18: invalid character after object value",
		filepath.Join(dir, "badm.mcp.json"):   ":2:34: $.mcpServers.s.args[0]: must be a string",
		filepath.Join(dir, "pol.policy.json"): ":3:3: $.timeot_ms: unknown member",
		desk:                                  ":5:3: invalid character after object value",
	} {
		stdout, _, code := runCLI(t, "validate", file)
		if code != 1 || !strings.Contains(stdout, file+want) || !strings.Contains(stdout, "^") {
			t.Errorf("validate %s: exit %d, want 1 and %q with a caret:\n%s", file, code, file+want, stdout)
		}
	}
}
