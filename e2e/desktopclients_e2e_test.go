package e2e_test

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/opentool-host/opentool-host/testkit"
)

// Real desktop-style MCP clients over stdio: each starts its own
// `opentool-host mcp` from a desktop config, as Claude Desktop, Cursor or
// VS Code do, and many list the tools once, right after initialize. So
// the first tools/list (and resources/list, prompts/list) must have every
// plugin of the first start, and a call made at once must reach the
// owner of its name. The clients are the MCP Inspector's CLI and the
// TypeScript SDK's Client with StdioClientTransport (e2e/desktop/client.mjs),
// from npm (scripts/deps-desktop-clients.sh, make deps-desktop-clients).

// dcTimeout bounds one client run: its host's start and every step.
const dcTimeout = 90 * time.Second

// dcFolder is the folder of the desktop clients' npm packages.
func dcFolder(t *testing.T) string {
	return filepath.Join(testkit.RepoRoot(t), "e2e", "desktop")
}

// dcNeed skips the test, saying how to get it, when pkg is not installed
// in the desktop clients' folder.
func dcNeed(t *testing.T, pkg string) {
	t.Helper()
	modules := filepath.Join(dcFolder(t), "node_modules")
	if _, err := os.Stat(filepath.Join(modules, filepath.FromSlash(pkg), "package.json")); err != nil {
		t.Skipf("run make deps-desktop-clients: %s is not installed in %s (%v)", pkg, modules, err)
	}
}

// dcSDKNode returns the node on PATH (>= 18) that runs the TypeScript
// SDK's client, or skips the test saying why there is none.
func dcSDKNode(t *testing.T) string {
	t.Helper()
	dcNeed(t, "@modelcontextprotocol/sdk")
	node, err := exec.LookPath("node")
	if err != nil {
		t.Skip("no node on PATH: the TypeScript SDK's client needs Node.js >= 18 (then make deps-desktop-clients)")
	}
	out, err := exec.Command(node, "-p", "process.versions.node").Output()
	v := strings.TrimSpace(string(out))
	if major, _ := strconv.Atoi(strings.Split(v, ".")[0]); err != nil || major < 18 {
		t.Skipf("%s is Node %q (%v); the TypeScript SDK's client needs >= 18", node, v, err)
	}
	return node
}

// dcRun runs node with args in the desktop clients' folder, HOME a
// temporary folder (nothing of the client's is kept), and returns its
// stdout and exit code; its stderr (the host's log among it) is logged,
// and a failed run's last line of it is returned as its error.
func dcRun(t *testing.T, node string, args ...string) (stdout []byte, code int, lastErr string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), dcTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, node, args...)
	cmd.Dir = dcFolder(t)
	cmd.Env = append(os.Environ(), "HOME="+t.TempDir(), "MCP_INSPECTOR_SECRET_STORE=memory")
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	t.Logf("%s %s: exit %v\nstdout: %s\nstderr:\n%s", filepath.Base(node), strings.Join(args, " "), err, out, stderr.String())
	var ee *exec.ExitError
	switch {
	case errors.As(err, &ee):
		lines := strings.Split(strings.TrimSpace(stderr.String()), "\n")
		return out, ee.ExitCode(), lines[len(lines)-1]
	case err != nil:
		t.Fatalf("run %s: %v", node, err)
	}
	return out, 0, ""
}

// dcServer is one server of a desktop client's config (mcpServers.NAME).
type dcServer struct {
	Command string   `json:"command"`
	Args    []string `json:"args"`
}

// dcHost is the README's desktop config's server ("command":
// bin/opentool-host, "args": ["mcp", "--dir", DIR]) with extra flags;
// --state-dir keeps each test's remembered owners its own.
func dcHost(t *testing.T, dir string, extra ...string) dcServer {
	t.Helper()
	args := append([]string{"mcp", "--dir", dir, "--state-dir", t.TempDir()}, extra...)
	return dcServer{Command: testkit.Build(t, "./cmd/opentool-host"), Args: args}
}

// dcConfig writes a desktop client's config ({"mcpServers": servers}) to a
// temporary file and returns its path.
func dcConfig(t *testing.T, servers map[string]dcServer) string {
	t.Helper()
	b, err := json.MarshalIndent(map[string]any{"mcpServers": servers}, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	return dtWrite(t, t.TempDir(), "claude_desktop_config.json", string(b))
}

// dcListed is every function `opentool-host list --json` reports with
// args (--dir DIR, --mcp-config FILE), sorted: what a tools/list must
// have once every plugin started.
func dcListed(t *testing.T, args ...string) []string {
	t.Helper()
	out, errOut, code := runCLI(t, append([]string{"list", "--json", "--state-dir", t.TempDir()}, args...)...)
	var l struct {
		Plugins []struct {
			Name      string   `json:"name"`
			State     string   `json:"state"`
			Functions []string `json:"functions"`
		} `json:"plugins"`
	}
	if err := json.Unmarshal([]byte(out), &l); code != 0 || err != nil {
		t.Fatalf("list %v: exit %d, %v\n%s%s", args, code, err, out, errOut)
	}
	var names []string
	for _, p := range l.Plugins {
		if p.State != "ready" {
			t.Fatalf("list %v: plugin %s is %s", args, p.Name, p.State)
		}
		names = append(names, p.Functions...)
	}
	slices.Sort(names)
	return names
}

// dcSameNames fails the test unless got (what a client's first list
// gave) holds exactly want.
func dcSameNames(t *testing.T, who string, got, want []string) {
	t.Helper()
	got = slices.Sorted(slices.Values(got))
	if !slices.Equal(got, want) {
		var missing []string
		for _, n := range want {
			if !slices.Contains(got, n) {
				missing = append(missing, n)
			}
		}
		t.Errorf("%s's first tools/list has %d tools, want the %d that list reports; missing %v\ngot  %v\nwant %v", who, len(got), len(want), missing, got, want)
	}
}

// dcInspectorNode returns the Node >= 22 that runs the MCP Inspector (the
// one make deps-conformance pins, else a node >= 22 on PATH), or skips
// the test saying how to get it and the Inspector.
func dcInspectorNode(t *testing.T) string {
	t.Helper()
	dcNeed(t, "@modelcontextprotocol/inspector")
	return testkit.Node(t, filepath.Join(testkit.RepoRoot(t), "conformance", "node_modules"), "the MCP Inspector")
}

// dcInspector runs the MCP Inspector's CLI (--cli --format json) on node
// with the desktop config cfg's server and the method's own flags, and
// decodes the result it printed ({"result": RESULT}) into v.
func dcInspector(t *testing.T, node, cfg, server string, v any, method ...string) {
	t.Helper()
	cli := filepath.Join("node_modules", "@modelcontextprotocol", "inspector", "clients", "launcher", "build", "index.js")
	args := append([]string{cli, "--cli", "--format", "json", "--config", cfg, "--server", server, "--method"}, method...)
	out, code, lastErr := dcRun(t, node, args...)
	if code != 0 {
		t.Fatalf("the Inspector's %s: exit %d: %s", method[0], code, lastErr)
	}
	var printed struct {
		Result json.RawMessage `json:"result"`
	}
	if err := json.Unmarshal(out, &printed); err != nil || printed.Result == nil {
		t.Fatalf("the Inspector's %s printed %q (%v), want {\"result\": ...}", method[0], out, err)
	}
	if err := json.Unmarshal(printed.Result, v); err != nil {
		t.Fatalf("the Inspector's %s result %s: %v", method[0], printed.Result, err)
	}
}

// dcToolNames is a tools/list result's tool names.
type dcToolNames struct {
	Tools []struct {
		Name string `json:"name"`
	} `json:"tools"`
}

func (l dcToolNames) names() []string {
	var out []string
	for _, tl := range l.Tools {
		out = append(out, tl.Name)
	}
	return out
}

// dcAddResult fails the test unless res, what a client got for add
// {a: 1.5, b: 2}, is the calculator's {"result": 3.5}.
func dcAddResult(t *testing.T, who string, res json.RawMessage) {
	t.Helper()
	var r struct {
		IsError           bool               `json:"isError"`
		StructuredContent map[string]float64 `json:"structuredContent"`
	}
	if err := json.Unmarshal(res, &r); err != nil || r.IsError || r.StructuredContent["result"] != 3.5 {
		t.Errorf("%s's add {a: 1.5, b: 2} = %s (%v), want structuredContent {\"result\": 3.5}", who, res, err)
	}
}

// TestDesktopInspectorCLIFirstList: the MCP Inspector's CLI, given the
// README's desktop config for make run's folder (every example plugin,
// the Python and Node ones when their runtime is here), lists on its
// first tools/list every tool that `opentool-host list` reports, and its
// tools/call of add {a: 1.5, b: 2} (again the first request after
// initialize of a new host) gets 3.5. Each run of the CLI starts its own
// host, as a desktop client does.
func TestDesktopInspectorCLIFirstList(t *testing.T) {
	t.Parallel() // waits on Node and on plugins starting most of its time: beside the other Node tests
	node := dcInspectorNode(t)
	dir, _ := examplesFolder(t)
	want := dcListed(t, "--dir", dir)
	cfg := dcConfig(t, map[string]dcServer{"opentool-host": dcHost(t, dir)})

	var listed dcToolNames
	dcInspector(t, node, cfg, "opentool-host", &listed, "tools/list")
	dcSameNames(t, "the Inspector", listed.names(), want)

	var called json.RawMessage
	dcInspector(t, node, cfg, "opentool-host", &called, "tools/call", "--tool-name", "add", "--tool-args-json", `{"a":1.5,"b":2}`)
	dcAddResult(t, "the Inspector", called)
}

// dcStep is what e2e/desktop/client.mjs printed for one step.
type dcStep struct {
	Step   string          `json:"step"`
	Names  []string        `json:"names"`
	Name   string          `json:"name"`
	Result json.RawMessage `json:"result"`
	Error  string          `json:"error"`
	MS     int             `json:"ms"`
}

// dcClient runs the TypeScript SDK's client (e2e/desktop/client.mjs) on
// node with srv and steps ("tools", "resources", "prompts", or a call: {"call":
// NAME, "arguments": {...}}) and returns what it printed for each, in
// order.
func dcClient(t *testing.T, node string, srv dcServer, steps ...any) []dcStep {
	t.Helper()
	spec, err := json.Marshal(map[string]any{"command": srv.Command, "args": srv.Args, "steps": steps})
	if err != nil {
		t.Fatal(err)
	}
	out, code, lastErr := dcRun(t, node, "client.mjs", string(spec))
	if code != 0 {
		t.Fatalf("the TypeScript client: exit %d: %s", code, lastErr)
	}
	var r struct {
		Steps []dcStep `json:"steps"`
	}
	if err := json.Unmarshal(out, &r); err != nil || len(r.Steps) != len(steps) {
		t.Fatalf("the TypeScript client printed %q (%v), want %d steps", out, err, len(steps))
	}
	for _, s := range r.Steps {
		if s.Error != "" {
			t.Errorf("the TypeScript client's %s %s at %d ms: %s", s.Step, s.Name, s.MS, s.Error)
		}
	}
	return r.Steps
}

// TestDesktopTypeScriptClientFirstList: the TypeScript SDK's client
// (Client, StdioClientTransport) starts `opentool-host mcp` on make
// run's folder, with the notes MCP server's resources and prompts on
// (--rich), lists the tools once, then the resources and the prompts,
// and calls add {a: 1.5, b: 2}: the one list has every tool that
// `opentool-host list` reports, resources/list and prompts/list have the
// notes server's, and add gives 3.5.
func TestDesktopTypeScriptClientFirstList(t *testing.T) {
	t.Parallel() // waits on Node and on plugins starting most of its time: beside the other Node tests
	node := dcSDKNode(t)
	dir, _ := examplesFolder(t)
	dtWrite(t, dir, "notes.mcp.json", `{"mcpServers": {"notes": {"command": "../bin/mcp-notes", "args": ["--rich"]}}}`)
	want := dcListed(t, "--dir", dir)
	steps := dcClient(t, node, dcHost(t, dir), "tools", "resources", "prompts", map[string]any{"call": "add", "arguments": map[string]any{"a": 1.5, "b": 2}})
	dcSameNames(t, "the TypeScript client", steps[0].Names, want)
	if !slices.Contains(steps[1].Names, "notes://readme") {
		t.Errorf("the first resources/list %v lacks the notes server's notes://readme", steps[1].Names)
	}
	if !slices.Contains(steps[2].Names, "summarize") {
		t.Errorf("the first prompts/list %v lacks the notes server's summarize", steps[2].Names)
	}
	dcAddResult(t, "the TypeScript client", steps[3].Result)
	t.Logf("first tools/list %d ms after the host's start", steps[0].MS)
}

// TestDesktopMCPConfigFirstList: `opentool-host mcp --mcp-config FILE`
// with Claude Desktop's claude_desktop_config.json, itself started by the
// MCP Inspector from a desktop config: the Inspector's first tools/list
// has every tool of the file's server (the notes MCP server, started
// through sh after 2 s, as slow as a server npx fetches: longer than the
// Inspector takes to initialize and list).
func TestDesktopMCPConfigFirstList(t *testing.T) {
	t.Parallel() // waits on Node and on plugins starting most of its time: beside the other Node tests
	node := dcInspectorNode(t)
	notes := testkit.Build(t, "./examples/mcp-notes")
	claude := dcConfig(t, map[string]dcServer{"notes": {Command: "/bin/sh", Args: []string{"-c", "sleep 2; exec " + notes}}})
	dir := t.TempDir()
	want := dcListed(t, "--dir", dir, "--mcp-config", claude)
	if !slices.Contains(want, "add_note") {
		t.Fatalf("list --mcp-config: %v, want the notes server's add_note among them", want)
	}
	cfg := dcConfig(t, map[string]dcServer{"opentool-host": dcHost(t, dir, "--mcp-config", claude)})
	var listed dcToolNames
	dcInspector(t, node, cfg, "opentool-host", &listed, "tools/list")
	dcSameNames(t, "the Inspector", listed.names(), want)
}

// TestDesktopCallGoesToTheRememberedOwner: echo is served by two plugins,
// a Go plugin (testkit/plugins/echo) slow to start and a command-line
// tool (quick.tools.json) up at once. The Go plugin is echo's remembered
// owner (it was alone at the host's last start, with the same
// --state-dir), so a tools/call of echo sent over stdio right after
// initialize, while the owner is still starting, is answered by it, not
// by the quick plugin, which gets quick__echo.
func TestDesktopCallGoesToTheRememberedOwner(t *testing.T) {
	dir, state := t.TempDir(), t.TempDir()
	// The owner takes 2 s to exec: longer than initialize and a call take
	// over stdio, so the call arrives while it is starting.
	ncScript(t, dir, "owner", "#!/bin/sh\nsleep 2\nexec "+testkit.Build(t, "./testkit/plugins/echo")+"\n")
	hp := startHostProc(t, dir, "--state-dir", state)
	if _, m := rpc(t, hp.url, `{"jsonrpc":"2.0","method":"echo","params":{},"id":1}`); m["result"] == nil {
		t.Fatalf("echo with the owner alone: %v", m)
	}
	stopHostProc(t, hp, syscall.SIGTERM)
	ctWrite(t, dir, "quick", ncTools("quick"))

	cs, stderr := connectMCPStdio(t, dir, "--state-dir", state, "--log-level", "debug")
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "echo", Arguments: map[string]any{}})
	if err != nil {
		t.Fatalf("tools/call echo right after initialize: %v\n%s", err, stderr.String())
	}
	got, _ := json.Marshal(res)
	if !strings.Contains(string(got), `"structuredContent":{"echo":{}}`) {
		t.Errorf("tools/call echo right after initialize = %s, want the owner's {\"echo\":{}}, not quick's stdout\n%s", got, stderr.String())
	}
	tools, err := cs.ListTools(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, tl := range tools.Tools {
		names = append(names, tl.Name)
	}
	if !slices.Contains(names, "quick__echo") {
		t.Errorf("tools/list after the call: %v, want quick's echo as quick__echo", names)
	}
}
