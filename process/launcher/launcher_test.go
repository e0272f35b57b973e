package launcher_test

import (
	"bufio"
	"os"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/opentool-host/opentool-host/process/launcher"
)

// TestEnv: the one allow-list keeps the base names, LC_*, the allowed
// names and the plugin's own variables (renamed), and never a dropped
// name nor a host setting by a prefix.
func TestEnv(t *testing.T) {
	environ := []string{"PATH=/bin", "HOME=/h", "LC_ALL=C", "OPENTOOL_API_KEYS=k", "OPENTOOL_FILES_X=host", "SECRET=s",
		"OPENTOOL__FILES__ROOT=/r", "OPENTOOL__FILES__=empty", "OPENTOOL__FILES___X=underscore", "OPENTOOL__OTHER__ROOT=/o", "NAMED=n", "DROPPED=d", "noequals", "=x"}
	got := launcher.Env(environ, launcher.Allow{Names: []string{"NAMED", "DROPPED"}, Plugin: "files", Drop: []string{"DROPPED"}})
	want := []string{"PATH=/bin", "HOME=/h", "LC_ALL=C", "NAMED=n", "OPENTOOL_FILES_ROOT=/r"}
	if !slices.Equal(got, want) {
		t.Fatalf("Env = %v, want %v", got, want)
	}
	// KEY is exact: task does not get task-store's, nor task-store
	// task's; KEY ends at the first "__" (no plugin name holds one), so
	// OPENTOOL__A__B__F is a's, and a plugin whose KEY ends in "_" has
	// its own.
	environ = []string{"OPENTOOL__TASK__A=1", "OPENTOOL__TASK_STORE__B=2", "OPENTOOL__MY_TOOL__C=3", "OPENTOOL__MY_TOOLD=4",
		"OPENTOOL__A___E=5", "OPENTOOL__A__B__F=6", "OPENTOOL_TASK_G=7"}
	for name, want := range map[string][]string{
		"task": {"OPENTOOL_TASK_A=1"}, "task-store": {"OPENTOOL_TASK_STORE_B=2"}, "my-tool": {"OPENTOOL_MY_TOOL_C=3"},
		"a": {"OPENTOOL_A_B__F=6"}, "a_": {"OPENTOOL_A__E=5"},
	} {
		if got := launcher.PluginVars(environ, name); !slices.Equal(got, want) {
			t.Errorf("PluginVars(%s) = %v, want %v", name, got, want)
		}
	}
	if got := launcher.Granted([]string{"PATH=/bin", "B=1", "A=2", "B=3", "LC_X=1"}); !slices.Equal(got, []string{"A", "B"}) {
		t.Errorf("Granted = %v", got)
	}
	for _, n := range []string{"OPENTOOL_API_KEYS", "OPENTOOL_TASK_STORE", "OPENTOOL__FILES__ROOT"} {
		if err := launcher.CheckNames("plugin env", []string{"OK", n}); err == nil || !strings.Contains(err.Error(), "host's namespace") {
			t.Errorf("CheckNames(%s) = %v", n, err)
		}
	}
}

// start runs a shell script through the launcher and returns the process
// and the pid of the child it reports on its first stdout line.
func start(t *testing.T, script string, spec launcher.Spec) (*launcher.Process, int) {
	t.Helper()
	spec.Path, spec.Args = "/bin/sh", []string{"-c", script}
	cmd, err := launcher.New(spec)
	if err != nil {
		t.Fatal(err)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	p, err := cmd.Start()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = p.Kill(); _ = p.Wait() })
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil {
		t.Fatal(err)
	}
	child, err := strconv.Atoi(strings.TrimSpace(line))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = syscall.Kill(child, syscall.SIGKILL) })
	return p, child
}

// alive reports whether pid runs (a zombie does not).
func alive(pid int) bool {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return false
	}
	s := string(b)
	return !strings.HasPrefix(strings.TrimSpace(s[strings.LastIndexByte(s, ')')+1:]), "Z")
}

// TestKillTakesTheGroup: every process leads its own group, and Kill
// takes the children that ignore SIGTERM along; the environment is only
// what the Spec gives.
func TestKillTakesTheGroup(t *testing.T) {
	if _, err := os.Stat("/proc/self/stat"); err != nil {
		t.Skip("needs /proc")
	}
	p, child := start(t, `trap "" TERM; sleep 600 & echo $!; [ -z "$HOME" ] || exit 9; wait`, launcher.Spec{Env: []string{"PATH=/usr/bin:/bin"}})
	if pgid, _ := syscall.Getpgid(p.Pid()); pgid != p.Pid() {
		t.Fatalf("pgid = %d, want the process's own %d", pgid, p.Pid())
	}
	if err := p.Kill(); err != nil {
		t.Fatal(err)
	}
	_ = p.Wait()
	for deadline := time.Now().Add(5 * time.Second); alive(child); time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("child %d outlived Kill", child)
		}
	}
	if st := p.Status(); st != "signal: killed" {
		t.Errorf("Status = %q", st)
	}
}

// TestTerminateEscalates: a process that ignores SIGTERM is SIGKILLed
// after the second grace; one that exits when asked is not.
func TestTerminateEscalates(t *testing.T) {
	p, _ := start(t, `trap "" TERM; echo $$; while :; do sleep 0.05; done`, launcher.Spec{Env: []string{"PATH=/usr/bin:/bin"}})
	begin := time.Now()
	err := p.Terminate(100 * time.Millisecond)
	if err == nil || p.Status() != "signal: killed" {
		t.Fatalf("Terminate = %v, status %q: want killed", err, p.Status())
	}
	if d := time.Since(begin); d < 200*time.Millisecond {
		t.Errorf("killed after %v, before two graces", d)
	}
	p, _ = start(t, `echo $$; exit 0`, launcher.Spec{})
	if err := p.Terminate(5 * time.Second); err != nil || p.Status() != "exit status 0" {
		t.Fatalf("Terminate = %v, status %q", err, p.Status())
	}
}
