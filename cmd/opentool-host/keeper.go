package main

import (
	"os"

	"github.com/opentool-host/opentool-host/launcher"
)

// keeperName is the hidden "keeper" command: `opentool-host keeper DIR`
// is the process a host starts to kill what is left of its plugins when
// it dies (host.Config.Keeper, package keeper): it reads its standard
// input, the host's pipe, to its end, then kills the cgroup folder DIR
// ("" for none) and the process groups the host named. It is started by
// a host, never by hand.
const keeperName = "keeper"

// init runs the keeper before the CLI exists, like the launcher.
func init() {
	if len(os.Args) < 2 || os.Args[1] != keeperName {
		return
	}
	dir := ""
	if len(os.Args) > 2 {
		dir = os.Args[2]
	}
	launcher.RunKeeper(os.Stdin, dir)
	os.Exit(0)
}

// keeperArgv is the command of the host's keeper: this binary,
// re-executed as "keeper" (host.Config.Keeper). Nil when the binary's
// path is unknown: the host then runs without one.
func keeperArgv() []string {
	exe, err := os.Executable()
	if err != nil {
		return nil
	}
	return []string{exe, keeperName}
}
