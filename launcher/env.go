package launcher

import (
	"fmt"
	"slices"
	"strings"
)

// The environment of every process the launcher starts is an allow-list,
// never the parent's whole environment (which may hold the host's API
// keys and other secrets). Env keeps, from a parent's environment:
//
//   - the names in BaseEnv and every LC_*;
//   - the names in Allow.Names;
//   - names starting with Allow.Prefix (e.g. OPENTOOL_FILES_ for the
//     plugin "files");
//
// and never a name in HostOnly, whatever Allow says. What the process is
// given on top (go-plugin's variables, a policy's variables and secrets,
// a declaration's values) the caller appends after.

// BaseEnv are the variables every process receives when they are set in
// its parent.
var BaseEnv = []string{"PATH", "HOME", "USER", "LOGNAME", "TMPDIR", "LANG", "LANGUAGE", "TZ"}

// HostOnly are the host's own variables: no process the launcher starts
// receives them from its parent's environment, and CheckNames refuses
// them.
var HostOnly = []string{"OPENTOOL_API_KEYS", "OPENTOOL_ADDR"}

// Allow is what Env keeps beside BaseEnv and LC_*.
type Allow struct {
	// Names are variable names kept when set.
	Names []string
	// Prefix, when not "", keeps every name that starts with it.
	Prefix string
	// Drop are names never kept, even when Names or Prefix match (the
	// variables a parent was told by its own parent, such as the
	// adapter's launch).
	Drop []string
}

// Env returns the allowed entries of environ (KEY=VALUE, as os.Environ
// returns them), in environ's order.
func Env(environ []string, a Allow) []string {
	var out []string
	for _, kv := range environ {
		k, _, ok := strings.Cut(kv, "=")
		if !ok || k == "" || slices.Contains(HostOnly, k) || slices.Contains(a.Drop, k) {
			continue
		}
		if slices.Contains(BaseEnv, k) || strings.HasPrefix(k, "LC_") || slices.Contains(a.Names, k) ||
			(a.Prefix != "" && strings.HasPrefix(k, a.Prefix)) {
			out = append(out, kv)
		}
	}
	return out
}

// CheckNames refuses variable names that are empty, hold "=" or are the
// host's own (HostOnly); what is the list's name (e.g. "plugin env") in
// the error.
func CheckNames(what string, names []string) error {
	for _, n := range names {
		switch {
		case n == "" || strings.Contains(n, "="):
			return fmt.Errorf("%s: %q is not a variable name", what, n)
		case slices.Contains(HostOnly, n):
			return fmt.Errorf("%s: %s is the host's own and is never passed to plugins", what, n)
		}
	}
	return nil
}

// Lookup is the value of k in env (KEY=VALUE entries; the last wins), ""
// when absent.
func Lookup(env []string, k string) string {
	v := ""
	for _, kv := range env {
		if key, val, ok := strings.Cut(kv, "="); ok && key == k {
			v = val
		}
	}
	return v
}

// Granted are the names in env (KEY=VALUE entries) other than BaseEnv
// and LC_*, sorted and without repeats: what a parent was given beyond
// what every process gets, to be handed on with Allow.Names.
func Granted(env []string) []string {
	var names []string
	for _, kv := range env {
		k, _, ok := strings.Cut(kv, "=")
		if ok && k != "" && !slices.Contains(BaseEnv, k) && !strings.HasPrefix(k, "LC_") {
			names = append(names, k)
		}
	}
	slices.Sort(names)
	return slices.Compact(names)
}

// GrantedNames splits the value of a granted-names variable (Granted's
// names joined by ","); "" gives none.
func GrantedNames(value string) []string {
	if value == "" {
		return nil
	}
	return strings.Split(value, ",")
}
