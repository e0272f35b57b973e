package decl

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode"

	"github.com/opentool-host/opentool-host/internal/strictjson"
)

// Desktop client configs. The host reads the MCP server list of a
// desktop client's config file unchanged, whether the operator names it
// (run --mcp-config FILE) or it is a drop-in NAME.mcp.json of the
// plugins folder:
//
//   - "mcpServers" (Claude Desktop's claude_desktop_config.json, Claude
//     Code's .mcp.json, Cursor's mcp.json, Windsurf's mcp_config.json,
//     Cline, ...), "servers" (VS Code's mcp.json) and "mcp": {"servers"}
//     (VS Code's settings.json), in that order when a file has several;
//   - JSON with comments and trailing commas, as VS Code writes it;
//   - an entry is a local server ("command", "args", "env", "envFile",
//     "cwd") or a remote one ("url", or Windsurf's "serverUrl", with
//     "headers"); "type" (or Cline's "transportType") is "stdio",
//     "http", "streamable-http", "streamableHttp" or "sse";
//   - "disabled": true leaves the entry out;
//   - "credentials" ("shared", the default, or "per-user", with "url"
//     and "oauth"): whose login the host's calls carry
//     (MCPServer.Credentials);
//   - "sessions" ("per-client", the default, or "shared"),
//     "maxSessions" and "maxSessionsPerKey" (1 to 256), "lendReads" (a
//     boolean), "sharedIdle" (a duration, or "never"), "reclaimIdle" (a
//     duration): how MCP client sessions reach the server
//     (MCPServer.Sessions, MCPServer.MaxSessions,
//     MCPServer.MaxSessionsPerKey, MCPServer.LendReads,
//     MCPServer.SharedIdle, MCPServer.ReclaimIdle);
//   - every other member (top-level ones such as VS Code's "inputs" or
//     Claude Desktop's "globalShortcut", and clients' own settings of an
//     entry such as "autoApprove", "alwaysAllow", "timeout",
//     "disabledTools") means nothing to the host and is ignored
//     (DesktopConfig.Ignored, which the host logs in one line a file);
//   - variables in strings (expand.go) are expanded by Resolve;
//   - each entry stands alone: a fault fails that entry only
//     (DesktopEntry.Fault), with its JSON path; a file that is not JSON,
//     has a member twice or has no server list fails as a whole.

// DesktopConfig is a desktop client's config file as ParseDesktop reads
// it.
type DesktopConfig struct {
	// Entries are the servers in the order of the file ("mcpServers",
	// then "servers", then "mcp.servers").
	Entries []DesktopEntry
	// Ignored are the JSON paths of the members the host does not use
	// (see the list above): top-level ones, then those of the entries.
	Ignored []string
}

// DesktopEntry is one server of a desktop config.
type DesktopEntry struct {
	// Key is the server's name as the file writes it.
	Key string
	// Name is the plugin's name: Key mapped by MapName when the entry
	// gets one; else (an empty key, one too long, one whose mapped name
	// another entry of the file has) Key as it can be shown, and Fault
	// says why.
	Name string
	// Path is the JSON path of the entry (`$.mcpServers["my.server"]`).
	Path string
	// Server is the entry as declared, variables not yet expanded and
	// its envFile not yet read (Resolve does both). Meaningful when Fault
	// is nil.
	Server MCPServer
	// EnvFile is the entry's "envFile" as written ("" when none): a
	// dotenv file (ParseDotenv) whose variables the server gets beneath
	// its "env", relative to the file's folder.
	EnvFile string
	// Disabled is true for an entry with "disabled": true, which is left
	// out whatever else it says.
	Disabled bool
	// Fault is why the entry cannot run, at its JSON path; nil when
	// nothing is wrong so far (Resolve may still find a fault).
	Fault *Fault

	urlKey string // "url" or "serverUrl": the member the URL came from
}

// pluginNameRE is the plugin name's characters and length (with no "__"
// besides: ValidPluginName): it keeps aggregated schema keys
// ("NAME.Schema") collision-free.
var pluginNameRE = regexp.MustCompile(`^[a-zA-Z0-9_-]{1,64}$`)

// MapName returns the plugin name of a server named key in a desktop
// config: key itself when it is a plugin name (ValidPluginName), else key
// with each character outside [a-zA-Z0-9_-] replaced by "_" and each run
// of "_" and "-" written "_" ("my.server", "my server", "my__server" and
// "my - server" are all "my_server"). Errors: an empty key, or one of more than 64
// characters.
func MapName(key string) (string, error) {
	if ValidPluginName(key) {
		return key, nil
	}
	name := strings.Map(func(r rune) rune {
		if r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '_' || r == '-' {
			return r
		}
		return '_'
	}, key)
	name = separatorRunRE.ReplaceAllLiteralString(name, "_")
	if !ValidPluginName(name) {
		if name == "" {
			return "", errors.New("a server needs a name: the key is empty")
		}
		return "", fmt.Errorf("server name is longer than 64 characters (it is the plugin's name)")
	}
	return name, nil
}

// sessionCount is the value v of "maxSessions" or "maxSessionsPerKey".
// Errors: v is not an integer from 1 to MaxMaxSessions.
func sessionCount(v any) (int, error) {
	n, isNum := v.(json.Number)
	i, err := strconv.Atoi(string(n))
	if !isNum || err != nil || i < 1 || i > MaxMaxSessions {
		return 0, fmt.Errorf("must be an integer from 1 to %d", MaxMaxSessions)
	}
	return i, nil
}

// sharedIdle is the value v of "sharedIdle": a Go duration string
// ("30s") from MinSharedIdle to MaxSharedIdle, or "never" (-1). Errors:
// anything else.
func sharedIdle(v any) (time.Duration, error) {
	s, isStr := v.(string)
	if s == "never" {
		return -1, nil
	}
	d, err := time.ParseDuration(s)
	if !isStr || err != nil || d < MinSharedIdle || d > MaxSharedIdle {
		return 0, fmt.Errorf(`must be a duration from %v to %v ("30s"), or "never"`, MinSharedIdle, MaxSharedIdle)
	}
	return d, nil
}

// reclaimIdle is the value v of "reclaimIdle": a Go duration string
// ("5s") from 0s to MaxReclaimIdle, "0s" given as -1 (MCPServer.ReclaimIdle).
// Errors: anything else.
func reclaimIdle(v any) (time.Duration, error) {
	s, isStr := v.(string)
	d, err := time.ParseDuration(s)
	if !isStr || err != nil || d < 0 || d > MaxReclaimIdle {
		return 0, fmt.Errorf(`must be a duration from 0s to %v ("5s")`, MaxReclaimIdle)
	}
	if d == 0 {
		return -1, nil
	}
	return d, nil
}

// serverLists are where a desktop config keeps its servers, in the order
// they are read: the top-level member, and the member under it.
var serverLists = []struct{ member, sub string }{{"mcpServers", ""}, {"servers", ""}, {"mcp", "servers"}}

// ParseDesktop reads a desktop client's config (see above): data is
// hand-written JSON (strictjson.ReadHandWritten: comments and trailing
// commas allowed), at most MaxFileBytes; every fault found here,
// the entries' too, has its line and column. Errors (the whole file): a *Fault
// for data that is too large, not JSON, has a member twice, is not an
// object, or has no server list ("mcpServers", "servers" or "mcp":
// {"servers"}), or a server list that is not an object. A fault of one
// entry is that entry's Fault.
func ParseDesktop(data []byte) (*DesktopConfig, error) {
	return strictjson.ParseHandWritten(data, MaxFileBytes, parseDesktop)
}

// parseDesktop is ParseDesktop of h, read: the file's fault not yet
// located, its entries' faults located.
func parseDesktop(h *strictjson.HandWritten) (*DesktopConfig, error) {
	cfg, err := desktopEntries(h)
	if err != nil {
		return nil, err
	}
	for i := range cfg.Entries {
		if f := cfg.Entries[i].Fault; f != nil {
			_ = h.Locate(f) // sets its line and column
		}
	}
	return cfg, nil
}

// desktopEntries reads the server entries of h.
func desktopEntries(h *strictjson.HandWritten) (*DesktopConfig, error) {
	tree, err := h.Tree()
	if err != nil {
		return nil, err
	}
	root, ok := tree.(map[string]any)
	if !ok {
		return nil, &Fault{Path: "$", Message: "must be a JSON object"}
	}
	cfg := &DesktopConfig{}
	found := false
	used := map[string]bool{} // top-level members that hold servers
	for _, l := range serverLists {
		v, ok := root[l.member]
		p := "$." + l.member
		if ok && l.sub != "" {
			m, isObj := v.(map[string]any)
			if v, ok = m[l.sub]; !isObj || !ok {
				continue // VS Code's "mcp" setting without servers: someone else's
			}
			for _, k := range slices.Sorted(maps.Keys(m)) {
				if k != l.sub {
					cfg.Ignored = append(cfg.Ignored, strictjson.AppendKey(p, k))
				}
			}
			p = strictjson.AppendKey(p, l.sub)
		}
		if !ok {
			continue
		}
		used[l.member] = true
		servers, isObj := v.(map[string]any)
		if !isObj {
			return nil, &Fault{Path: p, Message: "must be an object of servers keyed by name"}
		}
		found = true
		path := []string{l.member}
		if l.sub != "" {
			path = append(path, l.sub)
		}
		for _, key := range keyOrder(h.JSON(), path, servers) {
			cfg.Entries = append(cfg.Entries, parseEntry(strictjson.AppendKey(p, key), key, servers[key], &cfg.Ignored))
		}
	}
	if !found {
		return nil, &Fault{Path: "$", Message: `has no server list: "mcpServers" (Claude Desktop, Claude Code, Cursor, Windsurf) or "servers" (VS Code)`}
	}
	var top []string
	for _, k := range slices.Sorted(maps.Keys(root)) {
		if !used[k] {
			top = append(top, strictjson.AppendKey("$", k))
		}
	}
	cfg.Ignored = append(top, cfg.Ignored...)
	nameEntries(cfg.Entries)
	return cfg, nil
}

// nameEntries sets each entry's Name: a key that is a plugin name as it
// is keeps it; then, in file order, each other key gets its mapped name
// unless an entry already has it, in which case it fails. Disabled
// entries take no name.
func nameEntries(es []DesktopEntry) {
	taken := map[string]string{} // plugin name → key of the entry that has it
	var later []int
	for i := range es {
		e := &es[i]
		if e.Disabled {
			e.Name = e.Key
			continue
		}
		if _, dup := taken[e.Key]; ValidPluginName(e.Key) && !dup {
			e.Name, taken[e.Key] = e.Key, e.Key
			continue
		}
		later = append(later, i)
	}
	for _, i := range later {
		e := &es[i]
		name, err := MapName(e.Key)
		owner, isTaken := taken[name]
		switch {
		case err != nil:
			e.setFault(e.Path, err.Error())
		case isTaken:
			e.setFault(e.Path, fmt.Sprintf("plugin name %s (the name mapped to [a-zA-Z0-9_-]) is taken by server %q of this file; rename one of them", name, owner))
		default:
			e.Name, taken[name] = name, e.Key
			continue
		}
		e.Name = shownName(e.Key, taken)
		taken[e.Name] = e.Key
	}
}

// shownName is the name an entry that has no plugin name is shown under
// (in /health, with its fault): its key, quoted when it is not printable
// or empty, made unique in the file.
func shownName(key string, taken map[string]string) string {
	name := key
	if name == "" || strings.IndexFunc(name, func(r rune) bool { return !unicode.IsPrint(r) }) >= 0 {
		name = strconv.Quote(key)
	}
	for n, i := name, 2; ; i++ {
		if _, ok := taken[n]; !ok {
			return n
		}
		n = fmt.Sprintf("%s (%d)", name, i)
	}
}

// setFault records the entry's first fault.
func (e *DesktopEntry) setFault(path, msg string) {
	if e.Fault == nil {
		e.Fault = &Fault{Path: path, Message: msg}
	}
}

// transportTypes maps each "type" a client writes to MCPServer.Transport
// ("" for stdio and streamable HTTP).
var transportTypes = map[string]string{"stdio": "", "http": "", "streamable-http": "", "streamableHttp": "", "sse": TransportSSE}

// parseEntry reads the entry key at path p; ignored gets the paths of
// the members it does not use.
func parseEntry(p, key string, v any, ignored *[]string) DesktopEntry {
	e := DesktopEntry{Key: key, Path: p}
	m, ok := v.(map[string]any)
	if !ok {
		e.setFault(p, "must be an object")
		return e
	}
	if d, ok := m["disabled"]; ok {
		b, isBool := d.(bool)
		e.Disabled = isBool && b
		if !isBool {
			e.setFault(p+".disabled", "must be true or false")
		}
	}
	s := &e.Server
	typ, typePath := "", ""
	var local, remote []string // members of a command, of a url, in order
	for _, k := range slices.Sorted(maps.Keys(m)) {
		kp := strictjson.AppendKey(p, k)
		var err error
		switch k {
		case "command", "cwd", "envFile", "url", "serverUrl":
			var str string
			if str, err = nonEmpty(m[k]); err == nil {
				switch k {
				case "command":
					s.Command = str
				case "cwd":
					s.Cwd = str
				case "envFile":
					e.EnvFile = str
				default:
					if s.URL != "" {
						err = errors.New(`has both "url" and "serverUrl"; give one`)
						kp = p
					}
					s.URL, e.urlKey = str, k
				}
			}
		case "args":
			s.Args, err = stringList(kp, m[k])
		case "env":
			s.Env, err = envMap(kp, m[k])
		case "headers":
			s.Headers, err = stringMap(kp, m[k])
		case "oauth":
			s.OAuth, err = parseOAuth(kp, m[k])
		case "type", "transportType":
			t, isStr := m[k].(string)
			if _, known := transportTypes[t]; !isStr || !known {
				err = errors.New(`must be "stdio", "http", "streamable-http" or "sse"`)
			} else if _, both := m["type"]; k == "type" || !both {
				typ, typePath = t, kp // "type" wins over Cline's "transportType"
			}
		case "sessions":
			if str, isStr := m[k].(string); isStr && (str == SessionsPerClient || str == SessionsShared) {
				s.Sessions = str
			} else {
				err = errors.New(`must be "per-client" or "shared"`)
			}
		case "credentials":
			if str, isStr := m[k].(string); isStr && (str == CredentialsShared || str == CredentialsPerUser) {
				s.Credentials = str
			} else {
				err = errors.New(`must be "shared" or "per-user"`)
			}
		case "maxSessions":
			s.MaxSessions, err = sessionCount(m[k])
		case "maxSessionsPerKey":
			s.MaxSessionsPerKey, err = sessionCount(m[k])
		case "lendReads":
			if b, isBool := m[k].(bool); isBool {
				s.LendReads = &b
			} else {
				err = errors.New("must be true or false")
			}
		case "sharedIdle":
			s.SharedIdle, err = sharedIdle(m[k])
		case "reclaimIdle":
			s.ReclaimIdle, err = reclaimIdle(m[k])
		case "disabled":
		default:
			*ignored = append(*ignored, kp)
			continue
		}
		if err != nil {
			var f *Fault
			if errors.As(err, &f) {
				e.setFault(f.Path, f.Message)
			} else {
				e.setFault(kp, err.Error())
			}
			continue
		}
		switch k {
		case "command", "args", "env", "envFile", "cwd":
			local = append(local, kp)
		case "headers", "oauth", "credentials":
			remote = append(remote, kp)
		}
	}
	if e.Fault != nil {
		return e
	}
	switch {
	case s.Command == "" && s.URL == "":
		e.setFault(p, `needs "command" (a local server) or "url" (a remote one)`)
	case s.Command != "" && s.URL != "":
		e.setFault(p, `has both "command" and "url"; declare one`)
	case s.URL != "" && typ == "stdio":
		e.setFault(typePath, `is "stdio", but the entry has a "url" and no "command"`)
	case s.Command != "" && typ != "" && typ != "stdio":
		e.setFault(typePath, fmt.Sprintf("is %q, but the entry has a \"command\" and no \"url\"", typ))
	}
	if e.Fault != nil {
		return e
	}
	// A member of the other kind of server means nothing here.
	if s.URL != "" {
		*ignored = append(*ignored, local...)
		s.Args, s.Env, s.Cwd, e.EnvFile = nil, nil, "", ""
		s.Transport = transportTypes[typ]
	} else {
		*ignored = append(*ignored, remote...)
		s.Headers, s.OAuth = nil, nil
	}
	if f := checkOAuth(p, *s); f != nil {
		e.setFault(f.Path, f.Message)
		return e
	}
	e.checkVariables()
	if e.Fault == nil && s.URL != "" && !strings.Contains(s.URL, "${") {
		if err := checkURL(s.URL); err != nil {
			e.setFault(p+"."+e.urlKey, err.Error())
		}
	}
	return e
}

// checkVariables checks the syntax of every variable of the entry.
func (e *DesktopEntry) checkVariables() {
	e.each(func(path, v string) string {
		if err := checkReferences(v); err != nil {
			e.setFault(path, err.Error())
		}
		return v
	})
}

// each calls f with the path and value of every string of the entry
// that may hold variables, in a fixed order, and sets each to what f
// returns.
func (e *DesktopEntry) each(f func(path, v string) string) {
	s := &e.Server
	if s.Command != "" {
		s.Command = f(e.Path+".command", s.Command)
	}
	for i := range s.Args {
		s.Args[i] = f(fmt.Sprintf("%s.args[%d]", e.Path, i), s.Args[i])
	}
	for _, k := range slices.Sorted(maps.Keys(s.Env)) {
		s.Env[k] = f(strictjson.AppendKey(e.Path+".env", k), s.Env[k])
	}
	if e.EnvFile != "" {
		e.EnvFile = f(e.Path+".envFile", e.EnvFile)
	}
	if s.Cwd != "" {
		s.Cwd = f(e.Path+".cwd", s.Cwd)
	}
	if s.URL != "" {
		s.URL = f(e.Path+"."+e.urlKey, s.URL)
	}
	for _, k := range slices.Sorted(maps.Keys(s.Headers)) {
		s.Headers[k] = f(strictjson.AppendKey(e.Path+".headers", k), s.Headers[k])
	}
	if o := s.OAuth; o != nil {
		if o.ClientID != "" {
			o.ClientID = f(e.Path+".oauth.clientId", o.ClientID)
		}
		if o.ClientSecret != "" {
			o.ClientSecret = f(e.Path+".oauth.clientSecret", o.ClientSecret)
		}
		if k := o.PrivateKeyJWT; k != nil {
			k.PrivateKey = f(e.Path+".oauth.privateKeyJwt.privateKey", k.PrivateKey)
		}
	}
}

// Resolve returns the server the entry runs, for a file of origin o:
// its variables expanded (expand.go) and its envFile's variables added
// beneath its "env". The entry itself is not changed. Errors: the
// entry's Fault, or a *Fault at the JSON path of a variable o may not
// read or that is not set, of an envFile that cannot be read or parsed
// or (for a drop-in file) is not inside o.Dir, or of a url that is not
// an absolute http or https URL once expanded.
func (e DesktopEntry) Resolve(o Origin) (MCPServer, error) {
	if e.Fault != nil {
		return MCPServer{}, e.Fault
	}
	e.Server = e.Server.clone()
	var fault *Fault
	e.each(func(path, v string) string {
		if fault != nil {
			return v
		}
		out, err := o.expand(v)
		if err != nil {
			fault = &Fault{Path: path, Message: err.Error()}
		}
		return out
	})
	if fault != nil {
		return MCPServer{}, fault
	}
	s := e.Server
	if e.EnvFile != "" {
		vars, err := readEnvFile(o, e.EnvFile)
		if err != nil {
			return MCPServer{}, &Fault{Path: e.Path + ".envFile", Message: err.Error()}
		}
		if s.Env == nil && len(vars) > 0 {
			s.Env = map[string]string{}
		}
		for k, v := range vars {
			if _, set := s.Env[k]; !set {
				s.Env[k] = v
			}
		}
	}
	if s.URL != "" {
		if err := checkURL(s.URL); err != nil {
			return MCPServer{}, &Fault{Path: e.Path + "." + e.urlKey, Message: err.Error()}
		}
	}
	return s, checkServer(e.Path, s)
}

// clone returns a copy of s that shares no slice or map with it.
func (s MCPServer) clone() MCPServer {
	if s.Args != nil {
		s.Args = append([]string(nil), s.Args...)
	}
	if s.Env != nil {
		env := make(map[string]string, len(s.Env))
		for k, v := range s.Env {
			env[k] = v
		}
		s.Env = env
	}
	if s.Headers != nil {
		h := make(map[string]string, len(s.Headers))
		for k, v := range s.Headers {
			h[k] = v
		}
		s.Headers = h
	}
	s.OAuth = s.OAuth.clone()
	return s
}

// readEnvFile reads and parses envFile p (relative to o.Dir). A drop-in
// file's envFile must be inside o.Dir, symbolic links included (os.Root).
func readEnvFile(o Origin, p string) (map[string]string, error) {
	if !filepath.IsAbs(p) {
		p = filepath.Join(o.Dir, p)
	}
	var f *os.File
	var err error
	if o.Operator {
		f, err = os.Open(p)
	} else {
		rel, rerr := filepath.Rel(o.Dir, p)
		if rerr != nil || !filepath.IsLocal(rel) {
			return nil, fmt.Errorf("%s is outside the plugins folder: a drop-in file may read an envFile beside it only", p)
		}
		if f, err = openInFolder(o.Dir, rel); err != nil && !errors.Is(err, fs.ErrNotExist) {
			err = fmt.Errorf("%w (a drop-in file may read an envFile inside the plugins folder only)", err)
		}
	}
	if err != nil {
		return nil, err
	}
	data, err := readOpened(f, MaxFileBytes)
	if err != nil {
		return nil, fmt.Errorf("%s is %w", p, err) // not a regular file, larger than N bytes
	}
	vars, err := ParseDotenv(data)
	if err != nil {
		return nil, fmt.Errorf("%s: %v", p, err)
	}
	return vars, nil
}

// checkURL checks a server's url: an absolute http or https URL.
func checkURL(s string) error {
	u, err := url.Parse(s)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return errors.New("must be an absolute http or https URL")
	}
	return nil
}

// nonEmpty is v as a non-empty string.
func nonEmpty(v any) (string, error) {
	s, ok := v.(string)
	if !ok || s == "" {
		return "", errors.New("must be a non-empty string")
	}
	return s, nil
}

// envMap decodes the "env" object at path p: strings, and numbers and
// booleans as the text JSON writes them (Node-based clients pass them on
// as strings).
func envMap(p string, v any) (map[string]string, error) {
	m, ok := v.(map[string]any)
	if !ok {
		return nil, &Fault{Path: p, Message: "must be an object of strings"}
	}
	out := make(map[string]string, len(m))
	for _, k := range slices.Sorted(maps.Keys(m)) {
		if k == "" || strings.ContainsAny(k, "=\x00") {
			return nil, &Fault{Path: strictjson.AppendKey(p, k), Message: "is not a variable name"}
		}
		switch e := m[k].(type) {
		case string:
			out[k] = e
		case json.Number:
			out[k] = e.String()
		case bool:
			out[k] = strconv.FormatBool(e)
		default:
			return nil, &Fault{Path: strictjson.AppendKey(p, k), Message: "must be a string"}
		}
	}
	return out, nil
}

// keyOrder returns the keys of the object at path (member names from the
// root) of data in the order the file writes them; the sorted keys of
// obj when data cannot be walked (it always can once Decode took it).
func keyOrder(data []byte, path []string, obj map[string]any) []string {
	dec := json.NewDecoder(bytes.NewReader(data))
	if keys, ok := objectKeys(dec, path); ok && len(keys) == len(obj) {
		return keys
	}
	return slices.Sorted(maps.Keys(obj))
}

// objectKeys reads the object next in dec and returns the keys of the
// object at path inside it, in order.
func objectKeys(dec *json.Decoder, path []string) ([]string, bool) {
	if t, err := dec.Token(); err != nil || t != json.Delim('{') {
		return nil, false
	}
	var keys []string
	for dec.More() {
		t, err := dec.Token()
		k, isKey := t.(string)
		if err != nil || !isKey {
			return nil, false
		}
		if len(path) > 0 && k == path[0] {
			return objectKeys(dec, path[1:])
		}
		keys = append(keys, k)
		if !skipValue(dec) {
			return nil, false
		}
	}
	return keys, len(path) == 0
}

// skipValue reads past the value next in dec.
func skipValue(dec *json.Decoder) bool {
	depth := 0
	for {
		t, err := dec.Token()
		if err != nil {
			return false
		}
		switch t {
		case json.Delim('{'), json.Delim('['):
			depth++
		case json.Delim('}'), json.Delim(']'):
			depth--
		}
		if depth == 0 {
			return true
		}
	}
}
