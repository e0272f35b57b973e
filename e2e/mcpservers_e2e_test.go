package e2e_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
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

	"github.com/opentool-host/opentool-host/process/keeper"
	"github.com/opentool-host/opentool-host/testkit"
)

// msDeclare writes NAME.mcp.json in dir declaring server name as the
// example MCP server (examples/mcp-notes) with args.
func msDeclare(t *testing.T, dir, name string, args ...string) string {
	t.Helper()
	bin := testkit.Build(t, "./examples/mcp-notes")
	srv := map[string]any{"command": bin}
	if len(args) > 0 {
		srv["args"] = args
	}
	b, _ := json.Marshal(map[string]any{"mcpServers": map[string]any{name: srv}})
	p := filepath.Join(dir, name+".mcp.json")
	if err := os.WriteFile(p, b, 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// msShared makes the declaration at path "sessions": "shared": every
// caller reaches its one server session (and process).
func msShared(t *testing.T, path string) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var f map[string]map[string]map[string]any
	if err := json.Unmarshal(b, &f); err != nil {
		t.Fatal(err)
	}
	for _, srv := range f["mcpServers"] {
		srv["sessions"] = "shared"
	}
	b, _ = json.Marshal(f)
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
}

// msClient connects the SDK's client over t.
func msClient(t *testing.T, tr mcp.Transport) *mcp.ClientSession {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "e2e", Version: "1"}, nil).Connect(ctx, tr, nil)
	if err != nil {
		t.Fatalf("MCP connect: %v", err)
	}
	t.Cleanup(func() { _ = cs.Close() })
	return cs
}

// msCall calls tool name and returns the result's JSON text.
func msCall(t *testing.T, cs *mcp.ClientSession, name string, args map[string]any) (string, bool) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: name, Arguments: args})
	if err != nil {
		t.Fatalf("tools/call %s: %v", name, err)
	}
	var sb strings.Builder
	for _, c := range res.Content {
		if tc, ok := c.(*mcp.TextContent); ok {
			sb.WriteString(tc.Text)
		}
	}
	return sb.String(), res.IsError
}

// msTools lists the tools of cs.
func msTools(t *testing.T, cs *mcp.ClientSession) map[string]bool {
	t.Helper()
	out := map[string]bool{}
	for tool, err := range cs.Tools(context.Background(), nil) {
		if err != nil {
			t.Fatal(err)
		}
		out[tool.Name] = true
	}
	return out
}

// msLoad lists the function names of GET /opentool/load.
func msLoad(t *testing.T, url string) map[string]bool {
	t.Helper()
	resp, err := http.Get(url + "/opentool/load")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var doc struct{ Functions []struct{ Name string } }
	if err := json.NewDecoder(resp.Body).Decode(&doc); err != nil {
		t.Fatal(err)
	}
	out := map[string]bool{}
	for _, f := range doc.Functions {
		out[f.Name] = true
	}
	return out
}

// msChildren returns the pids whose parent is pid, but the host's
// keeper.
func msChildren(pid int) []int {
	var out []int
	for _, n := range childPIDs(pid) {
		if !isKeeper(n) {
			out = append(out, n)
		}
	}
	return out
}

// childPIDs returns the pids whose parent is pid (children of any of its
// threads).
func childPIDs(pid int) []int {
	files, _ := filepath.Glob(fmt.Sprintf("/proc/%d/task/*/children", pid))
	var out []int
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			continue
		}
		for _, field := range strings.Fields(string(b)) {
			if n, err := strconv.Atoi(field); err == nil {
				out = append(out, n)
			}
		}
	}
	return out
}

// isKeeper reports whether pid is a host's keeper process
// (`opentool-host-keeper keeper` or `opentool-host keeper`), which is not
// a plugin.
func isKeeper(pid int) bool {
	b, _ := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
	args := strings.Split(string(b), "\x00")
	return len(args) > 1 && args[1] == keeper.Command
}

// keeperOf returns the pid of the keeper process of the host process
// host (a child of it: isKeeper), or 0 when it runs none.
func keeperOf(host int) int {
	for _, n := range childPIDs(host) {
		if isKeeper(n) {
			return n
		}
	}
	return 0
}

// msServerPID returns the pid of the MCP server of plugin name, waiting
// until there is one, and checks that no process stands between the host
// (hostPID) and the server: the server is the host's own child.
func msServerPID(t *testing.T, url string, hostPID int, name string) int {
	t.Helper()
	var pid int
	testkit.Eventually(t, 10*time.Second, "MCP server process of "+name, func() bool {
		pid = pluginPIDs(t, url)[name]
		return pid != 0
	})
	if !slices.Contains(msChildren(hostPID), pid) {
		t.Fatalf("MCP server %s (pid %d) is not a child of the host (pid %d): children %v", name, pid, hostPID, msChildren(hostPID))
	}
	return pid
}

func TestDeclaredServerOverMCPStdio(t *testing.T) {
	dir := t.TempDir()
	testkit.InstallPlugin(t, dir, "calculator", "./plugins/calculator")
	testkit.InstallPlugin(t, dir, "mock", "./plugins/mock")
	msDeclare(t, dir, "notes")
	bin := testkit.Build(t, "./cmd/opentool-host")
	cmd := exec.Command(bin, "mcp", "--dir", dir, "--state-dir", t.TempDir(), "--log-level", "debug")
	var stderr testkit.SyncBuffer
	cmd.Stderr = &stderr
	started := mcpStarted(cmd)
	cs := msClient(t, &mcp.CommandTransport{Command: cmd})
	waitMCPStarted(t, started)
	names := msTools(t, cs)
	for _, want := range []string{"add", "count", "create", "add_note", "list_notes"} {
		if !names[want] {
			t.Errorf("tools/list over stdio lacks %s: %v", want, names)
		}
	}
	if out, isErr := msCall(t, cs, "add", map[string]any{"a": 2, "b": 3}); isErr || out != `{"result":5}` {
		t.Fatalf("add = %s", out)
	}
	if out, isErr := msCall(t, cs, "add_note", map[string]any{"title": "t"}); isErr || !strings.Contains(out, `"id":1`) {
		t.Fatalf("add_note (an MCP server behind the host) = %s", out)
	}
	if out, isErr := msCall(t, cs, "divide", map[string]any{"a": 1, "b": 0}); !isErr || !strings.Contains(out, "b must not be 0") {
		t.Fatalf("divide by zero = %s (isError %v)", out, isErr)
	}
	// Logs went to stderr; stdout carried MCP only (the client parsed it).
	if !strings.Contains(stderr.String(), "serving MCP on stdio") {
		t.Errorf("no log on stderr:\n%s", stderr.String())
	}
	// End of input stops the host and every plugin: calculator, mock and
	// notes, whose server runs twice: the shared session's process, and
	// that of the session of 2026-07-28 the SDK's client (of 2026-07-28)
	// is served on (declared/mcpadapter, sessionless.go).
	pids := msChildren(cmd.Process.Pid)
	if len(pids) != 4 {
		t.Fatalf("plugin processes under opentool-host mcp = %v, want 4", pids)
	}
	_ = cs.Close()
	done := make(chan struct{})
	go func() { _ = cmd.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(20 * time.Second):
		t.Fatal("opentool-host mcp did not exit after stdin closed")
	}
	for _, pid := range pids {
		if !zombieOrGone(pid) {
			t.Errorf("plugin %d outlived opentool-host mcp", pid)
		}
	}
}

// msWriter adapts a WriteString func to io.Writer.
type msWriter func(string)

func (w msWriter) Write(p []byte) (int, error) { w(string(p)); return len(p), nil }

func TestDeclaredServerOverMCPHTTP(t *testing.T) {
	dir := t.TempDir()
	testkit.InstallPlugin(t, dir, "calculator", "./plugins/calculator")
	msDeclare(t, dir, "notes")
	hp := startHostProc(t, dir, "--api-key", "k1")
	cs := msClient(t, &mcp.StreamableClientTransport{Endpoint: hp.url + "/mcp", HTTPClient: &http.Client{Transport: msBearer("k1")}})
	if out, isErr := msCall(t, cs, "add_note", map[string]any{"title": "over http"}); isErr || !strings.Contains(out, `"title":"over http"`) {
		t.Fatalf("add_note = %s", out)
	}
	resp, err := http.Post(hp.url+"/mcp", "application/json", strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"tools/list"}`))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusUnauthorized {
		t.Fatalf("/mcp without key: %d, want 401", resp.StatusCode)
	}
}

// msBearer sends "Authorization: Bearer KEY".
type msBearer string

func (k msBearer) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+string(k))
	return http.DefaultTransport.RoundTrip(r)
}

func TestDeclaredMCPServerSupervised(t *testing.T) {
	dir := t.TempDir()
	testkit.InstallPlugin(t, dir, "calculator", "./plugins/calculator")
	decl := msDeclare(t, dir, "notes", "--odd-tools", "--add-tool-after", "1500ms")
	msDeclare(t, dir, "mute", "--hang-initialize")
	hp := startHostProc(t, dir, "--start-timeout", "3s")

	// Its tools are served over /opentool/call, the odd ones too: a name
	// made valid, a schema OpenTool cannot express kept as declared and
	// enforced by the host.
	if _, m := rpc(t, hp.url, `{"jsonrpc":"2.0","method":"add_note","params":{"title":"a","body":"b"},"id":1}`); fmt.Sprint(m["result"]) != "map[body:b id:1 title:a]" {
		t.Fatalf("add_note = %v", m)
	}
	if _, m := rpc(t, hp.url, `{"jsonrpc":"2.0","method":"get_note","params":{"id":9},"id":2}`); !strings.Contains(fmt.Sprint(m["error"]), "no note 9") {
		t.Fatalf("get_note of a missing note = %v", m)
	}
	if _, m := rpc(t, hp.url, `{"jsonrpc":"2.0","method":"ns_tool_with_spaces","params":{"text":"x"},"id":3}`); fmt.Sprint(m["result"]) != "map[content:[map[text:x type:text]] text:x]" {
		t.Fatalf("renamed tool = %v", m)
	}
	if _, m := rpc(t, hp.url, `{"jsonrpc":"2.0","method":"all_of","params":{"x":1},"id":3}`); !strings.Contains(fmt.Sprint(m["error"]), "x: must be string, got number 1") {
		t.Fatalf("all_of with x=1 = %v, want invalid params from the host", m)
	}
	if _, m := rpc(t, hp.url, `{"jsonrpc":"2.0","method":"all_of","params":{"x":"s"},"id":3}`); m["error"] != nil {
		t.Fatalf("all_of with x=\"s\" = %v", m)
	}
	// list_changed from the server reaches /opentool/load without a restart.
	srv := msServerPID(t, hp.url, hp.cmd.Process.Pid, "notes")
	testkit.Eventually(t, 15*time.Second, "late tool served after list_changed", func() bool { return msLoad(t, hp.url)["late"] })
	if now := pluginPIDs(t, hp.url)["notes"]; now != srv {
		t.Fatalf("server restarted for list_changed: %d → %d", srv, now)
	}

	// Cancellation reaches the server: a caller that gives up.
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, hp.url+"/opentool/call", strings.NewReader(`{"jsonrpc":"2.0","method":"slow","params":{"ms":60000},"id":4}`))
	req.Header.Set("Content-Type", "application/json")
	if _, err := http.DefaultClient.Do(req); err == nil {
		t.Fatal("slow call returned before the caller gave up")
	}
	cancel()
	testkit.Eventually(t, 10*time.Second, "the MCP server saw notifications/cancelled", func() bool {
		_, m := rpc(t, hp.url, `{"jsonrpc":"2.0","method":"stats","id":5}`)
		return fmt.Sprint(m["result"]) == "map[active:0 cancelled:1]"
	})

	// A server that never answers initialize is failed with the reason;
	// the others serve.
	var mute string
	testkit.Eventually(t, 15*time.Second, "mute server failed", func() bool {
		mute = msHealth(t, hp.url, "mute")
		return strings.Contains(mute, "failed")
	})
	if !strings.Contains(mute, `did not answer initialize`) {
		t.Fatalf("mute server status = %s", mute)
	}
	if _, m := rpc(t, hp.url, `{"jsonrpc":"2.0","method":"add","params":{"a":1,"b":1},"id":6}`); fmt.Sprint(m["result"]) != "map[result:2]" {
		t.Fatalf("add while a server is failed = %v", m)
	}

	// The MCP server process killed: the host restarts it and the tools
	// serve again.
	if now := pluginPIDs(t, hp.url)["notes"]; now != srv {
		t.Fatalf("the server was restarted before it was killed (cancellation not honoured?): %d → %d\n%s", srv, now, hp.logs.String())
	}
	killed := time.Now()
	if err := syscall.Kill(srv, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	testkit.Eventually(t, 20*time.Second, "notes restarted after its server was killed", func() bool {
		pid := pluginPIDs(t, hp.url)["notes"]
		return pid != 0 && pid != srv
	})
	_, m := rpc(t, hp.url, `{"jsonrpc":"2.0","method":"list_notes","id":7}`)
	if fmt.Sprint(m["result"]) != "map[notes:[]]" {
		t.Fatalf("list_notes after the restart = %v (want a fresh server's empty list)", m)
	}
	t.Logf("MCP server SIGKILLed → restarted and serving after %v (%s)", time.Since(killed), msHealth(t, hp.url, "notes"))

	// The declaration removed: its tools leave /opentool/load.
	if err := os.Remove(decl); err != nil {
		t.Fatal(err)
	}
	testkit.Eventually(t, 15*time.Second, "notes tools gone", func() bool { return !msLoad(t, hp.url)["add_note"] })

	// Host SIGKILL leaves no MCP server behind.
	msDeclare(t, dir, "notes2")
	testkit.Eventually(t, 15*time.Second, "notes2 served", func() bool { return pluginPIDs(t, hp.url)["notes2"] != 0 })
	srv2 := msServerPID(t, hp.url, hp.cmd.Process.Pid, "notes2")
	if err := hp.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	<-hp.done
	defer syscall.Kill(srv2, syscall.SIGKILL)
	testkit.Eventually(t, 5*time.Second, "MCP server gone after host SIGKILL", func() bool {
		return zombieOrGone(srv2)
	})
}

// msHealth returns plugin name's state and last error from /health.
func msHealth(t *testing.T, url, name string) string {
	t.Helper()
	resp, err := http.Get(url + "/health")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var h struct {
		Plugins []struct {
			Name, State string
			LastError   string `json:"last_error"`
		}
	}
	if err := json.NewDecoder(resp.Body).Decode(&h); err != nil {
		t.Fatal(err)
	}
	for _, p := range h.Plugins {
		if p.Name == name {
			return p.State + ": " + p.LastError
		}
	}
	return ""
}
