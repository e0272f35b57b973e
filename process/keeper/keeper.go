// Package keeper is the keeper process's side of the host's keeper (the
// host's side is launcher.StartKeeper): what the process that holds the
// plugins' lives does, and the lines the host writes it. It imports the
// standard library and process/cgroup only, so that the small keeper
// program (cmd/opentool-host-keeper, Program) stays small: a process of
// about 2 MiB RSS where the host's binary re-executed as its keeper
// holds about 30 MiB (the runtime and every package's init of the whole
// host). See launcher.StartKeeper for what the keeper guarantees.
package keeper

import (
	"bufio"
	"fmt"
	"io"
	"os/signal"
	"strconv"
	"strings"
	"syscall"

	"github.com/opentool-host/opentool-host/process/cgroup"
)

// Command is the keeper's first argument, both for the small keeper
// program and for the host's binary re-executed as its keeper: the
// keeper runs as "PROGRAM keeper [DIR]".
const Command = "keeper"

// Program is the file name of the small keeper program
// (cmd/opentool-host-keeper). A host runs it as its keeper when it lies
// beside the host's own executable (make host, make install, the
// container image and `go install ./cmd/...` put it there), and
// re-executes its own binary as the keeper otherwise.
const Program = "opentool-host-keeper"

// ExitUsage is Main's exit status when its arguments are not
// "PROGRAM keeper [DIR]".
const ExitUsage = 2

// trackPrefix starts the line that names one process group to kill.
const trackPrefix = "pgid "

// Track writes to w, the keeper's standard input, the line that tells the
// keeper of the process group pgid ("pgid N\n"). Errors: those of w.
func Track(w io.Writer, pgid int) error {
	_, err := fmt.Fprintf(w, "%s%d\n", trackPrefix, pgid)
	return err
}

// Main is a keeper process given its command line args (os.Args:
// PROGRAM, Command, then the host's cgroup folder DIR, absent or "" for
// none): it runs Run on in and returns the exit status, 0, or ExitUsage
// (with a line on stderr) when args[1] is not Command or more than one
// DIR is given.
func Main(args []string, in io.Reader, stderr io.Writer) int {
	if len(args) < 2 || args[1] != Command || len(args) > 3 {
		fmt.Fprintf(stderr, "[ERROR] keeper: usage: %s %s [CGROUP-DIR] (run by opentool-host, reading its pipe)\n", Program, Command)
		return ExitUsage
	}
	dir := ""
	if len(args) == 3 {
		dir = args[2]
	}
	Run(in, dir)
	return 0
}

// Run is the keeper's work: it ignores SIGINT, SIGTERM, SIGHUP and
// SIGPIPE, reads Track lines from in until end of file (the host is
// gone: the kernel closed the pipe's write end), then kills cgroupDir's
// tree (cgroup.KillTree, when not "") and every process group it was told
// of (SIGKILL), and returns. Lines that are not Track lines, and process
// groups ≤ 1, are ignored.
func Run(in io.Reader, cgroupDir string) {
	signal.Ignore(syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP, syscall.SIGPIPE)
	var pgids []int
	sc := bufio.NewScanner(in)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), trackPrefix); ok {
			if n, err := strconv.Atoi(v); err == nil && n > 1 {
				pgids = append(pgids, n)
			}
		}
	}
	if cgroupDir != "" {
		_ = cgroup.KillTree(cgroupDir)
	}
	for _, g := range pgids {
		_ = syscall.Kill(-g, syscall.SIGKILL)
	}
}
