package e2e_test

import (
	"syscall"
	"testing"
	"time"

	"github.com/opentool-host/opentool-host/process/cgroup"
	"github.com/opentool-host/opentool-host/testkit"
)

// TestHostSIGKILLTakesSetsidDescendants: after a SIGKILL of the real
// host, a process the plugin started with setsid (outside the plugin's
// process group) dies too: the plugin gets its parent-death signal and
// pluginsdk kills the plugin's cgroup.
func TestHostSIGKILLTakesSetsidDescendants(t *testing.T) {
	cgroupsOrSkip(t)
	dir := t.TempDir()
	testkit.InstallPlugin(t, dir, "faulty", "./testkit/plugins/faulty")
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
	testkit.Eventually(t, 3*time.Second, "the setsid child dies after host SIGKILL", func() bool { return zombieOrGone(pid) })
	t.Logf("setsid child %d gone %v after host SIGKILL", pid, time.Since(killed).Round(time.Millisecond))
}

// TestHostSIGKILLTakesSandboxedSetsidDescendants: the same under
// --sandbox, where Landlock keeps the plugin out of cgroupfs so it cannot
// kill its own cgroup: the host's keeper kills it (issue 21, finding 2).
// Before the keeper, the setsid child survived until the next host start.
func TestHostSIGKILLTakesSandboxedSetsidDescendants(t *testing.T) {
	landlockOrSkip(t)
	dir := t.TempDir()
	testkit.InstallPlugin(t, dir, "faulty", "./testkit/plugins/faulty")
	hp := startHostProc(t, dir, "--sandbox")
	code, m := rpc(t, hp.url, `{"jsonrpc":"2.0","method":"spawnSetsid","id":1}`)
	res, _ := m["result"].(map[string]any)
	if code != 200 || res == nil {
		t.Fatalf("spawnSetsid under --sandbox: %d %v\n%s", code, m, hp.logs.String())
	}
	pid := int(res["pid"].(float64))
	t.Cleanup(func() { _ = syscall.Kill(pid, syscall.SIGKILL) })
	plugin := pluginPIDs(t, hp.url)["faulty"]
	if zombieOrGone(pid) || zombieOrGone(plugin) {
		t.Fatalf("setsid child %d or plugin %d not running", pid, plugin)
	}
	if err := hp.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	<-hp.done
	killed := time.Now()
	testkit.Eventually(t, 5*time.Second, "the sandboxed plugin's setsid child dies after host SIGKILL", func() bool { return zombieOrGone(pid) && zombieOrGone(plugin) })
	t.Logf("sandboxed plugin %d and its setsid child %d gone %v after host SIGKILL", plugin, pid, time.Since(killed).Round(time.Millisecond))
}

// cgroupsOrSkip skips t where this host cannot make cgroups.
func cgroupsOrSkip(t *testing.T) {
	t.Helper()
	r, err := cgroup.New()
	if err != nil {
		t.Skipf("cgroup v2 unavailable here (%v)", err)
	}
	_ = r.Close()
}
