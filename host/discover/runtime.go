package discover

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"

	"github.com/opentool-host/opentool-host/process/launcher"
	"github.com/opentool-host/opentool-host/process/sandbox"
	"github.com/opentool-host/opentool-host/protocol/decl"
)

// What a confined script plugin may read by rule, beside the host's and
// its policy's paths: what its interpreter needs (sandbox.InterpreterReads)
// and the SDK of this host it imports, found where the shipped plugins
// find it. No flag is needed for a plugin of this checkout to run
// sandboxed.

// sdkEnv is the variable of the host's environment that names a plugin's
// SDK folder to the shipped templates: OPENTOOL__PYECHO__SDK reaches the
// plugin pyecho as OPENTOOL_PYECHO_SDK.
const sdkEnv = "SDK"

// sdkLang says which SDK of pluginsdk/ a script's interpreter runs, by
// the interpreter's file name, and the file that marks that SDK's folder.
var sdkLang = []struct {
	name   *regexp.Regexp
	dir    string // the folder under pluginsdk/
	marker string // a file every copy of the SDK has
	// installed is where `make install` puts the SDK with its default
	// PREFIX, under HOME ("": the interpreter's own rule covers it, as
	// Python's user site-packages).
	installed string
}{
	{regexp.MustCompile(`^python\d*(\.\d+)?$`), "python", filepath.Join("opentool_plugin", "__init__.py"), ""},
	{regexp.MustCompile(`^(node|nodejs)$`), "node", "index.js", filepath.Join(".local", "lib", "node_modules", "opentool-plugin")},
}

// scriptReads returns what the script plugin file f (an executable with a
// #! line) needs to read when confined: its interpreter's files
// (sandbox.InterpreterReads, the interpreter found in the host's PATH for
// "#!/usr/bin/env NAME"), and the folder of this host's SDK for its
// language when it holds that SDK: PLUGINS/../pluginsdk/LANG beside the
// plugins folder (where the templates look, from OPENTOOL_PLUGIN_FILE),
// the one `make install` installed with its default PREFIX (Node's:
// ~/.local/lib/node_modules/opentool-plugin; Python's is in the user's
// site-packages) and the folder the host's OPENTOOL__NAME__SDK names. The
// interpreter must be an executable file; paths are those of the host's environment,
// never of the policy's env. nil for a file without a #! line.
func scriptReads(f FileRef) []string {
	interp := sandbox.Interpreter(sandbox.Shebang(f.Path), os.Getenv("PATH"))
	if fi, err := os.Stat(interp); interp == "" || err != nil || !fi.Mode().IsRegular() || fi.Mode()&0o111 == 0 {
		return nil
	}
	reads := sandbox.InterpreterReads(interp, os.Getenv("HOME"))
	for _, lang := range sdkLang {
		if !lang.name.MatchString(filepath.Base(interp)) {
			continue
		}
		file, err := filepath.Abs(f.Path)
		if err != nil {
			break
		}
		dirs := []string{filepath.Join(filepath.Dir(filepath.Dir(file)), "pluginsdk", lang.dir)}
		if home := os.Getenv("HOME"); lang.installed != "" && filepath.IsAbs(home) {
			dirs = append(dirs, filepath.Join(home, lang.installed))
		}
		if name, ok := strings.CutPrefix(filepath.Base(file), decl.PluginPrefix); ok {
			if dir := os.Getenv(launcher.PluginPrefix + launcher.PluginKey(name) + "__" + sdkEnv); filepath.IsAbs(dir) {
				dirs = append(dirs, filepath.Clean(dir))
			}
		}
		for _, dir := range dirs {
			if fi, err := os.Stat(filepath.Join(dir, lang.marker)); err == nil && fi.Mode().IsRegular() {
				reads = append(reads, dir)
			}
		}
	}
	return reads
}
