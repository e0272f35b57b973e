package host

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/opentool-host/opentool-host/protocol/decl"
	"github.com/opentool-host/opentool-host/protocol/lockfile"
)

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
	// fault is why a declaration, or its entry for this plugin, could
	// not be read; the plugin then fails to start with it (a plugin named
	// after the file when the file as a whole has a fault).
	fault string
	// policy is the plugin's NAME.policy.json (zero when none).
	policy policyRef
	// fileSum is, for a declared plugin, the sha256 of the declaration
	// file's bytes the launch was parsed from (pinned by opentool.lock).
	fileSum string
	// operator is true for a server of a file the operator names
	// (Config.MCPConfigs), outside the plugins folder.
	operator bool
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
		if name, ok := strings.CutSuffix(file, suffix); ok && decl.ValidPluginName(name) {
			return name, true
		}
	}
	return "", false
}

// isDropIn reports whether file (a base name) is something the host acts
// on: a plugin executable, a declaration or a policy file.
func isDropIn(file string) bool {
	_, ok := decl.PluginName(file)
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
// with an exec bit set that the host can read (it runs a copy). The reason
// says why not: "not a regular file", "not executable", "not readable:
// permission denied", "a symbolic link to a missing file".
func checkCandidate(path string) (c candidate, reason string) {
	base := filepath.Base(path)
	name, ok := decl.PluginName(base)
	if !ok {
		if strings.HasPrefix(base, decl.PluginPrefix) {
			return c, "plugin name must match " + decl.PluginPrefix + "[a-zA-Z0-9_-]{1,64}"
		}
		return c, "name does not start with " + decl.PluginPrefix
	}
	fi, err := os.Stat(path)
	if err != nil {
		return c, statReason(err)
	}
	if !fi.Mode().IsRegular() {
		return c, "not a regular file"
	}
	if fi.Mode().Perm()&0o111 == 0 {
		return c, "not executable"
	}
	if why := unreadable(path); why != "" {
		return c, why
	}
	return candidate{name: name, path: path, info: stampOf(fi)}, ""
}

// readDeclaration returns the plugins declared in the file at path, one
// candidate each, and what the host ignored of the file (logged by the
// caller): every server of an MCP server declaration, a drop-in
// NAME.mcp.json or, operator true, a file the operator names
// (Config.MCPConfigs), which may read the host's environment
// (decl.Origin); or NAME for NAME.tools.json. A server with "disabled":
// true is left out; a server whose entry has a fault is a candidate with
// that fault (JSON path and reason), so that it alone fails. A file that
// cannot be read or parsed as a whole is one candidate named after the
// file, with the fault. A file that is gone declares nothing.
func readDeclaration(path string, operator bool) ([]candidate, declNote) {
	name, _ := declName(filepath.Base(path))
	if operator {
		name = configName(path)
	}
	fi, err := os.Stat(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, declNote{}
	}
	if err == nil && !fi.Mode().IsRegular() {
		err = errors.New("not a regular file")
	}
	var launches []declared
	var fileSum string
	var note declNote
	if err == nil {
		launches, fileSum, note, err = parseDeclaration(path, name, operator)
	}
	if err != nil {
		c := candidate{name: name, path: path, operator: operator, fault: fmt.Sprintf("declaration %s: %v", filepath.Base(path), err)}
		if fi != nil {
			c.info = stampOf(fi)
		}
		return []candidate{c}, note
	}
	out := make([]candidate, 0, len(launches))
	for _, d := range launches {
		c := candidate{name: d.Name, path: path, info: stampOf(fi), operator: operator}
		if d.fault != nil {
			c.fault = fmt.Sprintf("declaration %s: %v", filepath.Base(path), d.fault)
			out = append(out, c)
			continue
		}
		c.launch = d.Encode()
		sum := sha256.Sum256([]byte(c.launch))
		c.sum, c.fileSum = hex.EncodeToString(sum[:]), fileSum
		out = append(out, c)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].name < out[j].name })
	return out, note
}

// configName is the name of the plugin that fails in place of the
// servers of operator's file path when the file as a whole has a fault:
// its base name without the extension, mapped as server names are.
func configName(path string) string {
	base := strings.TrimSuffix(filepath.Base(path), filepath.Ext(path))
	if name, err := decl.MapName(base); err == nil {
		return name
	}
	return "mcp-config"
}

// checkMCPConfigs checks the operator's MCP config files
// (Config.MCPConfigs): absolute paths of regular files outside dir (the
// plugins folder and every folder in it are untrusted), each given once
// and each readable as a whole (decl.ParseDesktop).
func checkMCPConfigs(dir string, configs []string) error {
	absDir, err := filepath.Abs(dir)
	if err != nil {
		return err
	}
	realDir, err := filepath.EvalSymlinks(absDir)
	if err != nil {
		return err
	}
	seen := map[string]string{}
	for _, p := range configs {
		if !filepath.IsAbs(p) {
			return fmt.Errorf("MCP config %q must be an absolute path", p)
		}
		real, err := filepath.EvalSymlinks(p)
		if err != nil {
			return fmt.Errorf("MCP config %s: %w", p, err)
		}
		if within(p, absDir) || within(real, realDir) {
			return fmt.Errorf("MCP config %s is in the plugins folder %s, whose files are untrusted drop-ins: "+
				"keep the operator's config outside it, or make it a drop-in NAME.mcp.json there (which may not read the host's environment)", p, dir)
		}
		if prev, ok := seen[real]; ok {
			return fmt.Errorf("MCP config %s is given twice (also as %s)", p, prev)
		}
		seen[real] = p
		data, err := decl.ReadFile(p, decl.MaxFileBytes)
		if err != nil {
			return fmt.Errorf("MCP config %s: %w", p, err)
		}
		if _, err := decl.ParseDesktop(data); err != nil {
			return fmt.Errorf("MCP config %s: %w", p, err)
		}
	}
	return nil
}

// declared is one plugin a declaration file declares: its launch, or
// why its entry cannot run.
type declared struct {
	decl.Launch
	fault error
}

// declNote is what the host did not take of a declaration file as it is
// written, logged in one line a file (logNote).
type declNote struct {
	ignored  []string // JSON paths of members the host does not use
	disabled []string // servers with "disabled": true
	renamed  []string // "KEY → NAME" for server names mapped to [a-zA-Z0-9_-]
}

// logNote logs n for file (at info level), nothing when n is empty.
func logNote(log hclog.Logger, file string, n declNote) {
	if len(n.ignored)+len(n.disabled)+len(n.renamed) == 0 {
		return
	}
	var kv []any
	if len(n.ignored) > 0 {
		kv = append(kv, "ignored", strings.Join(n.ignored, ", "))
	}
	if len(n.disabled) > 0 {
		kv = append(kv, "disabled", strings.Join(n.disabled, ", "))
	}
	if len(n.renamed) > 0 {
		kv = append(kv, "renamed", strings.Join(n.renamed, ", "))
	}
	log.Info("MCP server declaration: members the host does not use ignored, disabled servers left out, names outside [a-zA-Z0-9_-] mapped",
		append([]any{"file", file}, kv...)...)
}

// parseDeclaration reads (at most decl.MaxFileBytes) and parses the
// declaration at path, plugin name's for a tools file, and returns what
// each declared plugin is launched with (or its entry's fault), the
// sha256 of the bytes read, and what was ignored. Errors: the file cannot
// be read, or has a fault as a whole.
func parseDeclaration(path, name string, operator bool) ([]declared, string, declNote, error) {
	read := decl.ReadDropIn
	if operator {
		read = decl.ReadFile // the operator's own file (Config.MCPConfigs)
	}
	data, err := read(path, decl.MaxFileBytes)
	if err != nil {
		return nil, "", declNote{}, err
	}
	sum := sha256.Sum256(data)
	fileSum := hex.EncodeToString(sum[:])
	dir, _ := filepath.Abs(filepath.Dir(path))
	if !operator && strings.HasSuffix(path, decl.ToolsSuffix) {
		cmds, err := decl.ParseCommands(data)
		if err != nil {
			return nil, "", declNote{}, err
		}
		return []declared{{Launch: decl.Launch{Name: name, Dir: dir, Commands: cmds}}}, fileSum, declNote{}, nil
	}
	cfg, err := decl.ParseDesktop(data)
	if err != nil {
		return nil, "", declNote{}, err
	}
	note := declNote{ignored: cfg.Ignored}
	origin := decl.Origin{Dir: dir, Operator: operator}
	out := make([]declared, 0, len(cfg.Entries))
	for _, e := range cfg.Entries {
		if e.Disabled {
			note.disabled = append(note.disabled, e.Key)
			continue
		}
		if e.Fault == nil && e.Name != e.Key {
			note.renamed = append(note.renamed, e.Key+" → "+e.Name)
		}
		d := declared{Launch: decl.Launch{Name: e.Name, Dir: dir}}
		d.Server, d.fault = e.Resolve(origin)
		if d.fault == nil && runsThisHost(d.Launch) {
			d.fault = &decl.Fault{Path: e.Path + ".command", Message: "runs this opentool-host itself (a desktop config often lists the host): " +
				"the host does not start itself behind itself; leave the entry out of the file the host reads"}
		}
		out = append(out, d)
	}
	return out, fileSum, note, nil
}

// runsThisHost reports whether l's server is this host's own binary
// (resolved as the adapter resolves it).
func runsThisHost(l decl.Launch) bool {
	if l.Server.Command == "" {
		return false
	}
	self, err := os.Executable()
	if err != nil {
		return false
	}
	e, err := l.Exec([]string{l.Server.Command}, l.Server.Cwd, os.Getenv("PATH"))
	if err != nil {
		return false
	}
	a, errA := os.Stat(self)
	b, errB := os.Stat(e.Arg0)
	return errA == nil && errB == nil && os.SameFile(a, b)
}

// desktopConfigNames are the file names desktop clients give their
// configs, which the host does not read from the plugins folder under
// those names (scanDir says so).
var desktopConfigNames = map[string]bool{
	"claude_desktop_config.json": true, // Claude Desktop
	"mcp.json":                   true, // Cursor, VS Code
	".mcp.json":                  true, // Claude Code
	"mcp_config.json":            true, // Windsurf
}

// desktopConfigHint says why a desktop client's config named file (a
// base name) in the plugins folder is not read, and how to have it read;
// "" for other names.
func desktopConfigHint(file string) string {
	if !desktopConfigNames[file] {
		return ""
	}
	return "a desktop client's MCP config is read from the plugins folder only as NAME.mcp.json: rename it, " +
		"or pass it with run --mcp-config FILE (which, being the operator's, may also read the host's environment)"
}

// scan is what scanDir found.
type scan struct {
	// found are the plugins, in name order.
	found []candidate
	// skipped maps each other entry of the folder to the reason it is
	// not a plugin (logged at debug level).
	skipped map[string]string
	// refused maps the candidates whose name another one took (see
	// claimNames) to the reason.
	refused map[string]string
	// notes are what was ignored of each declaration (logNote), by file.
	notes map[string]declNote
	// hints map desktop clients' config files in the folder to why they
	// are not read (logged as warnings).
	hints map[string]string
}

// scanDir lists the plugins of dir and of the operator's MCP config
// files (Config.MCPConfigs): executables and declared servers.
func scanDir(dir string, configs []string, owners map[string]string) (scan, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return scan{}, fmt.Errorf("scan plugins dir: %w", err)
	}
	s := scan{skipped: map[string]string{}, notes: map[string]declNote{}, hints: map[string]string{}}
	var all []candidate
	read := func(path string, operator bool) {
		cs, note := readDeclaration(path, operator)
		all = append(all, cs...)
		s.notes[path] = note
	}
	for _, e := range entries {
		path := filepath.Join(dir, e.Name())
		if _, ok := isPolicyFile(e.Name()); ok {
			continue // read with its plugin (withPolicies)
		}
		if IsDeclaration(e.Name()) {
			read(path, false)
			continue
		}
		if hint := desktopConfigHint(e.Name()); hint != "" {
			s.hints[e.Name()] = hint
			continue
		}
		c, reason := checkCandidate(path)
		if reason != "" {
			s.skipped[e.Name()] = reason
			continue
		}
		all = append(all, c)
	}
	for _, path := range configs {
		read(path, true)
	}
	s.found, s.refused = claimNames(all, owners)
	sort.Slice(s.found, func(i, j int) bool { return s.found[i].name < s.found[j].name })
	s.found = withPolicies(dir, s.found)
	return s, nil
}

// withPolicies reads the policy file of each candidate's plugin (none
// for a candidate with a fault, which does not start, and whose name may
// be a server's key as written).
func withPolicies(dir string, cs []candidate) []candidate {
	for i := range cs {
		if cs[i].fault == "" {
			cs[i].policy = readPolicy(dir, cs[i].name)
		}
	}
	return cs
}

// takenBy is why c is refused when the file at path has its name; it
// also gives c's own fault, which would otherwise never be shown.
func (c candidate) takenBy(path string) string {
	why := "plugin name " + c.name + " is taken by " + filepath.Base(path)
	if c.fault != "" {
		why += "; and " + c.fault
	}
	return why
}

// claimNames keeps one candidate per plugin name: the one from a file
// the operator names (Config.MCPConfigs: nothing in the plugins folder
// takes over what the operator declared), else the one from the file
// that already serves the name (owners: name → file), else an executable
// over a declared server, else the file first by name. refused maps each
// other one ("FILE: NAME") to the reason.
func claimNames(all []candidate, owners map[string]string) (kept []candidate, refused map[string]string) {
	sort.SliceStable(all, func(i, j int) bool {
		a, b := all[i], all[j]
		if a.name != b.name {
			return a.name < b.name
		}
		if a.operator != b.operator {
			return a.operator
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
			refused[filepath.Base(c.path)+": "+c.name] = c.takenBy(kept[len(kept)-1].path)
			continue
		}
		kept = append(kept, c)
	}
	return kept, refused
}
