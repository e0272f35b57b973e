package host_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/opentool-host/opentool-host/host"
	"github.com/opentool-host/opentool-host/host/core"
	"github.com/opentool-host/opentool-host/testkit"
	standin "github.com/opentool-host/opentool-host/testkit/plugins/declared"
)

// declaredHost starts a watching host on dir whose declared plugins are
// served by the stand-in of testkit/plugins/declared, which serves
// the launch it is handed.
func declaredHost(t *testing.T, dir string, logs *logRecorder) *host.Host {
	t.Helper()
	return startHost(t, dir, func(c *core.Config) {
		c.Watch = true
		c.Declared = standin.Serve
		if logs != nil {
			c.Logger = logs.logger
		}
	})
}

// writeFile writes data to dir/name (0644: a declaration needs no exec bit).
func writeFile(t *testing.T, dir, name, data string) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, []byte(data), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// waitFunction waits, on h.Changed rather than by polling, until fn's
// presence is want.
func waitFunction(t *testing.T, h *host.Host, fn string, want bool) {
	t.Helper()
	deadline := time.After(15 * time.Second)
	for {
		ch := h.Changed()
		if (h.Function(fn) != nil) == want {
			return
		}
		select {
		case <-ch:
		case <-deadline:
			t.Fatalf("function %q served = %v after 15s; plugins: %+v", fn, !want, h.Plugins())
		}
	}
}

func TestDeclaredServersSupervised(t *testing.T) {
	dir := t.TempDir()
	testkit.InstallPlugin(t, dir, "calculator", "./plugins/calculator")
	decl := writeFile(t, dir, "tools.mcp.json", `{"mcpServers":{
		"alpha":{"command":"./srv","args":["--x","1"],"env":{"K":"v"}},
		"beta":{"url":"http://127.0.0.1:1/mcp","headers":{"Authorization":"Bearer t"}},
		"gamma":{"command":"gamma","disabled":true}}}`)
	logs := newLogRecorder(t)
	h := declaredHost(t, dir, logs)

	got := call(t, h, "launch_alpha", "")
	abs, _ := filepath.Abs(dir)
	if got["name"] != "alpha" || got["dir"] != abs || got["command"] != "./srv" || got["env_var_set"] != true {
		t.Fatalf("launch_alpha = %v", got)
	}
	if got := call(t, h, "launch_beta", ""); got["url"] != "http://127.0.0.1:1/mcp" {
		t.Fatalf("launch_beta = %v", got)
	}
	if st := pluginStatus(h, "gamma"); st.Name != "" {
		t.Fatalf("disabled server runs: %+v", st)
	}
	alpha := pluginStatus(h, "alpha")
	instance := got["instance"]
	if alpha.Path != decl || alpha.State != core.StateReady || alpha.SHA256 == "" {
		t.Fatalf("alpha status = %+v", alpha)
	}

	// One server changed: only it is replaced; the other is touched.
	writeFile(t, dir, "tools.mcp.json", `{"mcpServers":{
		"alpha":{"command":"./srv","args":["--x","1"],"env":{"K":"v"}},
		"beta":{"url":"http://127.0.0.1:2/mcp"}}}`)
	testkit.Eventually(t, 15*time.Second, "beta replaced", func() bool {
		res, err := h.Call(context.Background(), "launch_beta", nil)
		return err == nil && strings.Contains(string(res), "127.0.0.1:2")
	})
	if now := call(t, h, "launch_alpha", "")["instance"]; now != instance {
		t.Fatalf("unchanged server restarted: instance %v → %v", instance, now)
	}

	// A server declaring a name an executable has is refused; the
	// executable keeps it.
	writeFile(t, dir, "more.mcp.json", `{"mcpServers":{"calculator":{"command":"x"}}}`)
	logs.waitFor(t, 15*time.Second, "plugin refused", "more.mcp.json: calculator", "taken by opentool-plugin-calculator")
	if got := call(t, h, "add", `{"a":1,"b":2}`); got["result"] != 3.0 {
		t.Fatalf("add = %v", got)
	}

	// A bad entry fails its server alone, with the JSON path of the
	// fault; the file's other server and the other files keep serving.
	writeFile(t, dir, "mixed.mcp.json", `{"mcpServers":{"x":{"command":"c","args":[1]},"y":{"command":"./y"}}}`)
	testkit.Eventually(t, 15*time.Second, "bad entry reported", func() bool {
		st := pluginStatus(h, "x")
		return st.State == core.StateFailed && strings.Contains(st.LastError, "declaration mixed.mcp.json:1:43: $.mcpServers.x.args[0]: must be a string")
	})
	waitFunction(t, h, "launch_y", true)
	// A file that is not JSON fails the plugin named after the file, at
	// its line and column.
	writeFile(t, dir, "broken.mcp.json", `{"mcpServers":{"x":`)
	testkit.Eventually(t, 15*time.Second, "broken declaration reported", func() bool {
		st := pluginStatus(h, "broken")
		return st.State == core.StateFailed && strings.Contains(st.LastError, "declaration broken.mcp.json:1:20: unexpected end of JSON input")
	})

	// A server left out of the file is removed; removing the file removes
	// the rest.
	writeFile(t, dir, "tools.mcp.json", `{"mcpServers":{"alpha":{"command":"./srv","args":["--x","1"],"env":{"K":"v"}}}}`)
	waitFunction(t, h, "launch_beta", false)
	if h.Function("launch_alpha") == nil {
		t.Fatal("alpha gone with beta")
	}
	if err := os.Remove(decl); err != nil {
		t.Fatal(err)
	}
	waitFunction(t, h, "launch_alpha", false)
	for _, p := range h.Plugins() {
		if p.Name != "calculator" && p.Name != "broken" && p.Name != "x" && p.Name != "y" {
			t.Fatalf("plugin left after its declaration was removed: %+v", p)
		}
	}
}

func TestDeclaredPluginNotServedWithoutDeclared(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, dir, "one.mcp.json", `{"mcpServers":{"one":{"command":"x"}}}`)
	h, err := host.New(core.Config{Dir: dir, Logger: testkit.Logger(t), StateDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = h.Close(context.Background()) })
	if err := h.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	if st := pluginStatus(h, "one"); st.State != core.StateFailed || !strings.Contains(st.LastError, "this host serves none") {
		t.Fatalf("status = %+v", st)
	}
}

func TestDocumentChangeServedWithoutRestart(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, dir, "d.mcp.json", `{"mcpServers":{"d":{"command":"x"}}}`)
	logs := newLogRecorder(t)
	h := declaredHost(t, dir, logs)
	before := pluginStatus(h, "d")

	if got := call(t, h, "grow_d", `{"name":"extra"}`); got["grown"] != "extra" {
		t.Fatalf("grow_d = %v", got)
	}
	waitFunction(t, h, "extra", true)
	if got := call(t, h, "extra", ""); got["grown"] != "extra" {
		t.Fatalf("extra = %v", got)
	}
	if now := pluginStatus(h, "d"); now.PID != before.PID || now.Restarts != 0 {
		t.Fatalf("document change restarted the plugin: %+v → %+v", before, now)
	}

	// A changed document that is invalid is rejected; the previous one
	// keeps serving.
	call(t, h, "bad_d", "")
	logs.waitFor(t, 15*time.Second, "changed document that was rejected", "not a valid name!")
	if got := call(t, h, "extra", ""); got["grown"] != "extra" {
		t.Fatalf("extra after a rejected change = %v", got)
	}
}

func TestDesktopConfigs(t *testing.T) {
	dir := t.TempDir()
	t.Setenv("OPENTOOL_TEST_DESKTOP_TOKEN", "s3cret")
	// A drop-in: a Claude Desktop file as it is, names with a dot, a bad
	// entry, one that reads the host's environment, one disabled.
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	writeFile(t, dir, "desk.mcp.json", `{"globalShortcut":"Ctrl+Space","mcpServers":{
		"self":{"command":`+strconv.Quote(self)+`,"args":["mcp"]},
		"my.server":{"command":"./a","autoApprove":[]},
		"shared.name":{"command":"./from-drop-in"},
		"bad":{"command":"./b","args":[1]},
		"leak":{"command":"./c","env":{"T":"${env:OPENTOOL_TEST_DESKTOP_TOKEN}"}},
		"off":{"command":"./d","disabled":true}}}`)
	// Not read from the plugins folder under a desktop client's name.
	writeFile(t, dir, "claude_desktop_config.json", `{"mcpServers":{"ignored":{"command":"./x"}}}`)
	// The operator's file, outside the folder: it may read the host's
	// environment, and its names win over the folder's.
	opDir := filepath.Join(t.TempDir(), ".vscode")
	if err := os.Mkdir(opDir, 0o755); err != nil {
		t.Fatal(err)
	}
	op := writeFile(t, opDir, "mcp.json", `{
		// VS Code's own file, as it is
		"inputs": [],
		"servers": {
			"op": {"type": "stdio", "command": "./srv", "args": ["${workspaceFolder}"], "env": {"T": "${env:OPENTOOL_TEST_DESKTOP_TOKEN}"}},
			"shared.name": {"command": "./from-operator"},
			"remote": {"type": "sse", "url": "http://127.0.0.1:1/sse"},
		},
	}`)
	logs := newLogRecorder(t)
	h := startHost(t, dir, func(c *core.Config) {
		c.Declared, c.Logger, c.MCPConfigs = standin.Serve, logs.logger, []string{op}
	})

	if got := call(t, h, "launch_my_server", ""); got["name"] != "my_server" || got["command"] != "./a" {
		t.Fatalf("launch_my_server = %v", got)
	}
	got := call(t, h, "launch_op", "")
	if got["dir"] != opDir || fmt.Sprint(got["args"]) != "["+filepath.Dir(opDir)+"]" || fmt.Sprint(got["env"]) != "map[T:s3cret]" {
		t.Fatalf("launch_op = %v (want ${workspaceFolder} and ${env:...} expanded)", got)
	}
	if got := call(t, h, "launch_remote", ""); got["transport"] != "sse" || got["url"] != "http://127.0.0.1:1/sse" {
		t.Fatalf("launch_remote = %v", got)
	}
	if got := call(t, h, "launch_shared_name", ""); got["command"] != "./from-operator" {
		t.Fatalf("launch_shared_name = %v: the operator's file must keep the name", got)
	}
	logs.waitFor(t, 5*time.Second, "plugin refused", "desk.mcp.json: shared_name", "taken by mcp.json")
	for name, want := range map[string]string{
		"bad":  "declaration desk.mcp.json:5:34: $.mcpServers.bad.args[0]: must be a string",
		"self": "declaration desk.mcp.json: $.mcpServers.self.command: runs this opentool-host itself",
		"leak": "declaration desk.mcp.json: $.mcpServers.leak.env.T: ${env:OPENTOOL_TEST_DESKTOP_TOKEN}: a drop-in file of the plugins folder may not read the host's environment",
	} {
		if st := pluginStatus(h, name); st.State != core.StateFailed || !strings.HasPrefix(st.LastError, want) {
			t.Errorf("%s: %s %q, want failed %q", name, st.State, st.LastError, want)
		}
	}
	for _, name := range []string{"off", "ignored", "my.server"} {
		if st := pluginStatus(h, name); st.Name != "" {
			t.Errorf("plugin %s is there: %+v", name, st)
		}
	}
	logs.waitFor(t, 5*time.Second, "members the host does not use ignored", "desk.mcp.json", `$.globalShortcut, $.mcpServers[\"my.server\"].autoApprove`, "disabled=off", "my.server → my_server")
	logs.waitFor(t, 5*time.Second, "members the host does not use ignored", "mcp.json", "$.inputs")
	logs.waitFor(t, 5*time.Second, "not reading file in plugins dir", "claude_desktop_config.json", "--mcp-config")
}

func TestMCPConfigsRefused(t *testing.T) {
	dir := t.TempDir()
	outside := t.TempDir()
	good := writeFile(t, outside, "good.json", `{"mcpServers":{}}`)
	for _, tc := range []struct {
		configs []string
		want    string
	}{
		{[]string{writeFile(t, dir, "in.json", `{"mcpServers":{}}`)}, "is in the plugins folder"},
		{[]string{"rel.json"}, "must be an absolute path"},
		{[]string{filepath.Join(outside, "nope.json")}, "no such file"},
		{[]string{writeFile(t, outside, "bad.json", `{"servers":[]}`)}, "$.servers: must be an object"},
		{[]string{good, good}, "is given twice"},
	} {
		_, err := host.New(core.Config{Dir: dir, StateDir: t.TempDir(), MCPConfigs: tc.configs})
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("New(MCPConfigs %q) = %v, want %q", tc.configs, err, tc.want)
		}
	}
}

// TestPluginNameStaysWithItsFileAcrossRestarts: a declaration dropped in
// later that declares a server under a plugin name another file serves
// is refused while the host runs and after a restart alike; before, the
// restart gave the name to the file first by name (aaa.mcp.json), which
// then ran under the real plugin's policy and secrets.
func TestPluginNameStaysWithItsFileAcrossRestarts(t *testing.T) {
	dir, state := t.TempDir(), t.TempDir()
	writeFile(t, dir, "vault.mcp.json", `{"mcpServers":{"vault":{"command":"./real"}}}`)
	start := func(logs *logRecorder) *host.Host {
		return startHost(t, dir, func(c *core.Config) {
			c.Watch, c.Declared, c.StateDir, c.Logger = true, standin.Serve, state, logs.logger
		})
	}
	h := start(newLogRecorder(t))
	if got := call(t, h, "launch_vault", "")["command"]; got != "./real" {
		t.Fatalf("launch_vault runs %v, want ./real", got)
	}
	if err := h.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	writeFile(t, dir, "aaa.mcp.json", `{"mcpServers":{"vault":{"command":"./evil"},"other":{"command":"./other"}}}`)
	logs := newLogRecorder(t)
	h = start(logs)
	if got := call(t, h, "launch_vault", "")["command"]; got != "./real" {
		t.Fatalf("after a restart launch_vault runs %v, want ./real: the dropped-in aaa.mcp.json took the name", got)
	}
	if st := pluginStatus(h, "vault"); !strings.HasSuffix(st.Path, "vault.mcp.json") {
		t.Errorf("vault is declared by %s, want vault.mcp.json", st.Path)
	}
	if got := call(t, h, "launch_other", "")["command"]; got != "./other" {
		t.Errorf("aaa.mcp.json's own server: %v, want ./other served", got)
	}
	refused := false
	for _, line := range logs.all() {
		refused = refused || (strings.Contains(line, "plugin refused") && strings.Contains(line, "taken by vault.mcp.json"))
	}
	if !refused {
		t.Errorf("no log line refusing aaa.mcp.json's vault: %q", logs.all())
	}
}
