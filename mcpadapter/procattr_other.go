//go:build !linux

package mcpadapter

import "os/exec"

// setProcAttr does nothing here: without a parent-death signal the server
// relies on the host killing the adapter's process group.
func setProcAttr(*exec.Cmd) {}
