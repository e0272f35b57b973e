package host

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"time"

	"github.com/opentool-host/opentool-host/internal/decl"
	"github.com/opentool-host/opentool-host/lockfile"
)

// PluginPrefix is the file-name prefix of plugin executables, after the
// Terraform/Packer naming rule: "opentool-plugin-NAME".
const PluginPrefix = "opentool-plugin-"

// pluginNameRE is what NAME may be: it keeps aggregated schema keys
// ("NAME.Schema") collision-free.
var pluginNameRE = regexp.MustCompile(`^[a-zA-Z0-9_-]{1,64}$`)

// PluginName returns the plugin name of file base name file and whether
// file follows the naming rule: "opentool-plugin-NAME" with NAME matching
// ^[a-zA-Z0-9_-]{1,64}$. Dotfiles, editors' temp files ("~", ".swp",
// ".tmp", ".part") and names with other characters are rejected.
func PluginName(file string) (string, bool) {
	name, ok := strings.CutPrefix(file, PluginPrefix)
	if !ok || !pluginNameRE.MatchString(name) {
		return "", false
	}
	return name, true
}

// candidate is a plugin found in the plugins directory: an executable
// file, or one server of an MCP server declaration (NAME.mcp.json).
type candidate struct {
	name string
	path string // the file in the plugins directory
	info fileStamp
	// launch is, for a declared server, the decl.Launch JSON handed to
	// the adapter, and sum its sha256 (which identifies the process as a
	// binary's sha256 does); both "" for an executable.
	launch string
	sum    string
	// fault is why a declaration could not be read; the plugin named
	// after the file then fails to start with it.
	fault string
	// policy is the plugin's NAME.policy.json (zero when none).
	policy policyRef
	// fileSum is, for a declared plugin, the sha256 of the declaration
	// file's bytes the launch was parsed from (pinned by opentool.lock).
	fileSum string
}

// IsDeclaration reports whether file (a base name) is a drop-in
// declaration: "NAME.mcp.json" (MCP servers) or "NAME.tools.json"
// (command-line tools), NAME following the plugin naming rule.
func IsDeclaration(file string) bool {
	_, ok := declName(file)
	return ok
}

// declName returns NAME of "NAME.mcp.json" or "NAME.tools.json".
func declName(file string) (string, bool) {
	for _, suffix := range []string{decl.MCPSuffix, decl.ToolsSuffix} {
		if name, ok := strings.CutSuffix(file, suffix); ok && pluginNameRE.MatchString(name) {
			return name, true
		}
	}
	return "", false
}

// isDropIn reports whether file (a base name) is something the host acts
// on: a plugin executable, a declaration or a policy file.
func isDropIn(file string) bool {
	_, ok := PluginName(file)
	return ok || isDataFile(file)
}

// isDataFile reports whether file (a base name) is a declaration or a
// policy file: JSON the host reads, which needs no exec bit.
func isDataFile(file string) bool {
	_, policy := isPolicyFile(file)
	return policy || IsDeclaration(file) || file == lockfile.Name
}

// fileStamp is what tells that a file changed without reading it.
type fileStamp struct {
	size  int64
	mtime time.Time
	mode  fs.FileMode
}

// equal reports whether s and t are the same stamp.
func (s fileStamp) equal(t fileStamp) bool {
	return s.size == t.size && s.mtime.Equal(t.mtime) && s.mode == t.mode
}

// stampOf returns the stamp of fi.
func stampOf(fi fs.FileInfo) fileStamp {
	return fileStamp{size: fi.Size(), mtime: fi.ModTime(), mode: fi.Mode()}
}

// checkCandidate reports whether path is a plugin to run: its base name
// follows the naming rule and it is a regular file (symlinks are followed)
// with an exec bit set. The reason says why not.
func checkCandidate(path string) (c candidate, reason string) {
	base := filepath.Base(path)
	name, ok := PluginName(base)
	if !ok {
		if strings.HasPrefix(base, PluginPrefix) {
			return c, "plugin name must match " + PluginPrefix + "[a-zA-Z0-9_-]{1,64}"
		}
		return c, "name does not start with " + PluginPrefix
	}
	fi, err := os.Stat(path)
	if err != nil {
		return c, err.Error()
	}
	if !fi.Mode().IsRegular() {
		return c, "not a regular file"
	}
	if fi.Mode().Perm()&0o111 == 0 {
		return c, "not executable"
	}
	return candidate{name: name, path: path, info: stampOf(fi)}, ""
}

// readDeclaration returns the plugins declared in the file at path, one
// candidate each: every server of NAME.mcp.json (a server with
// "disabled": true is left out), or NAME for NAME.tools.json. A file
// that cannot be read or parsed is one candidate named after the file,
// with the fault (JSON path and reason). A file that is gone declares
// nothing.
func readDeclaration(path string) []candidate {
	name, _ := declName(filepath.Base(path))
	fi, err := os.Stat(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err == nil && !fi.Mode().IsRegular() {
		err = errors.New("not a regular file")
	}
	var launches []decl.Launch
	var fileSum string
	if err == nil {
		launches, fileSum, err = parseDeclaration(path, name)
	}
	if err != nil {
		c := candidate{name: name, path: path, fault: fmt.Sprintf("declaration %s: %v", filepath.Base(path), err)}
		if fi != nil {
			c.info = stampOf(fi)
		}
		return []candidate{c}
	}
	out := make([]candidate, 0, len(launches))
	for _, l := range launches {
		launch := l.Encode()
		sum := sha256.Sum256([]byte(launch))
		out = append(out, candidate{name: l.Name, path: path, info: stampOf(fi), launch: launch, sum: hex.EncodeToString(sum[:]), fileSum: fileSum})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].name < out[j].name })
	return out
}

// parseDeclaration reads (at most decl.MaxFileBytes) and parses the
// declaration at path, plugin name's for a tools file, and returns what
// each declared plugin is launched with and the sha256 of the bytes read.
func parseDeclaration(path, name string) ([]decl.Launch, string, error) {
	data, err := readSmallFile(path, decl.MaxFileBytes)
	if err != nil {
		return nil, "", err
	}
	sum := sha256.Sum256(data)
	fileSum := hex.EncodeToString(sum[:])
	dir, _ := filepath.Abs(filepath.Dir(path))
	if strings.HasSuffix(path, decl.ToolsSuffix) {
		cmds, err := decl.ParseCommands(data)
		if err != nil {
			return nil, "", err
		}
		return []decl.Launch{{Name: name, Dir: dir, Commands: cmds}}, fileSum, nil
	}
	servers, err := decl.ParseMCP(data)
	if err != nil {
		return nil, "", err
	}
	out := make([]decl.Launch, 0, len(servers))
	for n, srv := range servers {
		out = append(out, decl.Launch{Name: n, Dir: dir, Server: srv})
	}
	return out, fileSum, nil
}

// scanDir lists the plugins of dir in name order: executables and
// declared servers. skipped maps each other entry to the reason it is
// not a plugin (logged at debug level); refused lists the candidates
// whose name another one took (see claimNames), with the reason.
func scanDir(dir string, owners map[string]string) (found []candidate, skipped, refused map[string]string, err error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, nil, nil, fmt.Errorf("scan plugins dir: %w", err)
	}
	skipped = map[string]string{}
	var all []candidate
	for _, e := range entries {
		path := filepath.Join(dir, e.Name())
		if _, ok := isPolicyFile(e.Name()); ok {
			continue // read with its plugin (withPolicies)
		}
		if IsDeclaration(e.Name()) {
			all = append(all, readDeclaration(path)...)
			continue
		}
		c, reason := checkCandidate(path)
		if reason != "" {
			skipped[e.Name()] = reason
			continue
		}
		all = append(all, c)
	}
	found, refused = claimNames(all, owners)
	sort.Slice(found, func(i, j int) bool { return found[i].name < found[j].name })
	return withPolicies(dir, found), skipped, refused, nil
}

// withPolicies reads the policy file of each candidate's plugin.
func withPolicies(dir string, cs []candidate) []candidate {
	for i := range cs {
		cs[i].policy = readPolicy(dir, cs[i].name)
	}
	return cs
}

// claimNames keeps one candidate per plugin name: the one from the file
// that already serves the name (owners: name → file), else an executable
// over a declared server, else the file first by name. refused maps each
// other one ("FILE: NAME") to the reason.
func claimNames(all []candidate, owners map[string]string) (kept []candidate, refused map[string]string) {
	sort.SliceStable(all, func(i, j int) bool {
		a, b := all[i], all[j]
		if a.name != b.name {
			return a.name < b.name
		}
		if ao, bo := owners[a.name] == a.path, owners[b.name] == b.path; ao != bo {
			return ao
		}
		if ae, be := a.launch == "" && a.fault == "", b.launch == "" && b.fault == ""; ae != be {
			return ae
		}
		return a.path < b.path
	})
	refused = map[string]string{}
	for i, c := range all {
		if i > 0 && all[i-1].name == c.name {
			refused[filepath.Base(c.path)+": "+c.name] = "plugin name " + c.name + " is taken by " + filepath.Base(kept[len(kept)-1].path)
			continue
		}
		kept = append(kept, c)
	}
	return kept, refused
}
