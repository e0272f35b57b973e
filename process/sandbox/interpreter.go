package sandbox

import (
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
)

// Shebang returns the program and arguments of the #! line of the file
// at path: ["/usr/bin/python3"], ["/usr/bin/env", "node"]; nil when the
// file has no #! line or cannot be read.
func Shebang(path string) []string {
	f, err := os.Open(path)
	if err != nil {
		return nil
	}
	defer f.Close()
	b := make([]byte, 256)
	n, _ := f.Read(b)
	line, _, _ := strings.Cut(string(b[:n]), "\n")
	rest, ok := strings.CutPrefix(line, "#!")
	if !ok {
		return nil
	}
	return strings.Fields(rest)
}

// Interpreter returns the program a #! line (Shebang's fields) runs, as
// an absolute path with symbolic links resolved: its first field, or for
// "/usr/bin/env [-S] [VAR=value...] NAME" NAME looked up in pathList (the
// PATH the plugin gets). "" when it cannot be found.
func Interpreter(fields []string, pathList string) string {
	if len(fields) == 0 {
		return ""
	}
	prog := fields[0]
	if filepath.Base(prog) == "env" {
		prog = ""
		for _, f := range fields[1:] {
			if !strings.HasPrefix(f, "-") && !strings.Contains(f, "=") {
				prog = f
				break
			}
		}
		if prog == "" {
			return ""
		}
	}
	if !strings.Contains(prog, "/") {
		prog = lookPath(prog, pathList)
	}
	if prog == "" {
		return ""
	}
	real, err := filepath.EvalSymlinks(prog)
	if err != nil {
		return ""
	}
	real, err = filepath.Abs(real)
	if err != nil {
		return ""
	}
	return real
}

// lookPath finds name in the folders of pathList (a PATH value): the
// first executable regular file, "" for none.
func lookPath(name, pathList string) string {
	for _, dir := range filepath.SplitList(pathList) {
		if !filepath.IsAbs(dir) {
			continue // a relative PATH entry would depend on the working folder
		}
		p := filepath.Join(dir, name)
		if fi, err := os.Stat(p); err == nil && fi.Mode().IsRegular() && fi.Mode()&0o111 != 0 {
			return p
		}
	}
	return ""
}

// pythonVersion matches a Python interpreter's file name and its
// version: python3.11 gives 3.11.
var pythonVersion = regexp.MustCompile(`^python(\d+\.\d+)$`)

// InterpreterReads returns what a confined script needs to read beside
// DefaultRead to run under interpreter interp (an absolute path with
// links resolved, as Interpreter returns): interp itself; when it lies in
// a bin folder, the lib folder beside it (PREFIX/lib: its standard
// library and installed packages, such as a Node or Python of nvm or
// pyenv); and for a Python, the user's site-packages under home
// (home/.local/lib/pythonX.Y/site-packages, where pip install --user
// puts packages). Paths within DefaultRead and paths that do not exist
// are left out; home "" or "/" is no home. nil for interp "".
func InterpreterReads(interp, home string) []string {
	if interp == "" {
		return nil
	}
	var out []string
	add := func(p string) {
		if _, err := os.Stat(p); err == nil && !Within(p, defaultRead) && !slices.Contains(out, p) {
			out = append(out, p)
		}
	}
	add(interp)
	if bin := filepath.Dir(interp); filepath.Base(bin) == "bin" && filepath.Dir(bin) != "/" {
		add(filepath.Join(filepath.Dir(bin), "lib"))
	}
	if m := pythonVersion.FindStringSubmatch(filepath.Base(interp)); m != nil && home != "" && home != "/" && filepath.IsAbs(home) {
		add(filepath.Join(filepath.Clean(home), ".local", "lib", "python"+m[1], "site-packages"))
	}
	return out
}

// Within reports whether path p is one of dirs or lies inside one.
func Within(p string, dirs []string) bool {
	return slices.ContainsFunc(dirs, func(d string) bool {
		rel, err := filepath.Rel(filepath.Clean(d), p)
		return err == nil && rel != ".." && !strings.HasPrefix(rel, "../")
	})
}
