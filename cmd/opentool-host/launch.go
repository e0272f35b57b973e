package main

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/urfave/cli/v2"

	"github.com/opentool-host/opentool-host/sandbox"
)

// launchName is the hidden "launch" command: `opentool-host launch --
// PROGRAM ARGS...` is how the host starts a plugin whose policy or flags
// limit or confine it (host.Config.Launcher). It applies the
// sandbox.Spec of $OPENTOOL_SANDBOX to its own process and executes
// PROGRAM in place (sandbox.Launch). It is started by a host, never by
// hand: without a Spec it exits with status 2 (sandbox.ExitUsage); a
// Spec it cannot apply exits 3 (sandbox.ExitNotApplied).
const launchName = "launch"

// init runs the launcher before the CLI exists: the launcher parses no
// flags (everything after "--" is the plugin's), and the less the
// process does before it executes the plugin, the less of it runs
// unconfined.
func init() {
	if len(os.Args) < 2 || os.Args[1] != launchName {
		return
	}
	if len(os.Args) < 3 || os.Args[2] != "--" {
		fmt.Fprintln(os.Stderr, "[ERROR] sandbox: usage: opentool-host launch -- PROGRAM ARGS... (run by the host for a confined plugin)")
		os.Exit(sandbox.ExitUsage)
	}
	os.Exit(sandbox.Launch(os.Args[3:], os.Stderr))
}

// launcherArgv is the command that confines one plugin: this binary,
// re-executed as "launch" (host.Config.Launcher). Nil when the binary's
// path is unknown; plugins that need it then fail with that reason.
func launcherArgv() []string {
	exe, err := os.Executable()
	if err != nil {
		return nil
	}
	return []string{exe, launchName}
}

// sandboxFlags are the host flags that fill host.Config.Sandbox: the
// confinement every plugin gets, and the most a plugin's policy file may
// allow.
func sandboxFlags() []cli.Flag {
	return []cli.Flag{
		&cli.BoolFlag{Name: "sandbox", Usage: "confine every plugin with Landlock: it may read only system folders, --sandbox-read paths and what its policy adds, and write only its policy's paths"},
		&cli.StringSliceFlag{Name: "sandbox-read", Usage: "with --sandbox, let every plugin read (and execute) `PATH` too (repeatable; relative to the working directory)"},
		&cli.BoolFlag{Name: "sandbox-deny-network", Usage: "deny every plugin TCP bind and connect (Landlock ABI 4, Linux 6.7); a policy may allow connect_tcp ports"},
		&cli.BoolFlag{Name: "require-sandbox", Usage: "fail a plugin's start when the kernel cannot apply all of its sandbox, instead of running it with what can be applied (logged)"},
		&cli.Int64Flag{Name: "plugin-memory-mb", Usage: "cap each plugin process's address space at `MiB` (RLIMIT_AS; a Go plugin built with cgo needs about 2048); 0: no cap", Action: atLeast[int64]("plugin-memory-mb", 0)},
		&cli.Int64Flag{Name: "plugin-cpu-seconds", Usage: "cap each plugin process's CPU time at `SECONDS` (RLIMIT_CPU: SIGXCPU, then SIGKILL); 0: no cap", Action: atLeast[int64]("plugin-cpu-seconds", 0)},
		&cli.IntFlag{Name: "plugin-processes", Usage: "cap processes and threads at `N` (RLIMIT_NPROC: counts all of the user's, and does not bind root); 0: no cap", Action: atLeast("plugin-processes", 0)},
	}
}

// sandboxSpec returns host.Config.Sandbox from the flags of sandboxFlags,
// with --sandbox-read paths made absolute. Errors: --sandbox-read
// without --sandbox, or a path that cannot be made absolute.
func sandboxSpec(c *cli.Context) (sandbox.Spec, error) {
	s := sandbox.Spec{
		Confine:     c.Bool("sandbox"),
		DenyNetwork: c.Bool("sandbox-deny-network"),
		Require:     c.Bool("require-sandbox"),
		MemoryBytes: c.Int64("plugin-memory-mb") << 20,
		CPUSeconds:  c.Int64("plugin-cpu-seconds"),
		Processes:   c.Int("plugin-processes"),
	}
	read := c.StringSlice("sandbox-read")
	if len(read) > 0 && !s.Confine {
		return s, usageError(c, "--sandbox-read needs --sandbox")
	}
	for _, p := range read {
		abs, err := filepath.Abs(p)
		if err != nil {
			return s, usageError(c, fmt.Sprintf("--sandbox-read %s: %v", p, err))
		}
		s.Read = append(s.Read, abs)
	}
	return s, s.Check()
}
