package decl

import (
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/opentool-host/opentool-host/lockfile"
)

// The one rule for where a declared program runs, shared by MCP servers
// (package mcpadapter) and command tools (package cmdtool).

// Program is the path of program name declared by a file in folder dir:
// an absolute path as is; a relative path with a slash against dir; a
// bare name looked up in path (a PATH list), whose relative entries are
// skipped (as exec.ErrDot would refuse them). Errors: a bare name found
// nowhere in path as an executable regular file.
func Program(dir, name, path string) (string, error) {
	switch {
	case filepath.IsAbs(name):
		return name, nil
	case strings.Contains(name, "/"):
		return filepath.Join(dir, name), nil
	}
	for _, d := range filepath.SplitList(path) {
		if !filepath.IsAbs(d) {
			continue
		}
		p := filepath.Join(d, name)
		if fi, err := os.Stat(p); err == nil && fi.Mode().IsRegular() && fi.Mode().Perm()&0o111 != 0 {
			return p, nil
		}
	}
	return "", fmt.Errorf("command %q not found in PATH %q", name, path)
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

// Programs returns the absolute paths of the programs l runs: the MCP
// server's command, or the program (element 0) of each command tool,
// each resolved as Program does with path (the PATH the adapter will
// use; a server's own env PATH wins), sorted and without repeats. Errors:
// a program found nowhere in PATH.
func (l Launch) Programs(path string) ([]string, error) {
	var names []string
	if l.Server.Command != "" {
		names = append(names, l.Server.Command)
		if p, ok := l.Server.Env["PATH"]; ok {
			path = p
		}
	}
	if l.Commands != nil {
		for _, c := range l.Commands.Functions {
			if len(c.Argv) > 0 {
				names = append(names, c.Argv[0].Template)
			}
		}
	}
	seen := map[string]bool{}
	var out []string
	for _, n := range names {
		p, err := Program(l.Dir, n, path)
		if err != nil {
			return nil, err
		}
		if !seen[p] {
			seen[p] = true
			out = append(out, p)
		}
	}
	sort.Strings(out)
	return out, nil
}

// CheckPinned checks program prog (an absolute path) against pinned
// (path → hex sha256, Launch.Pinned): nil when pinned is nil (no lock);
// else an error naming the path when prog is not pinned or its bytes are
// not the pinned ones.
func CheckPinned(pinned map[string]string, prog string) error {
	if pinned == nil {
		return nil
	}
	want, ok := pinned[prog]
	if !ok {
		return fmt.Errorf("program %s is not pinned in opentool.lock", prog)
	}
	got, err := lockfile.FileSHA256(prog)
	if err != nil {
		return fmt.Errorf("program %s: %w", prog, err)
	}
	if got != want {
		return fmt.Errorf("program %s changed: sha256 %s is not the pinned %s", prog, got[:12], want[:12])
	}
	return nil
}
