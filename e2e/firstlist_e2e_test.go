package e2e_test

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/opentool-host/opentool-host/testkit"
)

// connectMCPStdio runs `opentool-host mcp --dir dir extra...` (a state
// folder of its own unless extra gives --state-dir) and connects the Go
// SDK client to it without waiting for anything but initialize, as a
// desktop client does.
func connectMCPStdio(t *testing.T, dir string, extra ...string) (*mcp.ClientSession, *testkit.SyncBuffer) {
	t.Helper()
	return connectMCPStdioAs(t, mcp.NewClient(&mcp.Implementation{Name: "desktop", Version: "1"}, nil), nil, dir, extra...)
}

// connectMCPStdioAs is connectMCPStdio with client c and session
// options o (nil: the SDK's latest revision).
func connectMCPStdioAs(t *testing.T, c *mcp.Client, o *mcp.ClientSessionOptions, dir string, extra ...string) (*mcp.ClientSession, *testkit.SyncBuffer) {
	t.Helper()
	stderr := &testkit.SyncBuffer{}
	args := append([]string{"mcp", "--dir", dir, "--log-level", "info"}, extra...)
	if !slices.Contains(extra, "--state-dir") {
		args = append(args, "--state-dir", t.TempDir())
	}
	cmd := exec.Command(testkit.Build(t, "./cmd/opentool-host"), args...)
	cmd.Stderr = stderr
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cs, err := c.Connect(ctx, &mcp.CommandTransport{Command: cmd}, o)
	if err != nil {
		t.Fatalf("connect: %v\n%s", err, stderr.String())
	}
	t.Cleanup(func() {
		_ = cs.Close()
		if t.Failed() {
			t.Logf("mcp stderr:\n%s", stderr.String())
		}
	})
	return cs, stderr
}

// slowPlugin writes dir/opentool-plugin-NAME, a script that starts the
// plugin binary bin once the file gate exists.
func slowPlugin(t *testing.T, dir, name, bin, gate string) {
	t.Helper()
	script := "#!/bin/sh\nwhile [ ! -e " + gate + " ]; do sleep 0.05; done\nexec " + bin + "\n"
	if err := os.WriteFile(filepath.Join(dir, "opentool-plugin-"+name), []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
}

// TestMCPStdioFirstListIsComplete: a desktop client that lists once, right
// after initialize, gets every plugin's tools on its first tools/list,
// although one plugin is still starting when the list arrives (before,
// the first list held only the plugins up so far: often none), and its
// first call of that plugin's tool succeeds.
func TestMCPStdioFirstListIsComplete(t *testing.T) {
	dir := t.TempDir()
	testkit.InstallPlugin(t, dir, "mock", "./plugins/mock")
	gate := filepath.Join(t.TempDir(), "go")
	slowPlugin(t, dir, "calculator", testkit.Build(t, "./plugins/calculator"), gate)
	cs, _ := connectMCPStdio(t, dir)
	listed := make(chan []string, 1)
	go func() { listed <- toolNames(t, cs) }()
	// The list is asked while calculator cannot have started; it is let
	// go only now.
	if err := os.WriteFile(gate, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	names := <-listed
	for _, want := range []string{"add", "divide", "count", "create"} {
		if !slices.Contains(names, want) {
			t.Errorf("first tools/list lacks %s: %v", want, names)
		}
	}
	if got := structured(t, callTool(t, cs, "add", map[string]any{"a": 1.5, "b": 2}))["result"]; got != 3.5 {
		t.Errorf("add = %v, want 3.5", got)
	}
}

// TestMCPStdioFirstListBoundedByStartTimeout: a plugin that never
// finishes its start, and sorts first (so that it could own any name),
// holds the first list for about --start-timeout, not longer; the list
// then has every other plugin's tools (frontdoor's TestFirstListsBound
// checks the log line that names a late plugin).
func TestMCPStdioFirstListBoundedByStartTimeout(t *testing.T) {
	dir := t.TempDir()
	testkit.InstallPlugin(t, dir, "mock", "./plugins/mock")
	slowPlugin(t, dir, "aaastuck", "/bin/true", filepath.Join(t.TempDir(), "never"))
	cs, _ := connectMCPStdio(t, dir, "--start-timeout", "2s")
	begin := time.Now()
	names := toolNames(t, cs)
	if !slices.Contains(names, "create") {
		t.Errorf("the first list lacks mock's create: %v", names)
	}
	if took := time.Since(begin); took > 15*time.Second {
		t.Errorf("the first list took %v with --start-timeout 2s", took)
	}
}
