// Package decl reads the drop-in declarations of the plugins directory:
// JSON files that declare a plugin without being its executable, run by
// the host's adapter process ("opentool-host adapter"), supervised like
// any plugin:
//
//   - NAME.mcp.json, the "mcpServers" JSON of desktop MCP clients (Claude
//     Desktop, Cursor, VS Code): each server is one plugin (package
//     mcpadapter);
//   - NAME.tools.json, command-line programs as functions (commands.go,
//     package cmdtool): the file is one plugin, NAME.
//
// A declaration is data from a folder anyone with write access to the
// plugins directory controls: it is decoded exactly (duplicate members
// refused) and every fault is reported with its JSON path, e.g.
// `$.mcpServers.notes.args[1]: must be a string`.
package decl

import (
	"encoding/json"
	"fmt"
	"net/url"
	"regexp"
	"sort"
	"strings"

	"github.com/opentool-host/opentool-host/internal/strictjson"
	"github.com/opentool-host/opentool-host/internal/wire"
)

// MCPSuffix is the file-name suffix of an MCP server declaration:
// "NAME.mcp.json".
const MCPSuffix = ".mcp.json"

// MaxFileBytes is the largest declaration file read, in bytes (1 MiB).
const MaxFileBytes = 1 << 20

// EnvLaunch is the environment variable that carries one Launch, as
// JSON, from the host to the adapter process ("opentool-host adapter").
// The adapter removes it from the environment of what it runs.
const EnvLaunch = "OPENTOOL_LAUNCH"

// EnvGranted is the environment variable in which the host tells the
// adapter process which of its variables the host granted the plugin
// beyond launcher.BaseEnv and LC_* (comma-separated names, never values:
// OPENTOOL_<PLUGIN>_*, --plugin-env names, the policy's variables and the
// secrets it grants), so that the adapter hands exactly those on to the
// commands and servers it starts (launcher.Allow.Names).
const EnvGranted = "OPENTOOL_GRANTED"

// AdapterEnv are the variables the host sets for the adapter process
// alone; the adapter never hands them on (launcher.Allow.Drop).
var AdapterEnv = []string{EnvLaunch, EnvGranted, wire.DataFDEnv, "OPENTOOL_PLUGIN_FILE"}

// serverNameRE is what a server's key may be: the plugin name rule of
// host.PluginName.
var serverNameRE = regexp.MustCompile(`^[a-zA-Z0-9_-]{1,64}$`)

// MCPServer is one entry of "mcpServers": either a local server run as a
// command speaking MCP over stdio, or a remote one reached by URL over
// streamable HTTP (MCP 2025-03-26 and later, "Transports").
type MCPServer struct {
	// Command is the program of a local server. A bare name is looked up
	// in PATH; a relative path with a slash is relative to the
	// declaration's folder.
	Command string `json:"command,omitempty"`
	// Args are the command's arguments.
	Args []string `json:"args,omitempty"`
	// Env holds variables set for the server on top of the environment
	// the host gives every plugin.
	Env map[string]string `json:"env,omitempty"`
	// Cwd is the server's working directory (relative to the
	// declaration's folder); default the declaration's folder.
	Cwd string `json:"cwd,omitempty"`
	// URL is the streamable-HTTP endpoint of a remote server (http or
	// https). Exactly one of Command and URL is set.
	URL string `json:"url,omitempty"`
	// Headers are sent with every request to URL (e.g. Authorization).
	Headers map[string]string `json:"headers,omitempty"`
}

// Launch is what the host hands the adapter for one declared plugin
// (in EnvLaunch): an MCP server or a set of command-line tools.
type Launch struct {
	// Name is the plugin's name: the server's key in mcpServers, or NAME
	// of NAME.tools.json.
	Name string `json:"name"`
	// Dir is the absolute folder of the declaration file: relative
	// commands and working directories resolve against it.
	Dir string `json:"dir"`
	// Server is the declared MCP server (zero for command tools).
	Server MCPServer `json:"server,omitzero"`
	// Commands are the declared command-line tools (nil for an MCP
	// server).
	Commands *Commands `json:"commands,omitempty"`
	// Pinned, with a lock (--locked), maps each program the plugin runs
	// (absolute path, Launch.Programs) to the hex sha256 opentool.lock
	// pins; the adapter refuses to run a program whose bytes are not
	// those (CheckPinned), before the server starts and before each
	// command. Nil: no lock.
	Pinned map[string]string `json:"pinned,omitempty"`
}

// Fault is one fault of a declaration, at a JSON path.
type Fault = strictjson.Fault

// ParseMCP decodes an mcpServers declaration: a JSON object with member
// "mcpServers", an object of servers keyed by name. Members desktop
// clients add that mean nothing here ("disabled", "autoApprove",
// "alwaysAllow", "timeout", "description", "type" of "stdio", "http" or
// "streamable-http") are accepted; a server with "disabled": true is left
// out. Errors: a *Fault for the first fault found (invalid JSON,
// duplicate members, wrong types, unknown members, a server with neither
// or both of command and url, a bad name or URL).
func ParseMCP(data []byte) (map[string]MCPServer, error) {
	if len(data) > MaxFileBytes {
		return nil, &Fault{Path: "$", Message: fmt.Sprintf("declaration is larger than %d bytes", MaxFileBytes)}
	}
	tree, err := strictjson.Decode(data)
	if err != nil {
		return nil, &Fault{Path: "$", Message: err.Error()}
	}
	root, ok := tree.(map[string]any)
	if !ok {
		return nil, &Fault{Path: "$", Message: "must be a JSON object"}
	}
	for k := range root {
		if k != "mcpServers" {
			return nil, &Fault{Path: "$." + k, Message: `unknown member; a declaration has only "mcpServers"`}
		}
	}
	servers, ok := root["mcpServers"].(map[string]any)
	if !ok {
		return nil, &Fault{Path: "$.mcpServers", Message: "must be an object of servers keyed by name"}
	}
	out := map[string]MCPServer{}
	for _, name := range sortedKeys(servers) {
		p := "$.mcpServers." + name
		if !serverNameRE.MatchString(name) {
			return nil, &Fault{Path: p, Message: "server name must match ^[a-zA-Z0-9_-]{1,64}$ (it is the plugin's name)"}
		}
		s, skip, err := parseServer(p, servers[name])
		if err != nil {
			return nil, err
		}
		if !skip {
			out[name] = s
		}
	}
	return out, nil
}

// ignored are the members desktop clients write that the host accepts and
// does not use (type is checked on its own).
var ignored = map[string]bool{"autoApprove": true, "alwaysAllow": true, "timeout": true, "description": true}

// parseServer decodes the server at path p; skip is true for a disabled
// server.
func parseServer(p string, v any) (s MCPServer, skip bool, err error) {
	m, ok := v.(map[string]any)
	if !ok {
		return s, false, &Fault{Path: p, Message: "must be an object"}
	}
	for _, k := range sortedKeys(m) {
		kp := p + "." + k
		switch k {
		case "command", "cwd", "url":
			str, ok := m[k].(string)
			if !ok || str == "" {
				return s, false, &Fault{Path: kp, Message: "must be a non-empty string"}
			}
			setString(&s, k, str)
		case "args":
			if s.Args, err = stringList(kp, m[k]); err != nil {
				return s, false, err
			}
		case "env", "headers":
			sm, err := stringMap(kp, m[k])
			if err != nil {
				return s, false, err
			}
			if k == "env" {
				s.Env = sm
			} else {
				s.Headers = sm
			}
		case "disabled":
			b, ok := m[k].(bool)
			if !ok {
				return s, false, &Fault{Path: kp, Message: "must be true or false"}
			}
			skip = b
		case "type":
			if t, _ := m[k].(string); t != "stdio" && t != "http" && t != "streamable-http" && t != "streamableHttp" {
				return s, false, &Fault{Path: kp, Message: `must be "stdio", "http" or "streamable-http" (SSE-only servers are not supported)`}
			}
		default:
			if !ignored[k] {
				return s, false, &Fault{Path: kp, Message: "unknown member"}
			}
		}
	}
	return s, skip, checkServer(p, s)
}

// checkServer checks what only the whole server entry can tell.
func checkServer(p string, s MCPServer) error {
	switch {
	case s.Command == "" && s.URL == "":
		return &Fault{Path: p, Message: `needs "command" (a local server) or "url" (a remote one)`}
	case s.Command != "" && s.URL != "":
		return &Fault{Path: p, Message: `has both "command" and "url"; declare one`}
	case s.URL != "" && (len(s.Args) > 0 || len(s.Env) > 0 || s.Cwd != ""):
		return &Fault{Path: p, Message: `"args", "env" and "cwd" are for a command, not a url`}
	case s.Command != "" && len(s.Headers) > 0:
		return &Fault{Path: p + ".headers", Message: `"headers" are for a url, not a command`}
	}
	if s.URL != "" {
		u, err := url.Parse(s.URL)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return &Fault{Path: p + ".url", Message: "must be an absolute http or https URL"}
		}
	}
	for k := range s.Env {
		if k == "" || strings.ContainsAny(k, "=\x00") {
			return &Fault{Path: p + ".env", Message: fmt.Sprintf("invalid variable name %q", k)}
		}
	}
	return nil
}

// setString sets the string member k of s.
func setString(s *MCPServer, k, v string) {
	switch k {
	case "command":
		s.Command = v
	case "cwd":
		s.Cwd = v
	case "url":
		s.URL = v
	}
}

// stringList decodes an array of strings at path p.
func stringList(p string, v any) ([]string, error) {
	a, ok := v.([]any)
	if !ok {
		return nil, &Fault{Path: p, Message: "must be an array of strings"}
	}
	out := make([]string, len(a))
	for i, e := range a {
		s, ok := e.(string)
		if !ok {
			return nil, &Fault{Path: fmt.Sprintf("%s[%d]", p, i), Message: "must be a string"}
		}
		out[i] = s
	}
	return out, nil
}

// stringMap decodes an object of strings at path p.
func stringMap(p string, v any) (map[string]string, error) {
	m, ok := v.(map[string]any)
	if !ok {
		return nil, &Fault{Path: p, Message: "must be an object of strings"}
	}
	out := make(map[string]string, len(m))
	for k, e := range m {
		s, ok := e.(string)
		if !ok {
			return nil, &Fault{Path: p + "." + k, Message: "must be a string"}
		}
		out[k] = s
	}
	return out, nil
}

// sortedKeys returns m's keys in order, so the first fault is stable.
func sortedKeys[V any](m map[string]V) []string {
	ks := make([]string, 0, len(m))
	for k := range m {
		ks = append(ks, k)
	}
	sort.Strings(ks)
	return ks
}

// Encode returns l as the JSON value of EnvLaunch.
func (l Launch) Encode() string {
	b, _ := json.Marshal(l) // strings and maps of strings: cannot fail
	return string(b)
}

// DecodeLaunch parses the value of EnvLaunch. Errors: invalid JSON, a
// Launch without a name, command tools that do not check, or a server
// with neither command nor url.
func DecodeLaunch(s string) (Launch, error) {
	var l Launch
	if err := json.Unmarshal([]byte(s), &l); err != nil {
		return l, fmt.Errorf("%s: %w", EnvLaunch, err)
	}
	if l.Name == "" {
		return l, fmt.Errorf("%s: no plugin name", EnvLaunch)
	}
	if l.Commands != nil {
		if err := l.Commands.check("$.commands"); err != nil {
			return l, fmt.Errorf("%s: %w", EnvLaunch, err)
		}
		return l, nil
	}
	if err := checkServer("$.server", l.Server); err != nil {
		return l, fmt.Errorf("%s: %w", EnvLaunch, err)
	}
	return l, nil
}
