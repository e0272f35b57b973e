package e2e_test

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/opentool-host/opentool-host/process/keeper"
	"github.com/opentool-host/opentool-host/testkit"
)

// TestHostSIGKILLTakesStubbornPlugin (issue 21, finding 2): a plugin that
// clears its parent-death signal, turns pluginsdk's parent watch off,
// ignores SIGTERM and has a child that ignores it too is gone, child
// included, within 5 s of a SIGKILL of the real host: with cgroups (the
// keeper kills the host's cgroup folder) and without (--no-cgroups: the
// keeper kills the plugin's process group). Nothing here depends on the
// plugin's cooperation; before the keeper both survived. The keeper is
// the small keeper program beside the host's binary (as make host and
// make install put it), and the host's binary itself when it lies alone
// (lone): each mode checks which one runs.
func TestHostSIGKILLTakesStubbornPlugin(t *testing.T) {
	for _, mode := range []struct {
		name  string
		flags []string
		lone  bool
	}{{"cgroups", nil, false}, {"no-cgroups", []string{"--no-cgroups"}, false},
		{"lone-binary-cgroups", nil, true}, {"lone-binary-no-cgroups", []string{"--no-cgroups"}, true}} {
		t.Run(mode.name, func(t *testing.T) {
			if mode.flags == nil {
				cgroupsOrSkip(t)
			}
			dir := t.TempDir()
			testkit.InstallPlugin(t, dir, "stubborn", "./testkit/plugins/stubborn")
			bin, wantKeeper := testkit.Build(t, "./cmd/opentool-host"), keeper.Program
			if mode.lone {
				bin = filepath.Join(t.TempDir(), "opentool-host")
				testkit.CopyFile(t, testkit.Build(t, "./cmd/opentool-host"), bin, 0o755)
				wantKeeper = "opentool-host"
			}
			hp := startHostProcAs(t, hostLaunch{bin: bin}, dir, "serving:", mode.flags...)
			var keeperPID int
			testkit.Eventually(t, 10*time.Second, "the host starts its keeper", func() bool {
				keeperPID = keeperOf(hp.cmd.Process.Pid)
				return keeperPID > 0
			})
			if exe, err := os.Readlink(fmt.Sprintf("/proc/%d/exe", keeperPID)); err != nil || filepath.Base(exe) != wantKeeper {
				t.Fatalf("the keeper %d runs %q (%v), want %s", keeperPID, exe, err, wantKeeper)
			}
			// The keeper ignores a terminal's signals: once it says so
			// (SigIgn), they are dropped as they are sent, and it is
			// still there to take the plugin down below.
			testkit.Eventually(t, 10*time.Second, "the keeper ignores SIGHUP, SIGINT, SIGTERM and SIGPIPE", func() bool {
				return ignoredSignals(keeperPID)&keeperIgnores == keeperIgnores
			})
			for _, sig := range []syscall.Signal{syscall.SIGHUP, syscall.SIGINT, syscall.SIGTERM} {
				if err := syscall.Kill(keeperPID, sig); err != nil {
					t.Fatalf("%v to the keeper: %v", sig, err)
				}
			}
			code, m := rpc(t, hp.url, `{"jsonrpc":"2.0","method":"harden","id":1}`)
			res, _ := m["result"].(map[string]any)
			if code != 200 || res == nil {
				t.Fatalf("harden: %d %v\n%s", code, m, hp.logs.String())
			}
			plugin, child := int(res["pid"].(float64)), int(res["child"].(float64))
			t.Cleanup(func() { _ = syscall.Kill(child, syscall.SIGKILL); _ = syscall.Kill(plugin, syscall.SIGKILL) })
			// The plugin really ignores SIGTERM now: the kernel drops an
			// ignored signal when it is sent, so after kill(2) returns both
			// still run.
			_ = syscall.Kill(-plugin, syscall.SIGTERM)
			if zombieOrGone(plugin) || zombieOrGone(child) {
				t.Fatalf("plugin %d or child %d died of SIGTERM: the test proves nothing", plugin, child)
			}
			if err := hp.cmd.Process.Signal(syscall.SIGKILL); err != nil {
				t.Fatal(err)
			}
			<-hp.done
			killed := time.Now()
			testkit.Eventually(t, 5*time.Second, "the stubborn plugin and its child die after host SIGKILL", func() bool {
				return zombieOrGone(plugin) && zombieOrGone(child)
			})
			t.Logf("stubborn plugin %d and child %d gone %v after host SIGKILL", plugin, child, time.Since(killed).Round(time.Millisecond))
		})
	}
}

// keeperIgnores is the mask of SigIgn (/proc/PID/status) of the signals
// a keeper ignores: SIGHUP, SIGINT, SIGPIPE and SIGTERM.
const keeperIgnores = 1<<(syscall.SIGHUP-1) | 1<<(syscall.SIGINT-1) | 1<<(syscall.SIGPIPE-1) | 1<<(syscall.SIGTERM-1)

// ignoredSignals returns the mask of the signals pid ignores (SigIgn of
// /proc/PID/status, bit N-1 for signal N), 0 when it cannot be read.
func ignoredSignals(pid int) uint64 {
	b, _ := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "SigIgn:"); ok {
			n, _ := strconv.ParseUint(strings.TrimSpace(v), 16, 64)
			return n
		}
	}
	return 0
}
