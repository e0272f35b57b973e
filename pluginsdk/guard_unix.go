//go:build unix

package pluginsdk

import (
	"os"
	"os/signal"
	"syscall"

	"github.com/hashicorp/go-hclog"

	"github.com/opentool-host/opentool-host/process/cgroup"
)

// guardChildren makes SIGTERM (the host's parent-death signal, and what a
// stopping host sends) end the plugin together with every process it
// started: the host puts each plugin in a process group of its own, so
// the plugin kills that group. Without it, a plugin's children would
// outlive a host that was SIGKILLed.
func guardChildren(_ hclog.Logger) {
	ch := make(chan os.Signal, 1)
	signal.Notify(ch, syscall.SIGTERM)
	go func() {
		<-ch
		// No logging first: when the host is dead, stderr is a broken
		// pipe and a write to it would end the process by SIGPIPE before
		// the group is killed.
		exitWithGroup()
	}()
}

// exitWithGroup kills the plugin's cgroup when the host made one for it
// (every descendant, setsid ones included), and its process group when
// the plugin leads it (as the host arranges), else exits alone.
func exitWithGroup() {
	cgroup.KillOwn() // ourselves included, when it applies
	if syscall.Getpgrp() == os.Getpid() {
		_ = syscall.Kill(0, syscall.SIGKILL)
	}
	os.Exit(2)
}
