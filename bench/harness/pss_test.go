package harness

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/opentool-host/opentool-host/testkit/base"
)

// TestTreePSSSplitsByExecutable runs a real process tree: a shell whose
// child shell runs a renamed copy of sleep (a grandchild), and a tail
// that calls itself /usr/bin/sleep (argv[0]). TreePSS must count the copy
// as the program, by its file, through two levels, and the impostor and
// the shells as the rest, each with a PSS.
func TestTreePSSSplitsByExecutable(t *testing.T) {
	sleepBin, err := exec.LookPath("sleep")
	if err != nil {
		t.Skip("no sleep:", err)
	}
	for _, tool := range []string{"bash", "tail"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("no %s: %v", tool, err)
		}
	}
	sleepBin, _ = filepath.EvalSymlinks(sleepBin)
	worker, err := CopyExecutable(sleepBin, filepath.Join(t.TempDir(), "worker"))
	if err != nil {
		t.Fatal(err)
	}
	prog, err := NewProgram(sleepBin)
	if err != nil {
		t.Fatal(err)
	}
	script := `bash -c "` + worker + ` 60 & wait" & (exec -a ` + sleepBin + ` tail -f /dev/null) & wait`
	cmd := exec.Command("bash", "-c", script)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		_ = cmd.Wait()
	})
	root := cmd.Process.Pid
	// Ready: four processes, of which only the two shells still run bash
	// (a forked child runs bash until it execs).
	var tree []int
	if _, err := base.Poll(10*time.Second, 5*time.Millisecond, func() bool {
		tree = ProcTree(root)
		shells := 0
		for _, pid := range tree {
			if exe, _ := os.Readlink("/proc/" + strconv.Itoa(pid) + "/exe"); filepath.Base(exe) == "bash" {
				shells++
			}
		}
		return len(tree) == 4 && shells == 2
	}); err != nil {
		t.Fatalf("the process tree never formed: %v (last %v)", err, tree)
	}
	if tree[0] != root {
		t.Fatalf("ProcTree(%d) = %v, want the root first", root, tree)
	}
	m, err := TreePSS(root, prog)
	if err != nil {
		t.Fatal(err)
	}
	if m.Programs != 1 || m.Own != 3 {
		t.Fatalf("TreePSS = %+v, want 1 process running sleep (the renamed copy) and 3 others (two shells and tail calling itself sleep)", m)
	}
	if m.ProgramKiB <= 0 || m.OwnKiB <= 0 {
		t.Fatalf("TreePSS = %+v, want a PSS on both sides", m)
	}
	if m.ProgramRSSKiB < m.ProgramKiB || m.OwnRSSKiB < m.OwnKiB {
		t.Fatalf("TreePSS = %+v, want an RSS at least the PSS on both sides", m)
	}
	if _, err := TreePSS(-1, prog); err == nil {
		t.Fatal("TreePSS of no process: no error")
	}
}
