package cmdtool

import (
	"os/exec"
	"syscall"
)

// setProcAttr puts the command in a process group of its own (so that a
// timeout kills it with its children) and gives it a parent-death signal
// (it dies with the adapter).
func setProcAttr(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}

// killGroup SIGKILLs the process group pid leads.
func killGroup(pid int) { _ = syscall.Kill(-pid, syscall.SIGKILL) }
