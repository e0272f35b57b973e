package supervise

import (
	"bufio"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
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
	f, err := os.Open(file)
	if err != nil {
		return "the one named by #!"
	}
	defer f.Close()
	line, _ := bufio.NewReader(f).ReadString('\n')
	fields := strings.Fields(strings.TrimPrefix(line, "#!"))
	if !strings.HasPrefix(line, "#!") || len(fields) == 0 {
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
