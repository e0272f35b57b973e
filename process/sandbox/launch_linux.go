package sandbox

import (
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"strings"
	"syscall"
)

// Launch is the launcher ("opentool-host launch -- PROGRAM ARGS..."):
// args is PROGRAM ARGS.... It takes the Spec from EnvSpec (and removes
// the variable), applies it to its own process (Apply, with PROGRAM and
// $PLUGIN_UNIX_SOCKET_DIR added to what a confined plugin may reach) and
// replaces itself with PROGRAM by execve(2), so no launcher process stays
// behind and the pid the host started is the plugin's. PROGRAM is looked
// up in PATH when it has no slash.
//
// It writes one line to stderr, which the host logs at the level the
// line names: "[DEBUG] sandbox: Landlock ABI 7; applied ..." when all of
// the Spec is enforced, "[WARN] sandbox: Landlock ABI 3; applied ...;
// not applied: network ..." when the kernel lacks a feature (best
// effort), "[ERROR] sandbox: ..." when it does not run PROGRAM. It
// returns only then, with the exit status: ExitUsage, ExitNotApplied or
// ExitExec.
func Launch(args []string, stderr io.Writer) int {
	spec, err := takeSpec()
	if err == nil && len(args) == 0 {
		err = fmt.Errorf("sandbox: no program to run (launch -- PROGRAM ARGS...)")
	}
	if err != nil {
		fmt.Fprintf(stderr, "[ERROR] %v\n", err)
		return ExitUsage
	}
	program, err := exec.LookPath(args[0])
	if err == nil {
		program, err = filepath.Abs(program)
	}
	if err != nil {
		fmt.Fprintf(stderr, "[ERROR] sandbox: %v\n", err)
		return ExitExec
	}
	p, err := newPlan(spec, program, os.Getenv("PLUGIN_UNIX_SOCKET_DIR"))
	if err == nil {
		err = p.restrict()
	}
	if err != nil {
		fmt.Fprintf(stderr, "[ERROR] sandbox: %v\n", err)
		return ExitNotApplied
	}
	fmt.Fprintln(stderr, p.res.line(spec))
	env := os.Environ()
	// From the limits to execve this process must neither start a thread
	// nor grow its heap: under an address-space cap below its own size
	// either is fatal. No garbage collection (it may start workers), and
	// this goroutine stays on its thread.
	runtime.LockOSThread()
	debug.SetGCPercent(-1)
	if err := p.limit(); err != nil {
		fmt.Fprintf(stderr, "[ERROR] sandbox: %v\n", err)
		return ExitNotApplied
	}
	err = syscall.Exec(program, args, env)
	fmt.Fprintf(stderr, "[ERROR] sandbox: exec %s: %v\n", program, err)
	return ExitExec
}

// line is the launcher's one log line about res, applied for s.
func (r Result) line(s Spec) string {
	var applied []string
	if s.MemoryBytes > 0 {
		applied = append(applied, fmt.Sprintf("memory %d bytes (RLIMIT_AS)", s.MemoryBytes))
	}
	if s.CPUSeconds > 0 {
		applied = append(applied, fmt.Sprintf("cpu %d s (RLIMIT_CPU)", s.CPUSeconds))
	}
	if s.Processes > 0 {
		p := fmt.Sprintf("processes %d (RLIMIT_NPROC", s.Processes)
		if r.RootNProc {
			p += ", not binding root"
		}
		applied = append(applied, p+")")
	}
	if s.Confine && r.ABI > 0 {
		applied = append(applied, fmt.Sprintf("filesystem (%d read, %d write paths beside the defaults)", len(s.Read), len(s.Write)))
	}
	if s.DenyNetwork {
		net := "network denied: no socket but AF_UNIX (seccomp)"
		if len(s.ConnectTCP) > 0 {
			net = fmt.Sprintf("network denied: no socket but AF_UNIX and TCP (seccomp), TCP connect only to %v (Landlock)", s.ConnectTCP)
		}
		applied = append(applied, net)
	}
	level, text := "[DEBUG]", fmt.Sprintf("sandbox: Landlock ABI %d; applied: %s", r.ABI, strings.Join(applied, ", "))
	if len(r.Absent) > 0 {
		level, text = "[WARN]", text+fmt.Sprintf("; paths that do not exist got no rule: %s", strings.Join(r.Absent, ", "))
	}
	if len(r.Missing) > 0 {
		level, text = "[WARN]", text+"; not applied (kernel too old): "+strings.Join(r.Missing, "; ")
	}
	return level + " " + text
}
