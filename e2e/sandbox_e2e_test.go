package e2e_test

import (
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/opentool-host/opentool-host/testkit"
)

// landlockOrSkip skips a test when the kernel's active security modules
// (securityfs) do not include Landlock.
func landlockOrSkip(t *testing.T) {
	t.Helper()
	b, err := os.ReadFile("/sys/kernel/security/lsm")
	if err == nil && !strings.Contains(string(b), "landlock") {
		t.Skipf("Landlock is not enabled in this kernel (active LSMs: %s)", strings.TrimSpace(string(b)))
	}
}

// callBody posts a JSON-RPC call of method with params and returns the
// raw response body.
func callBody(t *testing.T, url, method, params string) string {
	t.Helper()
	resp, err := http.Post(url+"/opentool/call", "application/json",
		strings.NewReader(`{"jsonrpc":"2.0","method":"`+method+`","params":`+params+`,"id":1}`))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return string(b)
}

// TestSandboxConfinesFilesPlugin runs the real host with --sandbox and
// the files plugin (no policy file): confined to --sandbox-read ROOT it
// serves the files of ROOT; given a root outside what the sandbox allows
// it cannot even open it (the kernel refuses, not the plugin), while the
// same plugin unconfined serves that folder.
func TestSandboxConfinesFilesPlugin(t *testing.T) {
	landlockOrSkip(t)
	root, outside := t.TempDir(), t.TempDir()
	if err := os.WriteFile(filepath.Join(root, "a.txt"), []byte("inside"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(outside, "secret.txt"), []byte("outside"), 0o644); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	testkit.InstallPlugin(t, dir, "files", "./plugins/files")
	testkit.InstallPlugin(t, dir, "calculator", "./plugins/calculator")
	sandboxed := []string{"--sandbox", "--sandbox-read", root, "--sandbox-deny-network"}

	t.Setenv("OPENTOOL__FILES__ROOT", root)
	hp := startHostProc(t, dir, sandboxed...)
	if b := callBody(t, hp.url, "read_text", `{"path":"a.txt"}`); !strings.Contains(b, "inside") {
		t.Errorf("confined read inside the root: %s", b)
	}
	rel, _ := filepath.Rel(root, filepath.Join(outside, "secret.txt"))
	if b := callBody(t, hp.url, "read_text", `{"path":"`+rel+`"}`); strings.Contains(b, `"outside"`) || !strings.Contains(b, "error") {
		t.Errorf("confined read outside the root: %s", b)
	}
	if b := callBody(t, hp.url, "add", `{"a":2,"b":3}`); !strings.Contains(b, `"result":5`) {
		t.Errorf("confined calculator: %s", b)
	}
	// The pid the host sees is the plugin itself (the launcher executed
	// it in place), with no_new_privs set by Landlock's setup.
	pid := pluginPIDs(t, hp.url)["files"]
	exe, _ := os.Readlink(fmt.Sprintf("/proc/%d/exe", pid))
	status, _ := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if strings.Contains(exe, "opentool-host") || !strings.Contains(string(status), "NoNewPrivs:\t1") {
		t.Errorf("files plugin pid %d runs %s, NoNewPrivs set: %v", pid, exe, strings.Contains(string(status), "NoNewPrivs:\t1"))
	}
	if !strings.Contains(hp.logs.String(), "sandbox: Landlock ABI") {
		t.Errorf("no launcher line in the host log")
	}
	for _, line := range strings.Split(hp.logs.String(), "\n") {
		if strings.Contains(line, "plugin.files: sandbox: Landlock ABI") {
			t.Log(line)
		}
	}

	// A root outside the sandbox: the kernel refuses the plugin its root.
	t.Setenv("OPENTOOL__FILES__ROOT", outside)
	hp2 := startHostProc(t, dir, sandboxed...)
	if pluginPIDs(t, hp2.url)["files"] != 0 || !strings.Contains(hp2.logs.String(), "open "+outside+": permission denied") {
		t.Errorf("confined files plugin with a root outside the sandbox was not refused it:\n%s", hp2.logs.String())
	}
	// Unconfined, the same plugin serves that folder.
	hp3 := startHostProc(t, dir)
	if b := callBody(t, hp3.url, "read_text", `{"path":"secret.txt"}`); !strings.Contains(b, "outside") {
		t.Errorf("unconfined read: %s", b)
	}
}

// TestSandboxLauncherMeasure measures what the launcher costs, in one
// host: the calculator as it is, and the same binary as "calcsbx" whose
// policy confines it (Landlock filesystem and network, memory and CPU
// rlimits), so it starts through the launcher. Per plugin: cold start
// (plugin found -> ready in the host log) and the median latency of 200
// sequential calls after 20 of warm-up. Logged, never asserted.
func TestSandboxLauncherMeasure(t *testing.T) {
	landlockOrSkip(t)
	dir := t.TempDir()
	testkit.InstallPlugin(t, dir, "calculator", "./plugins/calculator")
	testkit.InstallPlugin(t, dir, "calcsbx", "./plugins/calculator")
	policy := `{"prefix":"sbx_","sandbox":{"network":"deny"},"limits":{"memory_mb":4096,"cpu_seconds":3600}}`
	if err := os.WriteFile(filepath.Join(dir, "calcsbx.policy.json"), []byte(policy), 0o644); err != nil {
		t.Fatal(err)
	}
	hp := startHostProc(t, dir)
	if !strings.Contains(hp.logs.String(), "plugin.calcsbx: sandbox: Landlock ABI") {
		t.Fatalf("calcsbx did not start through the launcher:\n%s", hp.logs.String())
	}
	for _, s := range []struct{ plugin, method string }{{"calculator", "add"}, {"calcsbx", "sbx_add"}, {"calculator", "add"}, {"calcsbx", "sbx_add"}} {
		var ds []time.Duration
		for i := 0; i < 220; i++ {
			start := time.Now()
			if b := callBody(t, hp.url, s.method, `{"a":1,"b":2}`); !strings.Contains(b, `"result":3`) {
				t.Fatalf("%s: %s", s.method, b)
			}
			if i >= 20 {
				ds = append(ds, time.Since(start))
			}
		}
		sort.Slice(ds, func(i, j int) bool { return ds[i] < ds[j] })
		t.Logf("%-10s cold start (found -> ready) %v, median call latency %v (200 sequential /opentool/call)",
			s.plugin, coldStart(hp.logs.String(), s.plugin).Round(time.Millisecond), ds[len(ds)/2].Round(time.Microsecond))
	}
}

// coldStart returns the time from "plugin found" to the first "plugin
// ready" of plugin in a host log (startLogLine).
func coldStart(logs, plugin string) time.Duration {
	var at [2]time.Time // found, ready
	for _, line := range strings.Split(logs, "\n") {
		m := startLogLine.FindStringSubmatch(line)
		if m == nil || m[3] != plugin {
			continue
		}
		i := 0
		if m[2] == "plugin ready" {
			i = 1
		}
		if at[i].IsZero() {
			at[i], _ = time.Parse(time.RFC3339Nano, m[1])
		}
	}
	return at[1].Sub(at[0])
}

// TestSandboxConfinesDeclaredPlugins: with --sandbox, a declared MCP
// server and the commands of a NAME.tools.json are confined as a plugin
// process is, though no process of the host's stands between: the server
// is the host's own child running in place behind the sandbox launcher
// (no_new_privs, its policy's CPU limit), and a command cannot read
// outside what the sandbox allows (the kernel refuses).
func TestSandboxConfinesDeclaredPlugins(t *testing.T) {
	landlockOrSkip(t)
	outside := t.TempDir()
	secret := filepath.Join(outside, "secret.txt")
	writeTestFile(t, secret, "outside")
	dir := t.TempDir()
	msDeclare(t, dir, "notes")
	writeTestFile(t, filepath.Join(dir, "notes.policy.json"), `{"limits":{"cpu_seconds":600}}`)
	writeTestFile(t, filepath.Join(dir, "peek.tools.json"), `{"functions":[
		{"name":"status","description":"Its own status.","command":["cat","/proc/self/status"]},
		{"name":"secret","description":"Reads a file outside the sandbox.","command":["cat",`+strconv.Quote(secret)+`]}]}`)
	hp := startHostProc(t, dir, "--sandbox", "--sandbox-deny-network")

	srv := msServerPID(t, hp.url, hp.cmd.Process.Pid, "notes")
	exe, _ := os.Readlink(fmt.Sprintf("/proc/%d/exe", srv))
	status, _ := os.ReadFile(fmt.Sprintf("/proc/%d/status", srv))
	limits, _ := os.ReadFile(fmt.Sprintf("/proc/%d/limits", srv))
	if !strings.Contains(exe, "mcp-notes") || !strings.Contains(string(status), "NoNewPrivs:\t1") {
		t.Errorf("MCP server pid %d runs %s; NoNewPrivs set: %v", srv, exe, strings.Contains(string(status), "NoNewPrivs:\t1"))
	}
	if !strings.Contains(string(limits), "Max cpu time              600") {
		t.Errorf("MCP server's limits, want its policy's 600 s of CPU:\n%s", limits)
	}
	if b := callBody(t, hp.url, "status", `{}`); !strings.Contains(b, `NoNewPrivs:\t1`) {
		t.Errorf("a command of peek.tools.json is not confined: %s", b)
	}
	if b := callBody(t, hp.url, "secret", `{}`); strings.Contains(b, `"outside"`) || !strings.Contains(b, "Permission denied") {
		t.Errorf("a command read outside the sandbox: %s", b)
	}
}
