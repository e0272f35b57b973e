package discover

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

	"github.com/opentool-host/opentool-host/internal/strictjson"
	"github.com/opentool-host/opentool-host/process/launcher"
	"github.com/opentool-host/opentool-host/process/sandbox"
	"github.com/opentool-host/opentool-host/protocol/decl"
	"github.com/opentool-host/opentool-host/protocol/lockfile"
)

// Candidate is a plugin found in the plugins directory: an executable
// file, or one server of an MCP server declaration (NAME.mcp.json).
type Candidate struct {
	// Name is the plugin's name (NAME of opentool-plugin-NAME, or the
	// server's name in its declaration).
	Name string
	Path string // the file in the plugins directory
	// Info is the file's stamp when it was found.
	Info FileStamp
	// Launch is, for a declared server, the decl.Launch JSON handed to
	// the adapter, and Sum its sha256 (which identifies the process as a
	// binary's sha256 does); both "" for an executable.
	Launch string
	Sum    string
	// Fault is why a declaration, or its entry for this plugin, could
	// not be read; the plugin then fails to start with it (a plugin named
	// after the file when the file as a whole has a fault).
	Fault string
	// Policy is the plugin's NAME.policy.json (zero when none).
	Policy PolicyRef
	// FileSum is, for a declared plugin, the sha256 of the declaration
	// file's bytes the launch was parsed from (pinned by opentool.lock).
	FileSum string
	// Operator is true for a server of a file the operator names
	// (Config.MCPConfigs), outside the plugins folder.
	Operator bool
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
	_, policy := IsPolicyFile(file)
	return policy || IsDeclaration(file) || file == lockfile.Name
}

// FileStamp is what tells that a file changed without reading it.
type FileStamp struct {
	Size    int64       // bytes
	ModTime time.Time   // the file's mtime
	Mode    fs.FileMode // type and permission bits
}

// Equal reports whether s and t are the same stamp.
func (s FileStamp) Equal(t FileStamp) bool {
	return s.Size == t.Size && s.ModTime.Equal(t.ModTime) && s.Mode == t.Mode
}

// StampOf returns the stamp of fi.
func StampOf(fi fs.FileInfo) FileStamp {
	return FileStamp{Size: fi.Size(), ModTime: fi.ModTime(), Mode: fi.Mode()}
}

// CheckCandidate reports whether path is a plugin to run: its base name
// follows the naming rule and it is a regular file (symlinks are followed)
// with an exec bit set that the host can read (it runs a copy). The reason
// says why not: "not a regular file", "not executable", "not readable:
// permission denied", "a symbolic link to a missing file".
func CheckCandidate(path string) (c Candidate, reason string) {
	base := filepath.Base(path)
	name, ok := decl.PluginName(base)
	if !ok {
		if strings.HasPrefix(base, decl.PluginPrefix) {
			return c, "plugin name must match " + decl.PluginPrefix + "[a-zA-Z0-9_-]{1,64}, without \"__\""
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
	return Candidate{Name: name, Path: path, Info: StampOf(fi)}, ""
}

// ReadDeclaration returns the plugins declared in the file at path, one
// candidate each, and what the host ignored of the file (logged by the
// caller): every server of an MCP server declaration, a drop-in
// NAME.mcp.json or, operator true, a file the operator names
// (Config.MCPConfigs), which may read the host's environment
// (decl.Origin); or NAME for NAME.tools.json. A server with "disabled":
// true is left out; a server whose entry has a fault is a candidate with
// that fault (JSON path and reason), so that it alone fails. A file that
// cannot be read or parsed as a whole is one candidate named after the
// file, with the fault. A file that is gone declares nothing.
func ReadDeclaration(path string, operator bool) ([]Candidate, DeclNote) {
	name, _ := declName(filepath.Base(path))
	if operator {
		name = configName(path)
	}
	fi, err := os.Stat(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, DeclNote{}
	}
	if err == nil && !fi.Mode().IsRegular() {
		err = errors.New("not a regular file")
	}
	var launches []declared
	var fileSum string
	var note DeclNote
	if err == nil {
		launches, fileSum, note, err = parseDeclaration(path, name, operator)
	}
	if err != nil {
		c := Candidate{Name: name, Path: path, Operator: operator, Fault: fmt.Sprintf("declaration %v", strictjson.InFile(filepath.Base(path), err))}
		if fi != nil {
			c.Info = StampOf(fi)
		}
		return []Candidate{c}, note
	}
	out := make([]Candidate, 0, len(launches))
	for _, d := range launches {
		c := Candidate{Name: d.Name, Path: path, Info: StampOf(fi), Operator: operator}
		if d.fault != nil {
			c.Fault = fmt.Sprintf("declaration %v", strictjson.InFile(filepath.Base(path), d.fault))
			out = append(out, c)
			continue
		}
		c.Launch = d.Encode()
		sum := sha256.Sum256([]byte(c.Launch))
		c.Sum, c.FileSum = hex.EncodeToString(sum[:]), fileSum
		out = append(out, c)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
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

// CheckMCPConfigs checks the operator's MCP config files
// (Config.MCPConfigs): absolute paths of regular files outside dir (the
// plugins folder and every folder in it are untrusted), each given once
// and each readable as a whole (decl.ParseDesktop).
func CheckMCPConfigs(dir string, configs []string) error {
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
		if sandbox.Within(p, []string{absDir}) || sandbox.Within(real, []string{realDir}) {
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
			return fmt.Errorf("MCP config %w", strictjson.InFile(p, err))
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

// DeclNote is what the host did not take of a declaration file as it is
// written, logged in one line a file (logNote).
type DeclNote struct {
	ignored  []string // JSON paths of members the host does not use
	disabled []string // servers with "disabled": true
	renamed  []string // "KEY → NAME" for server names mapped to [a-zA-Z0-9_-]
}

// LogNote logs n for file (at info level), nothing when n is empty.
func LogNote(log hclog.Logger, file string, n DeclNote) {
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
func parseDeclaration(path, name string, operator bool) ([]declared, string, DeclNote, error) {
	read := decl.ReadDropIn
	if operator {
		read = decl.ReadFile // the operator's own file (Config.MCPConfigs)
	}
	data, err := read(path, decl.MaxFileBytes)
	if err != nil {
		return nil, "", DeclNote{}, err
	}
	sum := sha256.Sum256(data)
	fileSum := hex.EncodeToString(sum[:])
	dir, _ := filepath.Abs(filepath.Dir(path))
	if !operator && strings.HasSuffix(path, decl.ToolsSuffix) {
		cmds, err := decl.ParseCommands(data)
		if err != nil {
			return nil, "", DeclNote{}, err
		}
		return []declared{{Launch: decl.Launch{Name: name, Dir: dir, Commands: cmds}}}, fileSum, DeclNote{}, nil
	}
	cfg, err := decl.ParseDesktop(data)
	if err != nil {
		return nil, "", DeclNote{}, err
	}
	note := DeclNote{ignored: cfg.Ignored}
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

// Scan is what scanDir found.
type Scan struct {
	// Found are the plugins, in name order.
	Found []Candidate
	// Skipped maps each other entry of the folder to the reason it is
	// not a plugin (logged at debug level).
	Skipped map[string]string
	// Refused maps the candidates whose name another one took (see
	// claimNames) to the reason.
	Refused map[string]string
	// Notes are what was ignored of each declaration (logNote), by file.
	Notes map[string]DeclNote
	// Hints map desktop clients' config files in the folder to why they
	// are not read (logged as warnings).
	Hints map[string]string
}

// ScanDir lists the plugins of dir and of the operator's MCP config
// files (Config.MCPConfigs): executables and declared servers.
func ScanDir(dir string, configs []string, owners map[string]string) (Scan, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return Scan{}, fmt.Errorf("scan plugins dir: %w", err)
	}
	s := Scan{Skipped: map[string]string{}, Notes: map[string]DeclNote{}, Hints: map[string]string{}}
	var all []Candidate
	read := func(path string, operator bool) {
		cs, note := ReadDeclaration(path, operator)
		all = append(all, cs...)
		s.Notes[path] = note
	}
	for _, e := range entries {
		path := filepath.Join(dir, e.Name())
		if _, ok := IsPolicyFile(e.Name()); ok {
			continue // read with its plugin (withPolicies)
		}
		if IsDeclaration(e.Name()) {
			read(path, false)
			continue
		}
		if hint := desktopConfigHint(e.Name()); hint != "" {
			s.Hints[e.Name()] = hint
			continue
		}
		c, reason := CheckCandidate(path)
		if reason != "" {
			s.Skipped[e.Name()] = reason
			continue
		}
		all = append(all, c)
	}
	for _, path := range configs {
		read(path, true)
	}
	s.Found, s.Refused = claimNames(all, owners)
	sort.Slice(s.Found, func(i, j int) bool { return s.Found[i].Name < s.Found[j].Name })
	s.Found = WithPolicies(dir, s.Found)
	return s, nil
}

// WithPolicies reads the policy file of each candidate's plugin (none
// for a candidate with a fault, which does not start, and whose name may
// be a server's key as written).
func WithPolicies(dir string, cs []Candidate) []Candidate {
	for i := range cs {
		if cs[i].Fault == "" {
			cs[i].Policy = readPolicy(dir, cs[i].Name)
		}
	}
	return cs
}

// TakenBy is why c is refused when the file at path serves plugin name
// (c's own name, or one of c's variable key, launcher.PluginKey); it also
// gives c's own fault, which would otherwise never be shown.
func (c Candidate) TakenBy(name, path string) string {
	why := "plugin name " + c.Name + " is taken by " + filepath.Base(path)
	if name != c.Name {
		key := launcher.PluginKey(c.Name)
		why = "plugin name " + c.Name + " has the variable key of plugin " + name + " of " + filepath.Base(path) +
			" (" + launcher.PluginPrefix + key + "__VAR would reach both): names that differ only in case or in \"-\" against \"_\" cannot both be served; rename one"
	}
	if c.Fault != "" {
		why += "; and " + c.Fault
	}
	return why
}

// claimNames keeps one candidate per plugin name, and per variable key
// (launcher.PluginKey: my-files, my_files and MY-FILES are one): the one from a file
// the operator names (Config.MCPConfigs: nothing in the plugins folder
// takes over what the operator declared), else the one from the file
// that already serves the name (owners: name → file), else an executable
// over a declared server, else the file first by name. refused maps each
// other one ("FILE: NAME") to the reason.
func claimNames(all []Candidate, owners map[string]string) (kept []Candidate, refused map[string]string) {
	sort.SliceStable(all, func(i, j int) bool {
		a, b := all[i], all[j]
		if ka, kb := launcher.PluginKey(a.Name), launcher.PluginKey(b.Name); ka != kb {
			return ka < kb
		}
		if a.Operator != b.Operator {
			return a.Operator
		}
		if ao, bo := owners[a.Name] == a.Path, owners[b.Name] == b.Path; ao != bo {
			return ao
		}
		if ae, be := a.Launch == "" && a.Fault == "", b.Launch == "" && b.Fault == ""; ae != be {
			return ae
		}
		return a.Path < b.Path
	})
	refused = map[string]string{}
	for i, c := range all {
		if i > 0 && launcher.PluginKey(all[i-1].Name) == launcher.PluginKey(c.Name) {
			w := kept[len(kept)-1]
			refused[filepath.Base(c.Path)+": "+c.Name] = c.TakenBy(w.Name, w.Path)
			continue
		}
		kept = append(kept, c)
	}
	return kept, refused
}
