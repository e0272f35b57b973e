package core

import (
	"slices"

	"github.com/opentool-host/opentool-host/process/launcher"
)

// A plugin's environment is the launcher's allow-list (launcher.Env),
// never the host's whole environment (which may hold the host's API
// keys, its task store's password and other secrets):
//
//   - go-plugin's own variables (the magic cookie, PLUGIN_PROTOCOL_VERSIONS,
//     PLUGIN_UNIX_SOCKET_DIR, ...);
//   - from the host's environment: launcher.BaseEnv and every LC_*;
//   - the variables the operator set for this plugin alone
//     (launcher.PluginVars): OPENTOOL__FILES__ROOT reaches the plugin
//     "files", and no other, as OPENTOOL_FILES_ROOT. No host setting is
//     in that namespace, so a plugin named after one (task, api, log,
//     plugin, ...) gets none of the host's;
//   - the names in Config.PluginEnv, never one of the host's namespace
//     (launcher.CheckNames);
//
// and then its policy's variables and the secrets it grants.

// CheckPluginEnv refuses Config.PluginEnv names that are empty, hold "="
// or are in the host's namespace (OPENTOOL_*).
func CheckPluginEnv(names []string) error { return launcher.CheckNames("plugin env", names) }

// PluginEnv returns the environment of plugin name: goplugin (go-plugin's
// variables) followed by the allowed variables of environ (KEY=VALUE
// entries, as os.Environ returns them): the extra names, and the
// plugin's own (launcher.PluginVars).
func PluginEnv(goplugin []string, name string, extra []string, environ []string) []string {
	return slices.Concat(goplugin, launcher.Env(environ, launcher.Allow{Names: extra, Plugin: name}))
}
