package decl

import (
	"regexp"
	"strings"
)

// PluginPrefix is the file-name prefix of plugin executables, after the
// Terraform/Packer naming rule: "opentool-plugin-NAME".
const PluginPrefix = "opentool-plugin-"

// PluginName returns the plugin name of file base name file and whether
// file follows the naming rule: "opentool-plugin-NAME" with NAME a plugin
// name (ValidPluginName). Dotfiles, editors' temp files ("~", ".swp",
// ".tmp", ".part"), the go command's temporary file of `go build -o`
// ("NAME-go-tmp-umask") and names with other characters are rejected.
func PluginName(file string) (string, bool) {
	name, ok := strings.CutPrefix(file, PluginPrefix)
	if !ok || !ValidPluginName(name) || IsTempFile(file) {
		return "", false
	}
	return name, true
}

// IsTempFile reports whether file (a base name) is a temporary file of a
// tool writing into the plugins folder, never a plugin: an editor's ("~",
// ".swp", ".tmp", ".part") or the go command's (`go build -o` probes the
// folder with "OUTPUT-go-tmp-umask").
func IsTempFile(file string) bool {
	for _, s := range []string{"~", ".swp", ".part", "-go-tmp-umask"} {
		if strings.HasSuffix(file, s) {
			return true
		}
	}
	return strings.HasPrefix(file, ".") || strings.Contains(file, ".tmp")
}

// ValidPluginName reports whether name is a plugin name:
// ^[a-zA-Z0-9_-]{1,64}$ with no two of "_" and "-" in a row (the NAME of
// "opentool-plugin-NAME", "NAME.mcp.json", "NAME.tools.json" and
// "NAME.policy.json"). "__" ends the plugin's part of a variable
// OPENTOOL__<PLUGIN>__VAR, where "-" is written "_", so no name holds
// "__", "--", "_-" or "-_".
func ValidPluginName(name string) bool {
	return pluginNameRE.MatchString(name) && !separatorRunRE.MatchString(name)
}

// pluginNameRule says in words what ValidPluginName accepts.
const pluginNameRule = `[a-zA-Z0-9_-]{1,64}, no two of "_" and "-" in a row`

// separatorRunRE finds a run of two or more of "_" and "-".
var separatorRunRE = regexp.MustCompile(`[_-]{2,}`)
