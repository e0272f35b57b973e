package host

import (
	"os/exec"
	"syscall"
)

// setProcAttr gives the plugin its own process group and the parent-death
// signal SIGTERM. SIGTERM, not SIGKILL: a pluginsdk plugin answers it by
// killing its whole process group (its own children too); any other
// program is terminated by SIGTERM's default action. pluginsdk's parent
// watch is the second guard.
func setProcAttr(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGTERM}
}
