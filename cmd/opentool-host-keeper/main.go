// Command opentool-host-keeper is the small keeper program of
// opentool-host: run by a host as "opentool-host-keeper keeper [DIR]"
// with a pipe as its standard input, it waits for the pipe's end (the
// host is gone, whatever killed it) and then kills the host's cgroup
// folder DIR and the plugin process groups the host named
// (keeper.Run). It is never run by hand.
//
// It does what `opentool-host keeper` does, in a process of about 2 MiB
// RSS instead of about 30 MiB: it imports only the standard library and
// process/keeper. A host runs it when it lies beside the host's own
// executable (keeper.Program); install both:
//
//	go install github.com/opentool-host/opentool-host/cmd/...
package main

import (
	"os"

	"github.com/opentool-host/opentool-host/process/keeper"
)

func main() {
	os.Exit(keeper.Main(os.Args, os.Stdin, os.Stderr))
}
