package host

import (
	"slices"
	"strings"

	"github.com/opentool-host/opentool-host/launcher"
)

// A plugin's environment is the launcher's allow-list (launcher.Env),
// never the host's whole environment (which may hold the host's API keys
// and other secrets):
//
//   - go-plugin's own variables (the magic cookie, PLUGIN_PROTOCOL_VERSIONS,
//     PLUGIN_UNIX_SOCKET_DIR, ...);
//   - from the host's environment: launcher.BaseEnv and every LC_*;
//   - OPENTOOL_<PLUGIN>_* for plugin PLUGIN (its name upper-cased, "-"
//     written "_"): e.g. OPENTOOL_FILES_ROOT reaches the plugin "files"
//     and no other;
//   - the names in Config.PluginEnv.
//
// The host's own settings (launcher.HostOnly) never reach a plugin.

// checkPluginEnv refuses Config.PluginEnv names that are empty, hold "="
// or name a host-only variable.
func checkPluginEnv(names []string) error { return launcher.CheckNames("plugin env", names) }

// pluginEnv returns the environment of plugin name: goplugin (go-plugin's
// variables) followed by the allowed variables of environ (KEY=VALUE
// entries, as os.Environ returns them) and the extra names.
func pluginEnv(goplugin []string, name string, extra []string, environ []string) []string {
	prefix := "OPENTOOL_" + strings.ToUpper(strings.ReplaceAll(name, "-", "_")) + "_"
	return slices.Concat(goplugin, launcher.Env(environ, launcher.Allow{Names: extra, Prefix: prefix}))
}
