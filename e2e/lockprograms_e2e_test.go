package e2e_test

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/opentool-host/opentool-host/protocol/lockfile"
	"github.com/opentool-host/opentool-host/testkit"
)

// TestLockPinsDeclaredPrograms: `lock` pins the programs a NAME.tools.json
// command and a NAME.mcp.json server run (resolved files and their
// sha256), and --locked refuses a swapped one, naming its path: the
// command at its next run, the server at its next start; /health says
// "pinned" only while everything the plugin runs is pinned (issue 21,
// finding 3).
func TestLockPinsDeclaredPrograms(t *testing.T) {
	dir := t.TempDir()
	helper := filepath.Join(dir, "helper.sh")
	writeExec := func(path, body string) { writeAtomic(t, path, body, 0o755) }
	writeExec(helper, "#!/bin/sh\nprintf v1\n")
	if err := os.WriteFile(filepath.Join(dir, "helper.tools.json"), []byte(`{"functions":[{"name":"say","description":"Says its version.","parameters":[],"command":["./helper.sh"]},`+
		`{"name":"today","description":"The date.","parameters":[],"command":["date","-u"]}]}`), 0o644); err != nil {
		t.Fatal(err)
	}
	server := filepath.Join(dir, "notes-server")
	testkit.CopyFile(t, testkit.Build(t, "./examples/mcp-notes"), server, 0o755)
	if err := os.WriteFile(filepath.Join(dir, "notes.mcp.json"), []byte(`{"mcpServers":{"notes":{"command":"./notes-server"}}}`), 0o644); err != nil {
		t.Fatal(err)
	}

	lockCmd(t, "--dir", dir)
	lock, err := lockfile.Read(filepath.Join(dir, lockfile.Name))
	if err != nil {
		t.Fatal(err)
	}
	date := ""
	for p := range lock.Programs["helper"] {
		if strings.HasSuffix(p, "/date") {
			date = p
		}
	}
	if lock.Programs["helper"][helper] == "" || date == "" || lock.Programs["notes"][server] == "" {
		t.Fatalf("lock programs = %v, want helper.sh, date (resolved in PATH) and notes-server", lock.Programs)
	}

	hp := startHostProc(t, dir, "--locked")
	if st := healthOf(t, hp.url); st["helper"].Lock != "pinned" || st["notes"].Lock != "pinned" {
		t.Fatalf("health = %+v, want both pinned", st)
	}
	if _, m := rpc(t, hp.url, `{"jsonrpc":"2.0","method":"say","id":1}`); m["result"] == nil || !strings.Contains(m["result"].(map[string]any)["stdout"].(string), "v1") {
		t.Fatalf("say: %v", m)
	}

	// The command's program swapped: its next run is refused.
	writeExec(helper, "#!/bin/sh\nprintf evil\n")
	_, m := rpc(t, hp.url, `{"jsonrpc":"2.0","method":"say","id":2}`)
	if msg, _ := m["error"].(map[string]any)["message"].(string); !strings.Contains(msg, helper+" changed") {
		t.Errorf("say after helper.sh changed: %v, want a refusal naming %s", m, helper)
	}
	if res, _ := m["result"].(map[string]any); res["stdout"] == "evil" {
		t.Error("the swapped program ran")
	}

	// The server's binary swapped, then the server restarted (killed):
	// the host refuses to start it again, naming the path.
	testkit.CopyFile(t, testkit.Build(t, "./testkit/plugins/faulty"), server, 0o755)
	pids := pluginPIDs(t, hp.url)
	if err := syscall.Kill(pids["notes"], syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	testkit.Eventually(t, 20*time.Second, "notes refused with the server's path", func() bool {
		st := healthOf(t, hp.url)["notes"]
		return strings.Contains(st.LastError, server) && st.Lock != "pinned"
	})
}
