package decl

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"

	"github.com/opentool-host/opentool-host/protocol/lockfile"
)

// The one rule for where a declared program runs, shared by MCP servers
// (package mcpadapter) and command tools (package cmdtool).

// Program is the path of program name declared by a file in folder dir:
// an absolute path as is; a relative path with a slash against dir; a
// bare name looked up in path (a PATH list), whose relative entries are
// skipped (as exec.ErrDot would refuse them). The program must be an
// executable regular file. Errors: a *ProgramError.
func Program(dir, name, path string) (string, error) {
	if filepath.IsAbs(name) || strings.Contains(name, "/") {
		p := name
		if !filepath.IsAbs(p) {
			p = filepath.Join(dir, name)
		}
		if why := notRunnable(p); why != "" {
			return "", &ProgramError{Name: name, Path: p, Reason: why}
		}
		return p, nil
	}
	var folders []string
	for _, d := range filepath.SplitList(path) {
		if !filepath.IsAbs(d) || slices.Contains(folders, d) {
			continue
		}
		folders = append(folders, d)
		if p := filepath.Join(d, name); notRunnable(p) == "" {
			return p, nil
		}
	}
	return "", &ProgramError{Name: name, Folders: folders, Reason: "is not installed"}
}

// notRunnable says why file p cannot be executed ("does not exist", "is
// not a regular file", "is not executable"), "" when it can.
func notRunnable(p string) string {
	fi, err := os.Stat(p)
	switch {
	case err != nil:
		return "does not exist"
	case !fi.Mode().IsRegular():
		return "is not a regular file"
	case fi.Mode().Perm()&0o111 == 0:
		return "is not executable"
	}
	return ""
}

// ProgramError is the error of a declared program that cannot run: a
// bare name found in no folder of the PATH it is looked up in, or a path
// that does not exist, is not a regular file or is not executable.
// Error names the program as declared and nothing of the host (no
// folder, no PATH): what a caller may be told. Detail adds the path
// tried or the folders searched, for the host's log and `validate`.
type ProgramError struct {
	// Name is the program as declared ("frobnicate", "./bin/srv").
	Name string
	// Path is the absolute path tried for a name with a slash, "" for a
	// bare name.
	Path string
	// Folders are the folders of the PATH a bare name was looked up in,
	// in order, each once (relative entries left out); nil for a path.
	Folders []string
	// Reason is why it cannot run: "is not installed" (a bare name),
	// "does not exist", "is not a regular file", "is not executable".
	Reason string
}

// Error returns "the plugin's program "NAME" REASON".
func (e *ProgramError) Error() string {
	return fmt.Sprintf("the plugin's program %q %s", e.Name, e.Reason)
}

// Detail returns Error with where the program was looked for and what to
// do: the path tried, or each folder of the PATH searched.
func (e *ProgramError) Detail() string {
	switch {
	case e.Path == e.Name:
		return e.Error() + "; fix the path or make the file executable"
	case e.Path != "":
		return fmt.Sprintf("%s: %s %s; fix the path (relative to the declaration's folder) or make the file executable", e.Error(), e.Path, e.Reason)
	}
	where := "the plugin's PATH has no absolute folder"
	if len(e.Folders) > 0 {
		where = "not found in any folder of the plugin's PATH: " + strings.Join(e.Folders, ", ")
	}
	return fmt.Sprintf("%s: %s; install it, or declare its absolute path", e.Error(), where)
}

// CheckPrograms checks that every program l declares can run (Program),
// looked up as the adapter will: with path, the plugin's PATH, unless a
// server declares its own (its env's PATH). Errors: the first
// *ProgramError.
func (l Launch) CheckPrograms(path string) error {
	for _, r := range l.commandLines() {
		if _, err := Program(l.Dir, r.argv[0], l.searchPath(path)); err != nil {
			return err
		}
	}
	return nil
}

// WorkDir is the working directory cwd declared by a file in folder dir:
// dir when cwd is empty, cwd when absolute, else cwd relative to dir.
func WorkDir(dir, cwd string) string {
	switch {
	case cwd == "":
		return dir
	case filepath.IsAbs(cwd):
		return cwd
	}
	return filepath.Join(dir, cwd)
}

// Files returns the absolute paths of the files l executes or names, as
// opentool.lock pins them (Config.Locked): the program of each command
// line l declares (the MCP server's command, element 0 of each command
// tool), resolved as Program does with path (the PATH the adapter will
// use; a server's own env PATH wins), and each of its arguments that
// names an existing regular file, absolute or relative to the command's
// working directory (WorkDir): an interpreter's script, a config file.
// A command tool's arguments count only where they are literal (no
// "{param}"): the values a call brings are not the declaration's. Sorted,
// without repeats. Errors: a *ProgramError (Program).
func (l Launch) Files(path string) ([]string, error) {
	seen := map[string]bool{}
	var out []string
	add := func(p string) {
		if !seen[p] {
			seen[p] = true
			out = append(out, p)
		}
	}
	for _, r := range l.commandLines() {
		prog, err := Program(l.Dir, r.argv[0], l.searchPath(path))
		if err != nil {
			return nil, err
		}
		add(prog)
		for _, a := range r.argv[1:] {
			if p := argPath(WorkDir(l.Dir, r.cwd), a); p != "" {
				if fi, err := os.Stat(p); err == nil && fi.Mode().IsRegular() {
					add(p)
				}
			}
		}
	}
	sort.Strings(out)
	return out, nil
}

// commandLine is one command line a Launch declares: its literal
// elements and its working directory as declared.
type commandLine struct {
	argv []string
	cwd  string
}

// commandLines returns the command lines l declares: the server's, or
// each command tool's literal elements (flags included, placeholders
// left out).
func (l Launch) commandLines() []commandLine {
	if l.Server.Command != "" {
		return []commandLine{{argv: append([]string{l.Server.Command}, l.Server.Args...), cwd: l.Server.Cwd}}
	}
	if l.Commands == nil {
		return nil
	}
	var out []commandLine
	for _, c := range l.Commands.Functions {
		var argv []string
		for _, a := range c.Argv {
			switch {
			case a.Flag != "":
				argv = append(argv, a.Flag)
			case len(a.Placeholders()) == 0:
				lit, _ := a.Expand(nil) // "{{" and "}}" only
				argv = append(argv, lit)
			}
		}
		if len(argv) > 0 { // element 0, the program, is always literal
			out = append(out, commandLine{argv: argv, cwd: c.Cwd})
		}
	}
	return out
}

// searchPath is the PATH a program of l is looked up in: the server's
// declared PATH, else def.
func (l Launch) searchPath(def string) string {
	if p, ok := l.Server.Env["PATH"]; ok {
		return p
	}
	return def
}

// argPath is argument a as a path: a when absolute, else relative to
// folder wd; "" for an empty argument.
func argPath(wd, a string) string {
	switch {
	case a == "":
		return ""
	case filepath.IsAbs(a):
		return filepath.Clean(a)
	}
	return filepath.Join(wd, a)
}

// Exec is one declared command line as the launcher runs it.
type Exec struct {
	// Path is the file executed: with a lock, the verified copy of the
	// program (Launch.Verified); without one, the program as resolved.
	Path string
	// Arg0 is argv[0] as the program sees it: the program as resolved
	// (absolute), so that a program that finds its files from argv[0] (a
	// Python venv's pyvenv.cfg, a multi-call binary) still does.
	Arg0 string
	// Args are the arguments, each one that names a pinned file replaced
	// by that file's verified copy.
	Args []string
	// Verify, with a lock, maps each verified copy Path and Args name to
	// the pinned sha256 of its file (launcher.Spec.Verify): the launcher
	// checks the copies' bytes again right before it runs them.
	Verify map[string]string
}

// Exec resolves argv, a command line of l (expanded: a command tool's
// values in place), run in working directory cwd (as declared), its
// program looked up in path: the one place a declared command line
// becomes what is executed. Without a lock (Pinned nil) it is the
// resolved program and argv as is. With one, the program, and every
// argument that names a file the lock pins (absolute or relative to
// the working directory, as Files), must have their pinned bytes on disk
// (CheckPinned) and are replaced by their verified copies (Verified), so
// that what runs is what was checked, whatever happens to the path
// after. Errors: a *ProgramError (Program); with a lock, a program
// that is not pinned, a pinned file that changed or is gone, or one
// without a verified copy.
func (l Launch) Exec(argv []string, cwd, path string) (Exec, error) {
	prog, err := Program(l.Dir, argv[0], l.searchPath(path))
	if err != nil {
		return Exec{}, err
	}
	e := Exec{Arg0: prog, Args: slices.Clone(argv[1:])}
	if e.Path, err = l.verified(prog); err != nil {
		return Exec{}, err
	}
	if l.Pinned == nil {
		return e, nil
	}
	e.Verify = map[string]string{e.Path: l.Pinned[prog]}
	wd := WorkDir(l.Dir, cwd)
	for i, a := range e.Args {
		if p := argPath(wd, a); p != "" {
			if _, pinned := l.Pinned[p]; pinned {
				if e.Args[i], err = l.verified(p); err != nil {
					return Exec{}, err
				}
				e.Verify[e.Args[i]] = l.Pinned[p]
			}
		}
	}
	return e, nil
}

// verified is the path to use for file p: p without a lock; with one,
// p's verified copy once p's bytes on disk are the pinned ones. Errors:
// CheckPinned's, or no verified copy of p.
func (l Launch) verified(p string) (string, error) {
	if l.Pinned == nil {
		return p, nil
	}
	if err := CheckPinned(l.Pinned, p); err != nil {
		return "", err
	}
	c := l.Verified[p]
	if c == "" {
		return "", fmt.Errorf("file %s has no verified copy to run", p)
	}
	return c, nil
}

// CheckPinned checks file p (an absolute path) against pinned (path →
// hex sha256, Launch.Pinned): nil when pinned is nil (no lock); else an
// error naming the path when p is not pinned or its bytes are not the
// pinned ones.
func CheckPinned(pinned map[string]string, p string) error {
	if pinned == nil {
		return nil
	}
	want, ok := pinned[p]
	if !ok {
		return fmt.Errorf("file %s is not pinned in opentool.lock", p)
	}
	got, err := lockfile.FileSHA256(p)
	if err != nil {
		return fmt.Errorf("file %s: %w", p, err)
	}
	return CompareSum(p, got, want)
}

// CompareSum is the fault of file p whose bytes have sha256 got where
// the lock pins want ("file P changed: sha256 … is not the pinned …"),
// nil when they are the same.
func CompareSum(p, got, want string) error {
	if got != want {
		return fmt.Errorf("file %s changed: sha256 %s is not the pinned %s", p, got[:12], want[:12])
	}
	return nil
}
