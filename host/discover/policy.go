package discover

// Per-plugin policy. A file NAME.policy.json in the plugins directory
// (protocol/decl.Policy) sets what plugin NAME may do: call timeout,
// concurrency, a name prefix, environment variables and secrets, resource
// limits and a sandbox. The host's Config is the default and the ceiling:
// a policy only narrows it, and one that asks for more is refused when the
// plugin starts, naming the member (the plugin then fails to start, like
// a bad declaration). Editing, adding or removing the file restarts the
// plugin (blue/green, like a new binary): the policy is part of what the
// process is.

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/opentool-host/opentool-host/host/core"
	"github.com/opentool-host/opentool-host/internal/strictjson"
	"github.com/opentool-host/opentool-host/process/sandbox"
	"github.com/opentool-host/opentool-host/protocol/decl"
)

// PolicyRef is the policy file of one plugin as found: parsed, or the
// fault that kept it from being parsed. The zero policyRef is "no policy
// file".
type PolicyRef struct {
	Path   string       // the NAME.policy.json file ("" when none)
	Parsed *decl.Policy // parsed (nil when none or faulty)
	Sum    string       // sha256 of the file's bytes: a change restarts the plugin
	Fault  string       // why it could not be read or parsed
}

// maxSecretBytes caps a secret file.
const maxSecretBytes = 64 << 10

// policyPath returns the policy file of plugin name in dir.
func policyPath(dir, name string) string {
	return filepath.Join(dir, name+decl.PolicySuffix)
}

// IsPolicyFile reports whether file (a base name) is NAME.policy.json and
// returns NAME.
func IsPolicyFile(file string) (string, bool) {
	name, ok := strings.CutSuffix(file, decl.PolicySuffix)
	return name, ok && decl.ValidPluginName(name)
}

// readPolicy reads the policy file of plugin name in dir: the zero
// policyRef when there is none.
func readPolicy(dir, name string) PolicyRef {
	path := policyPath(dir, name)
	data, err := decl.ReadDropIn(path, decl.MaxFileBytes)
	if errors.Is(err, fs.ErrNotExist) {
		return PolicyRef{}
	}
	ref := PolicyRef{Path: path}
	if err == nil {
		sum := sha256.Sum256(data)
		ref.Sum = hex.EncodeToString(sum[:])
		ref.Parsed, err = decl.ParsePolicy(data)
	}
	if err != nil {
		ref.Fault = fmt.Sprintf("policy %v", strictjson.InFile(filepath.Base(path), err))
		ref.Parsed = nil
	}
	return ref
}

// Policy is the effective policy of one plugin instance: the host's
// settings narrowed by the plugin's policy file.
type Policy struct {
	Timeout        time.Duration          // a call's timeout (Config.CallTimeout, or shorter)
	MaxConcurrency int                    // calls at once (Config.MaxConcurrency, or fewer)
	MaxQueue       int                    // calls waiting for a slot (Config.MaxQueue, or fewer)
	Prefix         string                 // prefix of the plugin's function names ("" for none)
	Env            []string               // KEY=VALUE of the policy's env, sorted
	Secrets        map[string]decl.Secret // variable → the declared secret it is set to
	Dir            string                 // the policy file's folder: relative paths resolve here
	Spec           sandbox.Spec           // the sandbox: the host's, narrowed by the policy
}

// ResolvePolicy returns the effective policy of plugin name served from
// f, or why f's policy cannot apply: its file's fault, a member that asks
// for more than the host allows ("policy files.policy.json:
// $.limits.memory_mb: 512 MiB exceeds the host's limit of 256 MiB"), or a
// secret the operator did not grant to name (grantedSecrets). Secrets
// are not read here (SecretEnv, at each start). A confined script plugin
// may read what its interpreter and this host's SDK need besides
// (scriptReads).
func ResolvePolicy(c *core.Config, name string, f FileRef) (Policy, error) {
	pol, err := narrowPolicy(c, name, f)
	if err == nil && pol.Spec.Confine && f.Launch == "" {
		pol.Spec.Read = append(slices.Clip(pol.Spec.Read), scriptReads(f)...)
	}
	return pol, err
}

// narrowPolicy is ResolvePolicy without what a script may read by rule.
func narrowPolicy(c *core.Config, name string, f FileRef) (Policy, error) {
	pol := Policy{Timeout: c.CallTimeout, MaxConcurrency: c.MaxConcurrency, MaxQueue: c.MaxQueue, Spec: c.Sandbox}
	ref := f.Policy
	if ref.Fault != "" {
		return pol, errors.New(ref.Fault)
	}
	if ref.Parsed == nil {
		return pol, nil
	}
	p, where := ref.Parsed, "policy "+filepath.Base(ref.Path)+": "
	dir, err := filepath.Abs(filepath.Dir(ref.Path))
	if err != nil {
		return pol, fmt.Errorf("%s%w", where, err)
	}
	pol.Dir = dir
	pol.Prefix = p.Prefix
	if pol.Secrets, err = grantedSecrets(c, name, p.Secrets, where); err != nil {
		return pol, err
	}
	for k, v := range p.Env {
		pol.Env = append(pol.Env, k+"="+v)
	}
	sort.Strings(pol.Env)
	if p.TimeoutMS > 0 {
		d := time.Duration(p.TimeoutMS) * time.Millisecond
		if d > c.CallTimeout {
			return pol, fmt.Errorf("%s$.timeout_ms: %d ms exceeds the host's call timeout of %d ms", where, p.TimeoutMS, c.CallTimeout.Milliseconds())
		}
		pol.Timeout = d
	}
	if p.MaxConcurrency > 0 {
		if p.MaxConcurrency > c.MaxConcurrency {
			return pol, fmt.Errorf("%s$.max_concurrency: %d exceeds the host's %d", where, p.MaxConcurrency, c.MaxConcurrency)
		}
		pol.MaxConcurrency = p.MaxConcurrency
		pol.MaxQueue = min(c.MaxQueue, 4*p.MaxConcurrency)
	}
	if err := narrowLimits(&pol.Spec, p.Limits); err != nil {
		return pol, errors.New(where + err.Error())
	}
	if p.Sandbox != nil {
		if err := narrowSandbox(&pol.Spec, p.Sandbox, pol.Dir, c.SandboxWrite); err != nil {
			return pol, errors.New(where + err.Error())
		}
	}
	return pol, nil
}

// narrowLimits sets spec's limits from l, each at most the host's (a
// host limit of 0 is no limit).
func narrowLimits(spec *sandbox.Spec, l decl.Limits) error {
	return errors.Join(
		narrowLimit("memory_mb", &spec.MemoryBytes, l.MemoryMB<<20, " bytes"),
		narrowLimit("cpu_seconds", &spec.CPUSeconds, l.CPUSeconds, " s"),
		narrowLimit("cpu_percent", &spec.CPUPercent, l.CPUPercent, ""),
		narrowLimit("processes", &spec.Processes, l.Processes, ""))
}

// narrowLimit sets *host to want (0: the host's), refusing more than a
// host limit (0: none).
func narrowLimit[T int | int64](member string, host *T, want T, unit string) error {
	switch {
	case want == 0:
		return nil
	case *host > 0 && want > *host:
		return fmt.Errorf("$.limits.%s: %d%s exceeds the host's limit of %d%s", member, want, unit, *host, unit)
	}
	*host = want
	return nil
}

// narrowSandbox confines spec with s: paths resolved against dir; when
// the host already confines every plugin, each path must lie inside one
// the host allows (a written one inside a writable one: spec's Write or
// one of writable, the host's --sandbox-write), and a host that denies
// the network cannot be overruled.
func narrowSandbox(spec *sandbox.Spec, s *decl.Sandbox, dir string, writable []string) error {
	hostWrite, hostConfines := slices.Concat(spec.Write, writable), spec.Confine
	hostRead := slices.Concat(spec.Read, hostWrite)
	read, err := resolvePaths(s.Read, dir, "$.sandbox.read", hostConfines, hostRead)
	if err != nil {
		return err
	}
	write, err := resolvePaths(s.Write, dir, "$.sandbox.write", hostConfines, hostWrite)
	if err != nil {
		return err
	}
	spec.Confine, spec.Read, spec.Write = true, read, write
	switch {
	case s.Network == "allow" && spec.DenyNetwork:
		return errors.New(`$.sandbox.network: "allow", but the host denies plugins the network`)
	case s.Network == "deny":
		var ports []uint16
		for i, p := range s.ConnectTCP {
			if spec.DenyNetwork && !slices.Contains(spec.ConnectTCP, uint16(p)) {
				return fmt.Errorf("$.sandbox.connect_tcp[%d]: port %d is not one the host allows", i, p)
			}
			ports = append(ports, uint16(p))
		}
		spec.DenyNetwork, spec.ConnectTCP = true, ports
	}
	return nil
}

// ceilingFlag is the host flag that lets a policy member name a path.
var ceilingFlag = map[string]string{"$.sandbox.read": "--sandbox-read", "$.sandbox.write": "--sandbox-write"}

// resolvePaths makes paths absolute (relative to dir) and, when the host
// confines plugins, checks each lies inside one of allowed.
func resolvePaths(paths []string, dir, member string, confined bool, allowed []string) ([]string, error) {
	out := make([]string, 0, len(paths))
	for i, p := range paths {
		if !filepath.IsAbs(p) {
			p = filepath.Join(dir, p)
		}
		p = filepath.Clean(p)
		if confined && !sandbox.Within(p, allowed) {
			return nil, fmt.Errorf("%s[%d]: %s is outside what the host's sandbox allows: start the host with %s %s to allow it, or take it out of the policy", member, i, p, ceilingFlag[member], p)
		}
		out = append(out, p)
	}
	return out, nil
}

// grantedSecrets resolves a policy's secrets (variable → secret name)
// for plugin name against the secrets the operator declared
// (Config.Secrets) and the plugins each is granted to. A name the host
// does not declare, or does not grant to this plugin, fails the plugin
// (before it runs) with the member's JSON path and the flag that would
// grant it: a policy may only hand a plugin what the operator gave that
// plugin.
func grantedSecrets(c *core.Config, name string, named map[string]string, where string) (map[string]decl.Secret, error) {
	if len(named) == 0 {
		return nil, nil
	}
	out := make(map[string]decl.Secret, len(named))
	for _, k := range slices.Sorted(maps.Keys(named)) {
		secret := named[k]
		s, ok := c.Secrets[secret]
		switch {
		case !ok:
			return nil, fmt.Errorf("%s$.secrets.%s: names secret %q, which the host does not declare (the operator declares secrets with --secret %s=env:VAR or --secret %s=file:PATH and grants them with --secret-for %s=%s)",
				where, k, secret, secret, secret, secret, name)
		case !s.GrantedTo(name):
			return nil, fmt.Errorf("%s$.secrets.%s: names secret %q, which the operator did not grant to plugin %s (the operator grants it with --secret-for %s=%s)",
				where, k, secret, name, secret, name)
		}
		out[k] = s
	}
	return out, nil
}

// SecretEnv returns the policy's secrets as KEY=VALUE, read now (each
// start) from where the operator declared them: a file's content without
// trailing newlines, or a variable of the host's environment. Errors name the secret and where it was looked
// for, never a value.
func (pol Policy) SecretEnv() ([]string, error) {
	names := make([]string, 0, len(pol.Secrets))
	for k := range pol.Secrets {
		names = append(names, k)
	}
	sort.Strings(names)
	env := make([]string, 0, len(names))
	for _, k := range names {
		s := pol.Secrets[k]
		var value string
		if s.Env != "" {
			v, ok := os.LookupEnv(s.Env)
			if !ok {
				return nil, fmt.Errorf("secret %s: the host's environment has no %s", k, s.Env)
			}
			value = v
		} else {
			path := s.File // absolute: the operator's paths are resolved by the command
			data, err := decl.ReadFile(path, maxSecretBytes)
			if err != nil {
				var pe *fs.PathError
				if errors.As(err, &pe) {
					err = pe.Err
				}
				return nil, fmt.Errorf("secret %s: read %s: %w", k, path, err)
			}
			value = string(bytes.TrimRight(data, "\r\n"))
		}
		if strings.ContainsRune(value, 0) {
			return nil, fmt.Errorf("secret %s: the value holds a NUL character", k)
		}
		env = append(env, k+"="+value)
	}
	return env, nil
}

// PolicyStatus is a plugin's effective policy as GET /health shows it:
// the host's settings narrowed by NAME.policy.json. Secrets appear by
// name only.
type PolicyStatus struct {
	// File is the policy file.
	File string `json:"file"`
	// TimeoutMS is one call's timeout, ms.
	TimeoutMS int64 `json:"timeout_ms"`
	// MaxConcurrency is how many calls run at once.
	MaxConcurrency int `json:"max_concurrency"`
	// Prefix is put before every function name ("" for none).
	Prefix string `json:"prefix,omitempty"`
	// Env and Secrets name the variables the policy sets.
	Env     []string `json:"env,omitempty"`
	Secrets []string `json:"secrets,omitempty"`
	// Confinement is what confines the plugin's processes.
	Confinement sandbox.Spec `json:"confinement"`
}

// PolicyStatusOf returns the effective policy of plugin name served from
// f for /health, nil when f has no policy file or it cannot apply
// (LastError then says why).
func PolicyStatusOf(c *core.Config, name string, f FileRef) *PolicyStatus {
	if f.Policy.Path == "" {
		return nil
	}
	pol, err := ResolvePolicy(c, name, f)
	if err != nil {
		return nil
	}
	st := &PolicyStatus{File: f.Policy.Path, TimeoutMS: pol.Timeout.Milliseconds(), MaxConcurrency: pol.MaxConcurrency, Prefix: pol.Prefix, Confinement: pol.Spec}
	for _, kv := range pol.Env {
		k, _, _ := strings.Cut(kv, "=")
		st.Env = append(st.Env, k)
	}
	for k := range pol.Secrets {
		st.Secrets = append(st.Secrets, k)
	}
	sort.Strings(st.Secrets)
	return st
}
