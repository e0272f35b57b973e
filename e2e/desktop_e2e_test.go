package e2e_test

import (
	"context"
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/opentool-host/opentool-host/testkit"
)

// Desktop clients' configs as they are: a real host process serving the
// example MCP server (examples/mcp-notes) and SSE servers started here,
// declared by files as Claude Desktop, VS Code and Windsurf write them.

// dtWrite writes data to dir/name and returns the path.
func dtWrite(t *testing.T, dir, name, data string) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, []byte(data), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// dtJSON is v as JSON text, for a path or a value inside a config.
func dtJSON(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

// dtGetenv calls the example server's getenv tool for name over /mcp
// and returns its value and working directory.
func dtGetenv(t *testing.T, cs *mcp.ClientSession, name string) (value, cwd string) {
	t.Helper()
	out, isErr := msCall(t, cs, "getenv", map[string]any{"name": name})
	var r struct {
		Value string `json:"value"`
		Set   bool   `json:"set"`
		Cwd   string `json:"cwd"`
	}
	if err := json.Unmarshal([]byte(out), &r); isErr || err != nil {
		t.Fatalf("getenv %s = %s (isError %v)", name, out, isErr)
	}
	if !r.Set {
		return "<unset>", r.Cwd
	}
	return r.Value, r.Cwd
}

// dtWaitStates waits until each plugin of want is in its state and its
// last error holds the text given ("" for any).
func dtWaitStates(t *testing.T, url string, want map[string][2]string) {
	t.Helper()
	testkit.Eventually(t, 20*time.Second, "plugin states", func() bool {
		for name, w := range want {
			st := msHealth(t, url, name)
			if !strings.HasPrefix(st, w[0]+": ") || !strings.Contains(st, w[1]) {
				return false
			}
		}
		return true
	})
	for name, w := range want {
		t.Logf("%s: %s (want %s)", name, msHealth(t, url, name), w[0])
	}
}

// TestDesktopConfigClaudeDesktop: Claude Desktop's file, unchanged and
// named with --mcp-config: a server named with a dot is served as
// notes_desk with ${env:VAR} from the host's environment and an envFile
// beside the file (its env wins); the bad entry fails alone, in /health
// with its JSON path; the client's own settings are ignored in one log
// line; the disabled entry is left out.
func TestDesktopConfigClaudeDesktop(t *testing.T) {
	bin := testkit.Build(t, "./examples/mcp-notes")
	cfgDir := t.TempDir()
	t.Setenv("OPENTOOL_E2E_DESKTOP_TOKEN", "tok-from-host")
	dtWrite(t, cfgDir, ".env", "# the server's settings\nNOTES_FROM_FILE=\"from the env file\"\nNOTES_SHARED=file\n")
	cfg := dtWrite(t, cfgDir, "claude_desktop_config.json", `{
  "globalShortcut": "Ctrl+Space",
  "mcpServers": {
    "notes.desk": {
      "command": `+dtJSON(bin)+`,
      "args": ["--env-tool"],
      "env": {"NOTES_TOKEN": "${env:OPENTOOL_E2E_DESKTOP_TOKEN}", "NOTES_SHARED": "env"},
      "envFile": ".env",
      "autoApprove": ["add_note"]
    },
    "broken": {"command": `+dtJSON(bin)+`, "args": ["--env-tool", 7]},
    "off": {"command": "/nonexistent", "disabled": true}
  }
}`)
	hp := startHostProc(t, t.TempDir(), "--mcp-config", cfg)
	dtWaitStates(t, hp.url, map[string][2]string{
		"notes_desk": {"ready", ""},
		"broken":     {"failed", "$.mcpServers.broken.args[1]: must be a string"}, // at its line and column: the path of bin sets the column
	})
	if st := msHealth(t, hp.url, "off"); st != "" {
		t.Errorf("disabled server: %s", st)
	}

	cs := msClient(t, &mcp.StreamableClientTransport{Endpoint: hp.url + "/mcp"})
	for name, want := range map[string]string{
		"NOTES_TOKEN":     "tok-from-host",
		"NOTES_FROM_FILE": "from the env file",
		"NOTES_SHARED":    "env",
	} {
		if got, cwd := dtGetenv(t, cs, name); got != want || cwd != cfgDir {
			t.Errorf("server's %s = %q in %s, want %q in %s", name, got, cwd, want, cfgDir)
		}
	}
	if out, isErr := msCall(t, cs, "add_note", map[string]any{"title": "t"}); isErr || !strings.Contains(out, `"id":1`) {
		t.Fatalf("add_note = %s", out)
	}
	for _, want := range []string{`ignored="$.globalShortcut, $.mcpServers[\"notes.desk\"].autoApprove"`, "disabled=off", `renamed="notes.desk → notes_desk"`} {
		if !strings.Contains(hp.logs.String(), want) {
			t.Errorf("log lacks %s", want)
		}
	}
}

// TestDesktopConfigVSCodeDropIn: VS Code's mcp.json (comments, trailing
// commas, "servers", "inputs") dropped into the plugins folder as
// NAME.mcp.json: the server is served, with an envFile beside it named
// through ${workspaceFolder}; the entry that needs an input VS Code would
// prompt for fails alone. A drop-in may not pull the host's environment
// or a file outside its folder into a server: those entries fail with
// the reason.
func TestDesktopConfigVSCodeDropIn(t *testing.T) {
	bin := testkit.Build(t, "./examples/mcp-notes")
	root := t.TempDir()
	dir := filepath.Join(root, "plugins")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("OPENTOOL_E2E_HOST_SECRET", "must-not-leak")
	dtWrite(t, root, "secret.env", "STOLEN=must-not-leak\n")
	dtWrite(t, dir, "notes.env", "NOTES_FROM_FILE=beside the declaration\n")
	dtWrite(t, dir, "vscode.mcp.json", `{
	// VS Code's own file, as it is
	"inputs": [{"type": "promptString", "id": "token", "description": "API token", "password": true}],
	"servers": {
		"notes": {
			"type": "stdio",
			"command": `+dtJSON(bin)+`,
			"args": ["--env-tool",],
			"envFile": "${workspaceFolder}/notes.env",
			"dev": {"watch": "**/*.go"},
		},
		/* needs a prompt */
		"needs-token": {"type": "stdio", "command": `+dtJSON(bin)+`, "env": {"TOKEN": "${input:token}"}},
	},
}`)
	dtWrite(t, dir, "leak.mcp.json", `{"mcpServers": {
		"leak-env": {"command": `+dtJSON(bin)+`, "env": {"T": "${env:OPENTOOL_E2E_HOST_SECRET}"}},
		"leak-file": {"command": `+dtJSON(bin)+`, "envFile": "../secret.env"}
	}}`)
	hp := startHostProc(t, dir)
	dtWaitStates(t, hp.url, map[string][2]string{
		"notes":       {"ready", ""},
		"needs-token": {"failed", "$.servers.needs-token.env.TOKEN: ${input:token} is a VS Code input, which the host cannot prompt for"},
		"leak-env":    {"failed", "declaration leak.mcp.json: $.mcpServers.leak-env.env.T: ${env:OPENTOOL_E2E_HOST_SECRET}: a drop-in file of the plugins folder may not read the host's environment"},
		"leak-file":   {"failed", "declaration leak.mcp.json: $.mcpServers.leak-file.envFile: " + filepath.Join(root, "secret.env") + " is outside the plugins folder"},
	})
	cs := msClient(t, &mcp.StreamableClientTransport{Endpoint: hp.url + "/mcp"})
	if got, _ := dtGetenv(t, cs, "NOTES_FROM_FILE"); got != "beside the declaration" {
		t.Errorf("NOTES_FROM_FILE = %q", got)
	}
	for _, v := range []string{"OPENTOOL_E2E_HOST_SECRET", "STOLEN"} {
		if got, _ := dtGetenv(t, cs, v); got != "<unset>" {
			t.Errorf("the server has %s = %q", v, got)
		}
	}
	if !strings.Contains(hp.logs.String(), `ignored="$.inputs, $.servers.notes.dev"`) {
		t.Errorf("the ignored members are not logged")
	}
}

// dtSSEServer adds to mux, at path, an MCP server speaking the HTTP+SSE
// transport of MCP 2024-11-05 (the Go SDK's SSEHandler) with one tool.
func dtSSEServer(mux *http.ServeMux, path, tool string) {
	s := mcp.NewServer(&mcp.Implementation{Name: tool, Version: "0.1.0"}, nil)
	type in struct {
		Text string `json:"text"`
	}
	type out struct {
		Echo string `json:"echo"`
	}
	mcp.AddTool(s, &mcp.Tool{Name: tool, Description: "Echoes text."}, func(_ context.Context, _ *mcp.CallToolRequest, i in) (*mcp.CallToolResult, out, error) {
		return nil, out{Echo: tool + ": " + i.Text}, nil
	})
	mux.Handle(path, mcp.NewSSEHandler(func(*http.Request) *mcp.Server { return s }, nil))
}

// TestDesktopConfigSSEServers: remote servers of the older HTTP+SSE
// transport, declared as Claude Code ("type": "sse") and Windsurf
// ("serverUrl", no type: streamable HTTP is tried first and the SSE
// transport after the server refuses it) write them, served over /mcp.
func TestDesktopConfigSSEServers(t *testing.T) {
	mux := http.NewServeMux()
	dtSSEServer(mux, "/legacy/sse", "legacy_echo")
	dtSSEServer(mux, "/windsurf/sse", "windsurf_echo")
	base := testkit.Serve(t, mux)
	cfg := dtWrite(t, t.TempDir(), "mcp.json", `{"mcpServers": {
		"legacy": {"type": "sse", "url": "`+base+`/legacy/sse"},
		"windsurf": {"serverUrl": "`+base+`/windsurf/sse", "disabledTools": []}
	}}`)
	hp := startHostProc(t, t.TempDir(), "--mcp-config", cfg)
	dtWaitStates(t, hp.url, map[string][2]string{"legacy": {"ready", ""}, "windsurf": {"ready", ""}})
	cs := msClient(t, &mcp.StreamableClientTransport{Endpoint: hp.url + "/mcp"})
	for tool, want := range map[string]string{"legacy_echo": `{"echo":"legacy_echo: hi"}`, "windsurf_echo": `{"echo":"windsurf_echo: hi"}`} {
		if out, isErr := msCall(t, cs, tool, map[string]any{"text": "hi"}); isErr || out != want {
			t.Errorf("%s = %s (isError %v), want %s", tool, out, isErr, want)
		}
	}
	if !strings.Contains(hp.logs.String(), "trying the HTTP+SSE transport") {
		t.Errorf("the fallback for windsurf is not logged")
	}
}
