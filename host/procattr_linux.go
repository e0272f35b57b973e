package host

import (
	"os/exec"
	"syscall"
)

// setProcAttr gives the plugin its own process group and the parent-death
// signal SIGKILL.
func setProcAttr(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}
