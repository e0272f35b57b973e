package launcher_test

import (
	"fmt"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/opentool-host/opentool-host/process/keeper"
	"github.com/opentool-host/opentool-host/process/launcher"
)

// keeperArg as the first argument makes the test binary the keeper (as
// `opentool-host keeper`): the keeper's environment is the launcher's
// allow-list, so no test variable reaches it.
const keeperArg = "keeper-test-role"

func TestMain(m *testing.M) {
	if len(os.Args) > 1 && os.Args[1] == keeperArg {
		keeper.Run(os.Stdin, os.Args[len(os.Args)-1])
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// gone reports whether pid has exited (a zombie counts: its parent has
// not reaped it yet).
func gone(pid int) bool {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return true
	}
	s := string(b)
	return strings.HasPrefix(strings.TrimSpace(s[strings.LastIndexByte(s, ')')+1:]), "Z")
}

// TestKeeperKillsTrackedGroupsWhenThePipeCloses: a process group whose
// members ignore SIGTERM (the host's usual stop) is killed by the keeper
// with SIGKILL when its pipe closes, as when the host dies (the hosts
// without cgroups; with cgroups the keeper kills the host's cgroup folder,
// tested with a real host by TestHostSIGKILLTakesSandboxedSetsidDescendants).
func TestKeeperKillsTrackedGroupsWhenThePipeCloses(t *testing.T) {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	k, err := launcher.StartKeeper([]string{exe, keeperArg}, "")
	if err != nil {
		t.Fatal(err)
	}
	stubborn := exec.Command("sh", "-c", `trap "" TERM INT HUP; sleep 600 & wait`)
	stubborn.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := stubborn.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = syscall.Kill(-stubborn.Process.Pid, syscall.SIGKILL); _ = stubborn.Wait() })
	if err := k.Track(stubborn.Process.Pid); err != nil {
		t.Fatal(err)
	}
	// The shell has set its trap once it has started its child.
	children := fmt.Sprintf("/proc/%d/task/%d/children", stubborn.Process.Pid, stubborn.Process.Pid)
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(5 * time.Millisecond) {
		if b, _ := os.ReadFile(children); len(strings.TrimSpace(string(b))) > 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the shell started no child")
		}
	}
	_ = syscall.Kill(-stubborn.Process.Pid, syscall.SIGTERM) // ignored
	time.Sleep(100 * time.Millisecond)
	if gone(stubborn.Process.Pid) {
		t.Fatal("the group died of SIGTERM: the test proves nothing")
	}
	k.Close()
	deadline := time.Now().Add(5 * time.Second)
	for !gone(stubborn.Process.Pid) {
		if time.Now().After(deadline) {
			t.Fatal("the tracked group survived the keeper's pipe closing")
		}
		time.Sleep(10 * time.Millisecond)
	}
}
