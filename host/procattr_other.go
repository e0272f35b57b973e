//go:build !linux

package host

import (
	"os/exec"
	"syscall"
)

// setProcAttr gives the plugin its own process group. There is no
// parent-death signal outside Linux; pluginsdk's parent watch covers it.
func setProcAttr(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
}
