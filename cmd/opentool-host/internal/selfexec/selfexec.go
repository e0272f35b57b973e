// Package selfexec holds the hidden commands that the opentool-host
// binary re-executes itself as, for the processes a host starts around
// its plugins (core.Config.Launcher and Keeper). A host starts them; they
// are never run by hand:
//
//	opentool-host launch -- PROGRAM ARGS...  confine one plugin and execute it (sandbox.Launch)
//	opentool-host keeper DIR                 kill what is left of the plugins when the host dies (keeper.Main)
//
// The keeper runs as the small keeper program instead (keeper.Program,
// KeeperArgv) when it lies beside the host's executable.
//
// The command's main calls Main first: these parse no flags, and the
// less the process does before it executes a plugin, the less of it
// runs unconfined.
package selfexec

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"syscall"

	"github.com/opentool-host/opentool-host/process/keeper"
	"github.com/opentool-host/opentool-host/process/sandbox"
)

// The hidden commands' names (os.Args[1]).
const (
	// Launch applies the sandbox.Spec of $OPENTOOL_SANDBOX to its own
	// process and executes PROGRAM in place (sandbox.Launch): how a host
	// starts a plugin whose policy or flags limit or confine it. Without
	// "--" PROGRAM, or without a Spec, it exits with status 2
	// (sandbox.ExitUsage); a Spec it cannot apply exits 3
	// (sandbox.ExitNotApplied).
	Launch = "launch"
	// Keeper reads its standard input, the host's pipe, to its end, then
	// kills the cgroup folder DIR ("" or no argument for none) and the
	// process groups the host named (keeper.Main), and exits 0.
	Keeper = keeper.Command
)

// Argv returns the command that runs this binary as the hidden command
// name: its executable's path, then name (for core.Config.Launcher).
// It is nil when the executable's path is unknown; the host then says
// what cannot run without it.
func Argv(name string) []string {
	exe, err := os.Executable()
	if err != nil {
		return nil
	}
	return []string{exe, name}
}

// KeeperArgv returns the command of the host's keeper
// (core.Config.Keeper): the small keeper program beside this binary's
// executable when there is one (keeperArgv), else this binary as Keeper.
// It is nil when the executable's path is unknown.
func KeeperArgv() []string {
	exe, err := os.Executable()
	if err != nil {
		return nil
	}
	return keeperArgv(exe)
}

// keeperArgv is KeeperArgv for the executable exe: [DIR/keeper.Program,
// Keeper] when DIR, exe's folder, holds keeper.Program as an executable
// regular file and neither can be written by another user (trusted),
// else [exe, Keeper]. The keeper runs unconfined as the host's user:
// a keeper another user could plant (beside a host binary in /tmp) or
// rewrite is not run.
func keeperArgv(exe string) []string {
	if small := beside(exe, keeper.Program); small != "" {
		return []string{small, Keeper}
	}
	return []string{exe, Keeper}
}

// beside is the program name in exe's folder when it is an executable
// regular file and neither it nor the folder can be written by another
// user (trusted); "" otherwise.
func beside(exe, name string) string {
	dir := filepath.Dir(exe)
	path := filepath.Join(dir, name)
	fi, err := os.Stat(path)
	if err != nil || !fi.Mode().IsRegular() || fi.Mode().Perm()&0o111 == 0 || !trusted(fi) {
		return ""
	}
	if di, err := os.Stat(dir); err != nil || !trusted(di) {
		return ""
	}
	return path
}

// trusted reports whether only root or this process's effective user can
// write the file fi: one of them owns it, and it is not writable by its
// group or others.
// CodeRunnerProgram is the code runner's file name (--code-mode).
const CodeRunnerProgram = "opentool-host-coderunner"

// CodeRunnerPath is the code runner (CodeRunnerProgram) beside the
// running executable, trusted as keeperArgv's keeper is; "" when there
// is none such.
func CodeRunnerPath() string {
	exe, err := os.Executable()
	if err != nil {
		return ""
	}
	return beside(exe, CodeRunnerProgram)
}

func trusted(fi os.FileInfo) bool {
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok || fi.Mode().Perm()&0o022 != 0 {
		return false
	}
	return st.Uid == 0 || int(st.Uid) == os.Geteuid()
}

// Main runs the hidden command that args (os.Args) name, if any, and
// exits the process with its status; it returns at once when args[1] is
// not one of Launch and Keeper.
func Main(args []string) {
	if len(args) < 2 {
		return
	}
	switch args[1] {
	case Launch:
		os.Exit(launch(args[2:], os.Stderr))
	case Keeper:
		os.Exit(keeper.Main(args, os.Stdin, os.Stderr))
	}
}

// launch is Launch with its arguments ("--" PROGRAM ARGS...), writing
// its errors to stderr; it returns only when PROGRAM was not executed.
func launch(args []string, stderr io.Writer) int {
	if len(args) < 1 || args[0] != "--" {
		fmt.Fprintln(stderr, "[ERROR] sandbox: usage: opentool-host launch -- PROGRAM ARGS... (run by the host for a confined plugin)")
		return sandbox.ExitUsage
	}
	return sandbox.Launch(args[1:], stderr)
}
