// Command soak is make soak: a real opentool-host process (or, with
// -inprocess, a host in this process) serving -plugins named echo plugins
// to -clients concurrent keep-alive clients for -duration, while a chaos
// loop SIGKILLs a random plugin every -kill-every and replaces a random
// plugin's binary every -replace-every. It prints the report (calls sent,
// succeeded, failed with a clean JSON-RPC error, unclean, hung; fds,
// goroutines, threads, RSS before and after; plugin processes left after
// the host stopped) and exits 1 when the soak failed. Loopback only; it
// stops by itself.
//
//	go run ./bench/cmd/soak -host bin/opentool-host -duration 60s
package main

import (
	"context"
	"flag"
	"fmt"
	"log"
	"os"
	"path/filepath"
	"time"

	"github.com/opentool-host/opentool-host/bench/harness"
	"github.com/opentool-host/opentool-host/host/core"
	"github.com/opentool-host/opentool-host/testkit/base"
)

func main() { os.Exit(run()) }

func run() int {
	var (
		hostBin      = flag.String("host", "bin/opentool-host", "the opentool-host binary to soak")
		inProcess    = flag.Bool("inprocess", false, "run the host in this process instead (goroutines are then counted)")
		duration     = flag.Duration("duration", 60*time.Second, "how long the clients call")
		clients      = flag.Int("clients", 64, "concurrent keep-alive clients")
		plugins      = flag.Int("plugins", 16, "named echo plugins served")
		killEvery    = flag.Duration("kill-every", 200*time.Millisecond, "SIGKILL a random ready plugin this often (negative: never)")
		replaceEvery = flag.Duration("replace-every", 2*time.Second, "replace a random plugin's binary this often (negative: never)")
		callTimeout  = flag.Duration("call-timeout", 5*time.Second, "the host's --call-timeout; a call unanswered after it + 1 s is hung")
	)
	flag.Parse()
	log.SetFlags(log.Ltime)

	tmp, err := os.MkdirTemp("", "opentool-soak-")
	if err != nil {
		log.Print(err)
		return 1
	}
	defer os.RemoveAll(tmp)
	bin, err := base.Build("./testkit/plugins/echo", tmp)
	if err != nil {
		log.Print(err)
		return 1
	}
	dir := filepath.Join(tmp, "plugins")
	state := filepath.Join(tmp, "state")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		log.Print(err)
		return 1
	}
	names := make([]string, *plugins)
	for i := range names {
		names[i] = fmt.Sprintf("p%02d", i)
		if _, err := harness.WriteNamedPlugin(bin, dir, names[i], 0); err != nil {
			log.Print(err)
			return 1
		}
	}

	var target harness.Target
	var proc *harness.HostProcess
	if *inProcess {
		target, err = harness.StartInProcess(context.Background(), core.Config{Dir: dir, StateDir: state, Watch: true, CallTimeout: *callTimeout})
	} else {
		abs, aerr := filepath.Abs(*hostBin)
		if aerr != nil {
			log.Print(aerr)
			return 1
		}
		proc, err = harness.StartHostProcess(abs, harness.HostOptions{Dir: dir, StateDir: state, Args: []string{"--call-timeout", callTimeout.String()}})
		target = proc
	}
	if err != nil {
		log.Print(err)
		return 1
	}
	kind := "opentool-host process " + *hostBin
	if *inProcess {
		kind = "in-process host"
	}
	log.Printf("soak: %s, %d plugins, %d clients, %v; SIGKILL every %v, new binary every %v", kind, *plugins, *clients, *duration, *killEvery, *replaceEvery)
	r := harness.Soak(target, harness.SoakConfig{
		Duration:     *duration,
		Clients:      *clients,
		Plugins:      names,
		Dir:          dir,
		PluginBin:    bin,
		KillEvery:    *killEvery,
		ReplaceEvery: *replaceEvery,
		CallTimeout:  *callTimeout,
		Log:          log.Printf,
	})
	fmt.Printf("\n## Soak (%s)\n\n%s\n", kind, r)
	if f := r.Failures(); len(f) > 0 {
		fmt.Println("SOAK FAILED:")
		for _, s := range f {
			fmt.Println(" -", s)
		}
		if proc != nil {
			fmt.Printf("host output (head):\n%.4000s\n", proc.Output())
		}
		return 1
	}
	fmt.Println("SOAK PASSED: no hung call, no unclean failure, host alive, no fd/goroutine growth, no plugin process left.")
	return 0
}
