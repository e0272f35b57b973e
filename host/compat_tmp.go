package host

import "fmt"

// exitInfo is a stop-gap for plugin.go while the lifecycle is rewritten.
type exitInfo struct {
	PID    int
	Status string
	Stderr []string
}

func (e *exitInfo) Error() string {
	return fmt.Sprintf("plugin exited (pid %d, %s)", e.PID, e.Status)
}

func (i *instance) exitError() *exitInfo {
	return &exitInfo{PID: i.pid(), Status: i.exitStatus(), Stderr: i.stderrTail()}
}
