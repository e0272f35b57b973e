package decl

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strings"

	"github.com/opentool-host/opentool-host/internal/strictjson"
)

// PolicySuffix is the file-name suffix of a policy declaration:
// "NAME.policy.json" sets the policy of plugin NAME, whatever declares it
// (an executable opentool-plugin-NAME, NAME.tools.json, or a server NAME
// of an NAME2.mcp.json).
const PolicySuffix = ".policy.json"

// Policy is a NAME.policy.json declaration: what plugin NAME may do and
// use. Every member is optional; a left-out member takes the host's
// setting (its flags), and a declared one may only narrow it (the host
// checks that when it starts the plugin).
//
//	{"timeout_ms": 5000, "max_concurrency": 4, "prefix": "fs_",
//	 "env": {"FILES_MODE": "ro"},
//	 "secrets": {"API_TOKEN": "files-token", "DB_URL": "files-db"},
//	 "limits": {"memory_mb": 256, "cpu_percent": 50, "cpu_seconds": 600, "processes": 32},
//	 "sandbox": {"read": [".."], "write": ["/tmp/files"], "network": "deny", "connect_tcp": [443]}}
type Policy struct {
	// TimeoutMS bounds one call, in ms (at most the host's
	// --call-timeout).
	TimeoutMS int64 `json:"timeout_ms,omitempty"`
	// MaxConcurrency is how many calls the plugin runs at once (at most
	// the host's --max-concurrency); more queue.
	MaxConcurrency int `json:"max_concurrency,omitempty"`
	// Prefix is put before every function name the plugin declares: a
	// function "read" of a plugin with prefix "fs_" is served as
	// "fs_read" (the plugin still receives "read").
	Prefix string `json:"prefix,omitempty"`
	// Env holds variables set for this plugin only (plain values: put
	// secrets in Secrets, whose values are never shown).
	Env map[string]string `json:"env,omitempty"`
	// Secrets are variables set for this plugin only, each to the value
	// of a secret the operator declared on the host (--secret NAME=...,
	// --secrets-file) and granted to this plugin (--secret-for
	// NAME=PLUGIN, "plugins" in the secrets file): variable name →
	// secret name. Values are read when
	// the plugin starts (each start: a rotated secret reaches the next
	// process) and never logged, shown or given to another plugin. A
	// policy names secrets; where a secret is read from is the
	// operator's alone (a drop-in file may only narrow what the host
	// allows).
	Secrets map[string]string `json:"secrets,omitempty"`
	// Limits are resource limits of the plugin's process tree.
	Limits Limits `json:"limits,omitzero"`
	// Sandbox, when present, confines the plugin's filesystem and
	// network (Landlock).
	Sandbox *Sandbox `json:"sandbox,omitempty"`
}

// Secret says where a secret the operator declared is read from
// (--secret NAME=env:VAR|file:PATH, --secrets-file): exactly one of File
// and Env, and the plugins the operator grants it to (--secret-for
// NAME=PLUGIN[,PLUGIN...], "plugins" in the secrets file).
type Secret struct {
	// File is a file holding the value (trailing newlines removed); a
	// relative path is relative to the host's working folder (to the
	// secrets file's folder for a --secrets-file).
	File string `json:"file,omitempty"`
	// Env names a variable of the host's environment holding the value.
	Env string `json:"env,omitempty"`
	// Plugins are the plugin names (ValidPluginName) whose policies may
	// name this secret: a policy of any other plugin that names it fails
	// its plugin before it runs. None: the secret reaches no plugin.
	Plugins []string `json:"plugins,omitempty"`
}

// GrantedTo reports whether the operator granted s to plugin name
// (exactly that name: Plugins).
func (s Secret) GrantedTo(name string) bool {
	return slices.Contains(s.Plugins, name)
}

// SecretsFile is the operator's secrets file (--secrets-file):
// {"secrets": {"NAME": {"env": "VAR"} | {"file": "PATH"}, "plugins":
// ["PLUGIN", ...]}}.
type SecretsFile struct {
	// Secrets maps each secret's name ([A-Za-z0-9_.-]{1,64}) to where it
	// is read from.
	Secrets map[string]Secret `json:"secrets"`
}

// ParseSecretsFile decodes a --secrets-file exactly, as hand-written
// JSON (strictjson.ReadHandWritten). Errors: a *Fault with the JSON path
// of the first fault and its line and column.
func ParseSecretsFile(data []byte) (*SecretsFile, error) {
	return strictjson.ParseHandWritten(data, MaxFileBytes, func(h *strictjson.HandWritten) (*SecretsFile, error) {
		var f SecretsFile
		if err := h.Decode(&f); err != nil {
			return nil, err
		}
		for _, name := range slices.Sorted(maps.Keys(f.Secrets)) {
			if err := CheckSecretDecl(strictjson.AppendKey("$.secrets", name), name, f.Secrets[name]); err != nil {
				return nil, err
			}
		}
		return &f, nil
	})
}

// secretNameRE is what a declared secret may be named.
var secretNameRE = regexp.MustCompile(`^[A-Za-z0-9_.-]{1,64}$`)

// CheckSecretDecl checks one declared secret (at path p): its name, one
// source, its plugins' names, and that the source is not the host's own: a variable
// OPENTOOL_* (the API keys, the keys file's path, the host's settings)
// can never be a plugin's secret. The keys file itself is refused by the
// host, which knows its path.
func CheckSecretDecl(p, name string, s Secret) error {
	switch {
	case !secretNameRE.MatchString(name):
		return &Fault{Path: p, Message: "a secret's name must match [A-Za-z0-9_.-]{1,64}"}
	case (s.File == "") == (s.Env == ""):
		return &Fault{Path: p, Message: `must have exactly one of "file" and "env"`}
	case s.Env != "" && !envNameRE.MatchString(s.Env):
		return &Fault{Path: p + ".env", Message: "is not a variable name"}
	case s.Env != "" && (strings.HasPrefix(s.Env, "OPENTOOL_") || ReservedEnv(s.Env)):
		return &Fault{Path: p + ".env", Message: s.Env + " is the host's own variable and can never be a plugin's secret"}
	}
	for i, plugin := range s.Plugins {
		if !ValidPluginName(plugin) {
			return &Fault{Path: fmt.Sprintf("%s.plugins[%d]", p, i), Message: fmt.Sprintf("%q is not a plugin name (%s)", plugin, pluginNameRule)}
		}
	}
	return nil
}

// Limits are resource limits; 0 or left out means the host's setting.
type Limits struct {
	// MemoryMB caps the memory of the process tree, in MiB.
	MemoryMB int64 `json:"memory_mb,omitempty"`
	// CPUPercent caps CPU time per wall-clock second, in percent of one
	// core (cgroup v2 only).
	CPUPercent int `json:"cpu_percent,omitempty"`
	// CPUSeconds caps the total CPU time of each process, in seconds.
	CPUSeconds int64 `json:"cpu_seconds,omitempty"`
	// Processes caps the processes and threads of the tree.
	Processes int `json:"processes,omitempty"`
}

// Sandbox is a filesystem and network sandbox. Paths are relative to the
// plugins directory or absolute.
type Sandbox struct {
	// Read are paths the plugin may read (and execute), beside the system
	// folders every program needs.
	Read []string `json:"read,omitempty"`
	// Write are paths the plugin may read and write.
	Write []string `json:"write,omitempty"`
	// Network is "allow" (default: the host's setting) or "deny" (no TCP
	// bind or connect, except to the ports of ConnectTCP).
	Network string `json:"network,omitempty"`
	// ConnectTCP are TCP ports the plugin may connect to when Network is
	// "deny".
	ConnectTCP []int `json:"connect_tcp,omitempty"`
}

// Policy bounds.
const (
	// MaxPolicyTimeoutMS is the longest timeout_ms (24 h).
	MaxPolicyTimeoutMS = 24 * 3600 * 1000
	// MaxPrefixLen is the longest prefix.
	MaxPrefixLen = 32
)

var (
	envNameRE = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]{0,127}$`)
	prefixRE  = regexp.MustCompile(`^[a-zA-Z0-9_-]+$`)
)

// ReservedEnv reports whether a variable is the host's to set and may not
// be set by a policy: go-plugin's (PLUGIN_*), the host's protocol
// variables (OPENTOOL_PLUGIN, OPENTOOL_PLUGIN_FILE, OPENTOOL_SANDBOX) and the
// host's own settings (OPENTOOL_API_KEYS, OPENTOOL_ADDR), and the loader's
// (LD_*), which would run code before the plugin's own.
func ReservedEnv(name string) bool {
	switch name {
	case "OPENTOOL_PLUGIN", "OPENTOOL_PLUGIN_FILE", "OPENTOOL_SANDBOX", "OPENTOOL_API_KEYS", "OPENTOOL_ADDR":
		return true
	}
	return strings.HasPrefix(name, "PLUGIN_") || strings.HasPrefix(name, "LD_")
}

// ParsePolicy decodes a NAME.policy.json declaration exactly, as
// hand-written JSON (strictjson.ReadHandWritten: comments and trailing
// commas allowed), and checks it on its own (the host checks it against
// its settings at start). Errors: a *Fault with the JSON path of the
// first fault and its line and column ("4:5: $.limits.memory_mb: must
// be at least 1").
func ParsePolicy(data []byte) (*Policy, error) {
	return strictjson.ParseHandWritten(data, MaxFileBytes, func(h *strictjson.HandWritten) (*Policy, error) {
		var p Policy
		if err := oldSecretForm(h.JSON()); err != nil {
			return nil, err
		}
		if err := h.Decode(&p); err != nil {
			return nil, err
		}
		return &p, p.check()
	})
}

// oldSecretForm refuses, saying what to do instead, a policy that says
// where a secret is read from ({"file": ...} or {"env": ...}): that is
// the operator's to say, on the host.
func oldSecretForm(data []byte) error {
	var probe struct {
		Secrets map[string]json.RawMessage `json:"secrets"`
	}
	if json.Unmarshal(data, &probe) != nil {
		return nil // Decode says what is wrong
	}
	for _, k := range slices.Sorted(maps.Keys(probe.Secrets)) {
		if v := bytes.TrimSpace(probe.Secrets[k]); len(v) > 0 && v[0] == '{' {
			return &Fault{Path: "$.secrets." + k, Message: `a policy names a secret the operator declared on the host ("` + k + `": "NAME"); ` +
				"where a secret is read from is the operator's: declare it with --secret NAME=env:VAR or --secret NAME=file:PATH (or --secrets-file) and grant it to this plugin with --secret-for NAME=PLUGIN"}
		}
	}
	return nil
}

// check checks the members of p.
func (p *Policy) check() error {
	if p.TimeoutMS < 0 || p.TimeoutMS > MaxPolicyTimeoutMS {
		return &Fault{Path: "$.timeout_ms", Message: fmt.Sprintf("must be within 1..%d", MaxPolicyTimeoutMS)}
	}
	if p.MaxConcurrency < 0 {
		return &Fault{Path: "$.max_concurrency", Message: "must be at least 1"}
	}
	if p.Prefix != "" && (len(p.Prefix) > MaxPrefixLen || !prefixRE.MatchString(p.Prefix)) {
		return &Fault{Path: "$.prefix", Message: fmt.Sprintf("must match [a-zA-Z0-9_-]{1,%d}", MaxPrefixLen)}
	}
	for _, k := range slices.Sorted(maps.Keys(p.Env)) {
		if err := checkEnvName("$.env", k); err != nil {
			return err
		}
		if strings.ContainsRune(p.Env[k], 0) {
			return &Fault{Path: "$.env." + k, Message: "must not hold a NUL character"}
		}
	}
	for _, k := range slices.Sorted(maps.Keys(p.Secrets)) {
		if err := checkSecret(k, p.Secrets[k], p.Env); err != nil {
			return err
		}
	}
	if err := p.Limits.check("$.limits"); err != nil {
		return err
	}
	if p.Sandbox != nil {
		return p.Sandbox.check("$.sandbox")
	}
	return nil
}

// checkEnvName checks a variable name under path p.
func checkEnvName(p, k string) error {
	switch {
	case !envNameRE.MatchString(k):
		return &Fault{Path: p + "." + k, Message: "is not a variable name ([A-Za-z_][A-Za-z0-9_]*)"}
	case ReservedEnv(k):
		return &Fault{Path: p + "." + k, Message: "is set by the host and may not be set by a policy"}
	}
	return nil
}

// checkSecret checks the policy's variable k, set to the declared
// secret name.
func checkSecret(k, name string, env map[string]string) error {
	p := "$.secrets." + k
	if err := checkEnvName("$.secrets", k); err != nil {
		return err
	}
	if _, ok := env[k]; ok {
		return &Fault{Path: p, Message: "is also set in env"}
	}
	if !secretNameRE.MatchString(name) {
		return &Fault{Path: p, Message: "must name a secret the operator declared on the host ([A-Za-z0-9_.-]{1,64})"}
	}
	return nil
}

// check checks l under path p.
func (l Limits) check(p string) error {
	for _, c := range []struct {
		name string
		v    int64
	}{{"memory_mb", l.MemoryMB}, {"cpu_percent", int64(l.CPUPercent)}, {"cpu_seconds", l.CPUSeconds}, {"processes", int64(l.Processes)}} {
		if c.v < 0 {
			return &Fault{Path: p + "." + c.name, Message: "must be at least 1"}
		}
	}
	if l.MemoryMB > 1<<30 {
		return &Fault{Path: p + ".memory_mb", Message: "is too large"}
	}
	return nil
}

// check checks s under path p.
func (s *Sandbox) check(p string) error {
	for i, r := range s.Read {
		if r == "" {
			return &Fault{Path: fmt.Sprintf("%s.read[%d]", p, i), Message: "must not be empty"}
		}
	}
	for i, w := range s.Write {
		if w == "" {
			return &Fault{Path: fmt.Sprintf("%s.write[%d]", p, i), Message: "must not be empty"}
		}
	}
	switch s.Network {
	case "", "allow", "deny":
	default:
		return &Fault{Path: p + ".network", Message: `must be "allow" or "deny"`}
	}
	for i, port := range s.ConnectTCP {
		if port < 1 || port > 65535 {
			return &Fault{Path: fmt.Sprintf("%s.connect_tcp[%d]", p, i), Message: "must be a TCP port (1..65535)"}
		}
	}
	if len(s.ConnectTCP) > 0 && s.Network != "deny" {
		return &Fault{Path: p + ".connect_tcp", Message: `only applies with "network": "deny"`}
	}
	return nil
}
