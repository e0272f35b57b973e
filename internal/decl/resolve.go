package decl

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
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
