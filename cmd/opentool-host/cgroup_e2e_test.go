package main_test

import (
	"syscall"
	"testing"
	"time"

	"github.com/opentool-host/opentool-host/internal/cgroup"
	"github.com/opentool-host/opentool-host/internal/testutil"
)

// TestHostSIGKILLTakesSetsidDescendants: after a SIGKILL of the real
// host, a process the plugin started with setsid (outside the plugin's
// process group) dies too: the plugin gets its parent-death signal and
// pluginsdk kills the plugin's cgroup.
func TestHostSIGKILLTakesSetsidDescendants(t *testing.T) {
	if r, err := cgroup.New(); err != nil {
		t.Skipf("cgroup v2 unavailable here (%v)", err)
	} else {
		_ = r.Close()
	}
	dir := t.TempDir()
	testutil.InstallPlugin(t, dir, "faulty", "./internal/testplugins/faulty")
	hp := startHostProc(t, dir)
	code, m := rpc(t, hp.url, `{"jsonrpc":"2.0","method":"spawnSetsid","id":1}`)
	res, _ := m["result"].(map[string]any)
	if code != 200 || res == nil {
		t.Fatalf("spawnSetsid: %d %v", code, m)
	}
	pid := int(res["pid"].(float64))
	t.Cleanup(func() { _ = syscall.Kill(pid, syscall.SIGKILL) })
	if zombieOrGone(pid) {
		t.Fatalf("setsid child %d not running", pid)
	}
	if err := hp.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	<-hp.done
	killed := time.Now()
	testutil.Eventually(t, 3*time.Second, "the setsid child dies after host SIGKILL", func() bool { return zombieOrGone(pid) })
	t.Logf("setsid child %d gone %v after host SIGKILL", pid, time.Since(killed).Round(time.Millisecond))
}
