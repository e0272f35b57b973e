package host

import (
	"fmt"
	"strings"
)

// A plugin's environment is an allow-list, never the host's whole
// environment (which may hold the host's API keys and other secrets):
//
//   - go-plugin's own variables (the magic cookie, PLUGIN_PROTOCOL_VERSIONS,
//     PLUGIN_UNIX_SOCKET_DIR, ...);
//   - from the host's environment: the names in baseEnv and every LC_*;
//   - OPENTOOL_<PLUGIN>_* for plugin PLUGIN (its name upper-cased, "-"
//     written "_"): e.g. OPENTOOL_FILES_ROOT reaches the plugin "files"
//     and no other;
//   - the names in Config.PluginEnv.
//
// The host's own settings in hostOnlyEnv never reach a plugin.

// baseEnv are the host variables every plugin receives when set.
var baseEnv = []string{"PATH", "HOME", "USER", "LOGNAME", "TMPDIR", "LANG", "LANGUAGE", "TZ"}

// hostOnlyEnv are the host's own variables; no plugin receives them, even
// when a plugin's name or Config.PluginEnv would match.
var hostOnlyEnv = map[string]bool{"OPENTOOL_API_KEYS": true, "OPENTOOL_ADDR": true}

// checkPluginEnv refuses Config.PluginEnv names that are empty, hold "="
// or name a host-only variable.
func checkPluginEnv(names []string) error {
	for _, n := range names {
		switch {
		case n == "" || strings.Contains(n, "="):
			return fmt.Errorf("plugin env: %q is not a variable name", n)
		case hostOnlyEnv[n]:
			return fmt.Errorf("plugin env: %s is the host's own and is never passed to plugins", n)
		}
	}
	return nil
}

// pluginEnv returns the environment of plugin name: goplugin (go-plugin's
// variables) followed by the allowed variables of environ (KEY=VALUE
// entries, as os.Environ returns them) and the extra names.
func pluginEnv(goplugin []string, name string, extra []string, environ []string) []string {
	prefix := "OPENTOOL_" + strings.ToUpper(strings.ReplaceAll(name, "-", "_")) + "_"
	allowed := make(map[string]bool, len(baseEnv)+len(extra))
	for _, k := range baseEnv {
		allowed[k] = true
	}
	for _, k := range extra {
		allowed[k] = true
	}
	env := append([]string(nil), goplugin...)
	for _, kv := range environ {
		k, _, ok := strings.Cut(kv, "=")
		if !ok || hostOnlyEnv[k] {
			continue
		}
		if allowed[k] || strings.HasPrefix(k, "LC_") || strings.HasPrefix(k, prefix) {
			env = append(env, kv)
		}
	}
	return env
}
