package supervise

import (
	"errors"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"

	"github.com/opentool-host/opentool-host/process/sandbox"
)

// copyName matches the name of a host-owned copy of a plugin file: its
// sha256 in hex (discover/statedir.go).
const copyName = `/[0-9a-f]{64}`

// UserPaths returns lines with every path of a host-owned copy under bin
// (bin/SHA256, stateDir.bin) replaced by file, the file of the plugins
// folder the plugin runs a copy of: a traceback then names the file the
// user wrote, not the copy. lines is not modified.
func UserPaths(lines []string, bin, file string) []string {
	if len(lines) == 0 || bin == "" {
		return lines
	}
	re := regexp.MustCompile(regexp.QuoteMeta(bin) + copyName)
	out := make([]string, len(lines))
	for i, l := range lines {
		out[i] = re.ReplaceAllLiteralString(l, file)
	}
	return out
}

// missingModule matches Python's report of a module of the Python SDK's
// dependencies that the interpreter cannot import.
var missingModule = regexp.MustCompile(`ModuleNotFoundError: No module named '(grpc|cryptography|google)[.']`)

// StartHint is the next step for a failed start of the script file whose
// stderr says its interpreter lacks one of the Python SDK's dependencies
// (grpcio, its protobuf, cryptography): which interpreter ran it and how
// to give it them. "" for every other failure.
func StartHint(file string, stderr []string) string {
	var module string
	for _, l := range stderr {
		if m := missingModule.FindStringSubmatch(l); m != nil {
			module = m[1]
			break
		}
	}
	if module == "" {
		return ""
	}
	interp := interpreter(file)
	return "the interpreter of the script's #! line, " + interp + ", cannot import " + module +
		": install the Python SDK's dependencies for it (" + firstWord(interp) + " -m pip install grpcio cryptography), " +
		"or name one that has them in the #! line, such as #!/usr/bin/python3 with Debian's python3-grpcio and python3-cryptography (make deps-python)"
}

// interpreter is what the #! line of file runs: "/usr/bin/python3", or
// for "#!/usr/bin/env python3" "python3 (/root/.pyenv/shims/python3 on
// PATH)"; "the one named by #!" when the line cannot be read.
func interpreter(file string) string {
	fields := sandbox.Shebang(file)
	if len(fields) == 0 {
		return "the one named by #!"
	}
	if filepath.Base(fields[0]) != "env" || len(fields) < 2 {
		return fields[0]
	}
	name := fields[len(fields)-1]
	if found, err := exec.LookPath(name); err == nil {
		return name + " (" + found + " on PATH)"
	}
	return name
}

// firstWord is s up to its first space.
func firstWord(s string) string {
	w, _, _ := strings.Cut(s, " ")
	return w
}

// deniedPath matches a path a program reports it was denied, as Node
// ("EACCES: permission denied, open '/x'"), Python ("[Errno 13]
// Permission denied: '/x'"), Go ("open /x: permission denied") and the
// shell ("/bin/sh: 1: cannot open /x: Permission denied") write it.
var deniedPath = []*regexp.Regexp{
	regexp.MustCompile(`EACCES: permission denied, \w+ '(/[^']*)'`),
	regexp.MustCompile(`\[Errno 13\] Permission denied: '(/[^']*)'`),
	regexp.MustCompile(`(/[^\s:'"]+): [Pp]ermission denied`),
}

// sandboxHint says, for a failed start of a plugin confined by spec
// (Confine), what the sandbox denied and what allows it: the path the
// plugin's stderr names as denied, whether it was a read or a write (a
// path spec lets it read was denied a write), and the host flag or the
// member of policy (the policy file, "" for none) that grants it. A
// denied path the host itself can read is named as the sandbox's
// denial; one the host cannot read either is the file's own
// permissions. With no denied path on stderr it lists what the plugin
// could read. "" when spec does not confine.
func sandboxHint(spec sandbox.Spec, hostConfines bool, policy string, stderr []string) string {
	if !spec.Confine {
		return ""
	}
	path := ""
	for _, l := range stderr {
		for _, re := range deniedPath {
			if m := re.FindStringSubmatch(l); m != nil {
				path = filepath.Clean(m[1])
				break
			}
		}
		if path != "" {
			break
		}
	}
	if path == "" {
		return "it ran in the sandbox, which lets it read only the system folders and " + readList(spec) +
			": a file it needs elsewhere is denied to it (allow one with " + grant("read", "PATH", hostConfines, policy) + ")"
	}
	readable := sandbox.Within(path, slices.Concat(sandbox.DefaultRead(), spec.Read, spec.Write))
	f, err := os.Open(path)
	switch {
	case err == nil:
		f.Close()
	case errors.Is(err, fs.ErrPermission):
		return "the plugin was denied " + path + ", which the host cannot read either: that is the file's own permissions, not only the sandbox"
	case errors.Is(err, fs.ErrNotExist):
		return "the sandbox denied it creating " + path + ": allow it with " + grant("write", filepath.Dir(path), hostConfines, policy)
	}
	if readable {
		return "the sandbox denied it writing " + path + " (it may only read it): allow it with " + grant("write", filepath.Dir(path), hostConfines, policy)
	}
	return "the sandbox denied it reading " + path + ": allow it with " + grant("read", path, hostConfines, policy)
}

// grant names what allows a plugin to read (what "read") or write
// ("write") path: the host's flag when the host confines every plugin
// (and then the policy's member too when it has a policy, which narrows
// the host's paths), else the member of its policy.
func grant(what, path string, hostConfines bool, policy string) string {
	flag, member := "--sandbox-read "+path, "sandbox."+what
	if what == "write" {
		flag = "--sandbox-write " + path
	}
	switch {
	case hostConfines && policy != "":
		return flag + " on the host and " + path + " in " + member + " of " + filepath.Base(policy)
	case hostConfines && what == "write":
		return flag + " on the host and a policy file NAME.policy.json with " + path + " in " + member
	case hostConfines:
		return flag + " on the host"
	}
	return path + " in " + member + " of " + filepath.Base(policy)
}

// readList names the paths spec lets a plugin read beside the system
// folders: "nothing else" for none.
func readList(spec sandbox.Spec) string {
	paths := slices.Concat(spec.Read, spec.Write)
	if len(paths) == 0 {
		return "nothing else"
	}
	return strings.Join(paths, ", ")
}
