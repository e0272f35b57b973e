package launcher

import (
	"fmt"
	"slices"
	"strings"
)

// The environment of every process the launcher starts is an allow-list,
// never the parent's whole environment (which may hold the host's API
// keys, its task store's password and other secrets). Env keeps, from a
// parent's environment:
//
//   - the names in BaseEnv and every LC_*;
//   - the names in Allow.Names;
//   - for Allow.Plugin, the parent's variables meant for that plugin
//     (PluginVars: OPENTOOL__FILES__ROOT as OPENTOOL_FILES_ROOT for the
//     plugin "files");
//
// and never a name in Allow.Drop. No name of the host's own namespace
// (HostPrefix: its settings, such as OPENTOOL_TASK_STORE, and what it
// tells the processes it starts) is kept by a prefix: a host variable
// reaches a process only when it is named (Allow.Names), which CheckNames
// refuses for the operator's lists. What the process is given on top
// (go-plugin's variables, a policy's variables and secrets, a
// declaration's values) the caller appends after.

// BaseEnv are the variables every process receives when they are set in
// its parent.
var BaseEnv = []string{"PATH", "HOME", "USER", "LOGNAME", "TMPDIR", "LANG", "LANGUAGE", "TZ"}

// HostPrefix starts every variable of the host's own: its settings (each
// flag's variable, such as OPENTOOL_TASK_STORE) and what it tells the
// processes it starts (OPENTOOL_SANDBOX, ...).
const HostPrefix = "OPENTOOL_"

// PluginPrefix starts the variables of the host's environment meant for
// one plugin: OPENTOOL__<KEY>__<VAR> reaches the plugin whose name gives
// KEY (PluginKey), and no other process, as OPENTOOL_<KEY>_<VAR>
// (PluginVars). No host setting starts with it (tested over every flag
// of the CLI), so no plugin name makes a host setting its own.
const PluginPrefix = HostPrefix + "_"

// PluginKey is the KEY of plugin name in PluginPrefix variables: name
// upper-cased, "-" written "_" ("my-files" gives MY_FILES). Names that
// differ only in case or in "-" against "_" share a KEY, and the host
// serves at most one plugin of each KEY (the others are refused), so a
// KEY always names the one plugin it reaches.
func PluginKey(name string) string { return strings.ToUpper(strings.ReplaceAll(name, "-", "_")) }

// Allow is what Env keeps beside BaseEnv and LC_*.
type Allow struct {
	// Names are variable names kept when set.
	Names []string
	// Plugin, when not "", is the plugin whose variables (PluginVars)
	// are kept, renamed.
	Plugin string
	// Drop are names never kept, even when Names match (the variables a
	// parent was told by its own parent, such as the adapter's launch).
	Drop []string
}

// Env returns the allowed entries of environ (KEY=VALUE, as os.Environ
// returns them), in environ's order, then a.Plugin's variables
// (PluginVars).
func Env(environ []string, a Allow) []string {
	var out []string
	for _, kv := range environ {
		k, _, ok := strings.Cut(kv, "=")
		if !ok || k == "" || slices.Contains(a.Drop, k) {
			continue
		}
		if slices.Contains(BaseEnv, k) || strings.HasPrefix(k, "LC_") || slices.Contains(a.Names, k) {
			out = append(out, kv)
		}
	}
	if a.Plugin != "" {
		out = append(out, PluginVars(environ, a.Plugin)...)
	}
	return out
}

// PluginVars returns the entries of environ (KEY=VALUE) meant for plugin
// name, renamed for it: OPENTOOL__<KEY>__<VAR>=V as OPENTOOL_<KEY>_<VAR>=V,
// KEY being PluginKey(name) (OPENTOOL__FILES__ROOT reaches the plugin
// "files" as OPENTOOL_FILES_ROOT). A variable's KEY (VarKey) ends at its
// first "__" after PluginPrefix, as no plugin name holds "__":
// OPENTOOL__DB__CONN__URL is db's (as OPENTOOL_DB_CONN__URL), never a
// plugin db__conn's; OPENTOOL__TASK_STORE__X is task-store's, never
// task's.
func PluginVars(environ []string, name string) []string {
	key := PluginKey(name)
	var out []string
	for _, kv := range environ {
		k, v, ok := strings.Cut(kv, "=")
		if !ok {
			continue
		}
		if vk, rest, ok := VarKey(k); ok && vk == key {
			out = append(out, HostPrefix+key+"_"+rest+"="+v)
		}
	}
	return out
}

// VarKey splits variable k, OPENTOOL__<KEY>__<VAR>, into KEY and VAR:
// KEY ends at the first "__" that is not followed by "_" (a name may end
// in "_": OPENTOOL__A___X is plugin a_'s X), and VAR must not be empty.
// ok is false for any other variable.
func VarKey(k string) (key, rest string, ok bool) {
	s, isPlugin := strings.CutPrefix(k, PluginPrefix)
	if !isPlugin {
		return "", "", false
	}
	for j := 1; j+2 < len(s); j++ {
		if s[j:j+2] == "__" && s[j+2] != '_' {
			return s[:j], s[j+2:], true
		}
	}
	return "", "", false
}

// CheckNames refuses variable names that are empty, hold "=" or are in
// the host's namespace (HostPrefix: a host setting such as
// OPENTOOL_TASK_STORE, or what a plugin is given by PluginVars); what is
// the list's name (e.g. "plugin env") in the error.
func CheckNames(what string, names []string) error {
	for _, n := range names {
		switch {
		case n == "" || strings.Contains(n, "="):
			return fmt.Errorf("%s: %q is not a variable name", what, n)
		case strings.HasPrefix(n, HostPrefix):
			return fmt.Errorf("%s: %s is in the host's namespace (%s*: its settings) and is never passed to every plugin; "+
				"to give one plugin a variable, set %sPLUGIN__VAR (it reaches plugin PLUGIN alone as OPENTOOL_PLUGIN_VAR)",
				what, n, HostPrefix, PluginPrefix)
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
