//go:build !linux

package cmdtool

import (
	"os/exec"
	"syscall"
)

// setProcAttr puts the command in a process group of its own.
func setProcAttr(cmd *exec.Cmd) { cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true} }

// killGroup SIGKILLs the process group pid leads.
func killGroup(pid int) { _ = syscall.Kill(-pid, syscall.SIGKILL) }
