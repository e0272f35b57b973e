package host_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/opentool-host/opentool-host/host"
	"github.com/opentool-host/opentool-host/internal/testutil"
)

// declaredHost starts a watching host on dir whose MCP adapter is the
// "declared" test plugin, which serves the launch it is handed.
func declaredHost(t *testing.T, dir string, logs *logRecorder) *host.Host {
	t.Helper()
	adapter := testutil.Build(t, "./internal/testplugins/declared")
	return startHost(t, dir, func(c *host.Config) {
		c.Watch = true
		c.Adapter = []string{adapter}
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
	testutil.InstallPlugin(t, dir, "calculator", "./plugins/calculator")
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
	if alpha.Path != decl || alpha.State != host.StateReady || alpha.SHA256 == "" {
		t.Fatalf("alpha status = %+v", alpha)
	}

	// One server changed: only it is replaced; the other is touched.
	writeFile(t, dir, "tools.mcp.json", `{"mcpServers":{
		"alpha":{"command":"./srv","args":["--x","1"],"env":{"K":"v"}},
		"beta":{"url":"http://127.0.0.1:2/mcp"}}}`)
	testutil.Eventually(t, 15*time.Second, "beta replaced", func() bool {
		res, err := h.Call(context.Background(), "launch_beta", nil)
		return err == nil && strings.Contains(string(res), "127.0.0.1:2")
	})
	if now := pluginStatus(h, "alpha"); now.PID != alpha.PID {
		t.Fatalf("unchanged server restarted: pid %d → %d", alpha.PID, now.PID)
	}

	// A server declaring a name an executable has is refused; the
	// executable keeps it.
	writeFile(t, dir, "more.mcp.json", `{"mcpServers":{"calculator":{"command":"x"}}}`)
	logs.waitFor(t, 15*time.Second, "plugin refused", "more.mcp.json: calculator", "taken by opentool-plugin-calculator")
	if got := call(t, h, "add", `{"a":1,"b":2}`); got["result"] != 3.0 {
		t.Fatalf("add = %v", got)
	}

	// A broken declaration fails the plugin named after the file, with
	// the JSON path of the fault; the others keep serving.
	writeFile(t, dir, "broken.mcp.json", `{"mcpServers":{"x":{"command":"c","args":[1]}}}`)
	testutil.Eventually(t, 15*time.Second, "broken declaration reported", func() bool {
		st := pluginStatus(h, "broken")
		return st.State == host.StateFailed && strings.Contains(st.LastError, "$.mcpServers.x.args[0]: must be a string")
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
		if p.Name != "calculator" && p.Name != "broken" {
			t.Fatalf("plugin left after its declaration was removed: %+v", p)
		}
	}
}

func TestDeclaredServerWithoutAdapterFails(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, dir, "one.mcp.json", `{"mcpServers":{"one":{"command":"x"}}}`)
	h, err := host.New(host.Config{Dir: dir, Logger: testutil.Logger(t), StateDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = h.Close(context.Background()) })
	if err := h.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	if st := pluginStatus(h, "one"); st.State != host.StateFailed || !strings.Contains(st.LastError, "no adapter") {
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
