package mcpadapter

import (
	"os/exec"
	"syscall"
)

// setProcAttr gives the server a parent-death signal: it is SIGKILLed when
// the adapter dies, even by SIGKILL. It stays in the adapter's process
// group (no Setpgid), which the host kills as a whole, and which
// pluginsdk's SIGTERM guard kills too. Linux ties the signal to the
// thread that forked; Go ends a thread only when a goroutine locked to
// it exits, and the adapter starts the server from an unlocked one.
func setProcAttr(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}
