package mcpadapter

import (
	"os/exec"
	"syscall"
)

// setProcAttr gives the server a parent-death signal: it is SIGKILLed when
// the adapter dies, even by SIGKILL. (It stays in the adapter's process
// group, which the host kills as a whole.)
func setProcAttr(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}
