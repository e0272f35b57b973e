package host

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"time"
)

// PluginPrefix is the file-name prefix of plugin executables, after the
// Terraform/Packer naming rule: "opentool-plugin-NAME".
const PluginPrefix = "opentool-plugin-"

// pluginNameRE is what NAME may be: it keeps aggregated schema keys
// ("NAME.Schema") collision-free.
var pluginNameRE = regexp.MustCompile(`^[a-zA-Z0-9_-]{1,64}$`)

// PluginName returns the plugin name of file base name file and whether
// file follows the naming rule: "opentool-plugin-NAME" with NAME matching
// ^[a-zA-Z0-9_-]{1,64}$. Dotfiles, editors' temp files ("~", ".swp",
// ".tmp", ".part") and names with other characters are rejected.
func PluginName(file string) (string, bool) {
	name, ok := strings.CutPrefix(file, PluginPrefix)
	if !ok || !pluginNameRE.MatchString(name) {
		return "", false
	}
	return name, true
}

// candidate is a plugin file found in the plugins directory.
type candidate struct {
	name string
	path string
	info fileStamp
}

// fileStamp is what tells that a file changed without reading it.
type fileStamp struct {
	size  int64
	mtime time.Time
	mode  fs.FileMode
}

// equal reports whether s and t are the same stamp.
func (s fileStamp) equal(t fileStamp) bool {
	return s.size == t.size && s.mtime.Equal(t.mtime) && s.mode == t.mode
}

// stampOf returns the stamp of fi.
func stampOf(fi fs.FileInfo) fileStamp {
	return fileStamp{size: fi.Size(), mtime: fi.ModTime(), mode: fi.Mode()}
}

// checkCandidate reports whether path is a plugin to run: its base name
// follows the naming rule and it is a regular file (symlinks are followed)
// with an exec bit set. The reason says why not.
func checkCandidate(path string) (c candidate, reason string) {
	base := filepath.Base(path)
	name, ok := PluginName(base)
	if !ok {
		if strings.HasPrefix(base, PluginPrefix) {
			return c, "plugin name must match " + PluginPrefix + "[a-zA-Z0-9_-]{1,64}"
		}
		return c, "name does not start with " + PluginPrefix
	}
	fi, err := os.Stat(path)
	if err != nil {
		return c, err.Error()
	}
	if !fi.Mode().IsRegular() {
		return c, "not a regular file"
	}
	if fi.Mode().Perm()&0o111 == 0 {
		return c, "not executable"
	}
	return candidate{name: name, path: path, info: stampOf(fi)}, ""
}

// scanDir lists the plugin files of dir in name order. skipped maps each
// other entry to the reason it is not a plugin (logged at debug level).
func scanDir(dir string) (found []candidate, skipped map[string]string, err error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, nil, fmt.Errorf("scan plugins dir: %w", err)
	}
	skipped = map[string]string{}
	for _, e := range entries {
		c, reason := checkCandidate(filepath.Join(dir, e.Name()))
		if reason != "" {
			skipped[e.Name()] = reason
			continue
		}
		found = append(found, c)
	}
	sort.Slice(found, func(i, j int) bool { return found[i].name < found[j].name })
	return found, skipped, nil
}
