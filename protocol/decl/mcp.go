// Package decl reads the drop-in declarations of the plugins directory:
// JSON files that declare a plugin without being its executable, served
// in the host's own process (package declared), supervised like any
// plugin:
//
//   - NAME.mcp.json, a desktop MCP client's config as it is (Claude
//     Desktop, Claude Code, Cursor, VS Code, Windsurf; desktop.go): each
//     server is one plugin (package mcpadapter); the operator's own such
//     files (run --mcp-config) are read the same way, with more trust
//     (Origin);
//   - NAME.tools.json, command-line programs as functions (commands.go,
//     package cmdtool): the file is one plugin, NAME.
//
// A declaration is data from a folder anyone with write access to the
// plugins directory controls: it is decoded exactly (duplicate members
// refused; a desktop config's unknown members are ignored, and each of
// its entries stands alone) and every fault is reported with its JSON
// path, e.g. `$.mcpServers.notes.args[1]: must be a string`.
package decl

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/opentool-host/opentool-host/internal/strictjson"
)

// MCPSuffix is the file-name suffix of an MCP server declaration:
// "NAME.mcp.json".
const MCPSuffix = ".mcp.json"

// MaxFileBytes is the largest declaration file read, in bytes (1 MiB).
const MaxFileBytes = 1 << 20

// MCPServer is one server of a desktop config (desktop.go): either a
// local server run as a command speaking MCP over stdio, or a remote one
// reached by URL (MCP "Transports"): streamable HTTP, or the older
// HTTP+SSE transport (Transport).
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
	// URL is the endpoint of a remote server (http or https). Exactly
	// one of Command and URL is set.
	URL string `json:"url,omitempty"`
	// Headers are sent with every request to URL (e.g. Authorization).
	Headers map[string]string `json:"headers,omitempty"`
	// OAuth, when set, is how the host logs in to URL (the "oauth"
	// member, oauth.go); nil: no login (a 401 then fails the server with
	// "needs authorization").
	OAuth *OAuth `json:"oauth,omitempty"`
	// Credentials is whose login the host's calls to URL carry:
	// CredentialsShared ("shared", the default; "" means it), one login
	// ("headers" or "oauth") for every caller, or CredentialsPerUser
	// ("per-user"), each caller's principal its own OAuth token
	// (package declared/oauthlogin), never another's. "per-user" needs
	// "url" and "oauth", and no Authorization header.
	Credentials string `json:"credentials,omitempty"`
	// Transport is how URL is reached: "" for streamable HTTP (MCP
	// 2025-03-26 and later), falling back to the HTTP+SSE transport of
	// MCP 2024-11-05 when the server refuses the first POST with a 4xx
	// status (the spec's "Backwards Compatibility"), or TransportSSE for
	// that SSE transport only ("type": "sse"). "" for a command.
	Transport string `json:"transport,omitempty"`
	// Sessions is how MCP client sessions reach the server:
	// SessionsPerClient ("per-client", the default; "" means it), each
	// with an upstream session of its own, or SessionsShared ("shared"),
	// one session for every caller (package mcpadapter).
	Sessions string `json:"sessions,omitempty"`
	// MaxSessions bounds the client sessions with an upstream session of
	// their own at once (for a command, the server processes besides the
	// shared one), 1 to MaxMaxSessions; 0: mcpadapter.DefaultMaxSessions.
	// More client sessions are served too: an idle one's place reclaimed,
	// or through the shared session (mcpadapter).
	MaxSessions int `json:"maxSessions,omitempty"`
	// MaxSessionsPerKey is one API key's share of those places, 1 to
	// MaxMaxSessions (past MaxSessions: every place); 0: a quarter of
	// MaxSessions (at least 1) when more than one key is in force, else
	// every place (mcpadapter.Options.MaxSessionsPerKey).
	MaxSessionsPerKey int `json:"maxSessionsPerKey,omitempty"`
	// LendReads, false ("lendReads": false), gives each client session of
	// a per-client server an upstream session of its own for every call;
	// nil or true, the default: a client session without one is lent the
	// shared session for a call of a tool the server annotates
	// readOnlyHint while no other call changed it
	// (mcpadapter.Options.NoLending).
	LendReads *bool `json:"lendReads,omitempty"`
	// SharedIdle is how long the shared session of a per-client command
	// server may go unused, while client sessions of their own are open,
	// before its process stops until its next use ("sharedIdle": a Go
	// duration from MinSharedIdle to MaxSharedIdle, or "never": -1); 0:
	// mcpadapter.DefaultSharedIdle (mcpadapter.Options.SharedIdle).
	SharedIdle time.Duration `json:"sharedIdle,omitempty"`
	// ReclaimIdle is how long a client's own session must go unused
	// before its place may be given to another client, or, when only
	// lists and reads went to it, before it is closed for its client's
	// reads to be lent the shared session ("reclaimIdle": a
	// Go duration from 0s to MaxReclaimIdle; "0s" is -1: as soon as
	// nothing of its client is in flight); 0: mcpadapter.DefaultReclaimIdle
	// (mcpadapter.Options.ReclaimIdle).
	ReclaimIdle time.Duration `json:"reclaimIdle,omitempty"`
}

// MaxReclaimIdle is the longest "reclaimIdle" a declaration may give.
const MaxReclaimIdle = 24 * time.Hour

// The bounds of "sharedIdle".
const (
	MinSharedIdle = 100 * time.Millisecond
	MaxSharedIdle = 24 * time.Hour
)

// The values of MCPServer.Sessions.
const (
	SessionsPerClient = "per-client"
	SessionsShared    = "shared"
)

// The values of MCPServer.Credentials.
const (
	CredentialsShared  = "shared"
	CredentialsPerUser = "per-user"
)

// PerUser reports whether s is declared "credentials": "per-user".
func (s MCPServer) PerUser() bool { return s.Credentials == CredentialsPerUser }

// MaxMaxSessions is the largest "maxSessions" a declaration may give.
const MaxMaxSessions = 256

// TransportSSE is MCPServer.Transport of a server declared "type": "sse":
// the HTTP+SSE transport of MCP 2024-11-05 (a GET event stream and POSTs
// to the endpoint it names).
const TransportSSE = "sse"

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
	// Pinned, with a lock (--locked), maps each file the plugin executes
	// or names in an argument (absolute path, Launch.Files) to the hex
	// sha256 opentool.lock pins; the adapter refuses to run a command
	// line whose files on disk are not those (Launch.Exec), before the
	// server starts and before each command. Nil: no lock.
	Pinned map[string]string `json:"pinned,omitempty"`
	// Verified, with a lock, maps each file of Pinned to its verified
	// copy: a host-owned file with exactly the pinned bytes (checked as
	// they were copied), which is what Launch.Exec executes or passes in
	// place of the path. Nil: no lock.
	Verified map[string]string `json:"verified,omitempty"`
}

// Fault is one fault of a declaration, at a JSON path.
type Fault = strictjson.Fault

// ParseMCP checks an MCP server declaration as `opentool-host validate`
// and OCI artifacts do: ParseDesktop, then the first fault of an entry in
// file order. It returns the servers by plugin name (DesktopEntry.Name),
// as declared: variables not expanded, envFile not read (the host uses
// ParseDesktop and DesktopEntry.Resolve, so that one bad entry fails
// alone). Disabled entries are left out. Errors: a *Fault.
func ParseMCP(data []byte) (map[string]MCPServer, error) {
	cfg, err := ParseDesktop(data)
	if err != nil {
		return nil, err
	}
	out := map[string]MCPServer{}
	for _, e := range cfg.Entries {
		switch {
		case e.Disabled:
		case e.Fault != nil:
			return nil, e.Fault
		default:
			out[e.Name] = e.Server
		}
	}
	return out, nil
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
	case s.Transport != "" && (s.Transport != TransportSSE || s.URL == ""):
		return &Fault{Path: p + ".transport", Message: `must be "" or "sse" (for a url)`}
	}
	if s.URL != "" {
		if err := checkURL(s.URL); err != nil {
			return &Fault{Path: p + ".url", Message: err.Error()}
		}
	}
	if f := checkOAuth(p, s); f != nil {
		return f
	}
	for k := range s.Env {
		if k == "" || strings.ContainsAny(k, "=\x00") {
			return &Fault{Path: p + ".env", Message: fmt.Sprintf("invalid variable name %q", k)}
		}
	}
	return nil
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

// Encode returns l as JSON: how the host keeps a declared plugin's
// launch (its identity is the sha256 of it) and hands it to
// core.Config.Declared (DecodeLaunch).
func (l Launch) Encode() string {
	b, _ := json.Marshal(l) // strings and maps of strings: cannot fail
	return string(b)
}

// DecodeLaunch parses what Encode returned. Errors: invalid JSON, a
// Launch without a name, command tools that do not check, or a server
// with neither command nor url.
func DecodeLaunch(s string) (Launch, error) {
	var l Launch
	if err := json.Unmarshal([]byte(s), &l); err != nil {
		return l, fmt.Errorf("launch: %w", err)
	}
	if l.Name == "" {
		return l, errors.New("launch: no plugin name")
	}
	if l.Commands != nil {
		if err := l.Commands.check("$.commands"); err != nil {
			return l, fmt.Errorf("launch: %w", err)
		}
		return l, nil
	}
	if err := checkServer("$.server", l.Server); err != nil {
		return l, fmt.Errorf("launch: %w", err)
	}
	return l, nil
}
