// Command opentool-plugin-files is an opentool-host plugin with read-only
// tools over one folder, the root: list_dir, read_text and search.
//
// The root is $OPENTOOL_FILES_ROOT, or the current folder when that is
// unset or empty. When the current folder cannot be read (a sandbox that
// allows the checkout, the plugin started from another working folder by
// a desktop client), the root is the folder above the plugins folder (the
// parent of $OPENTOOL_PLUGIN_FILE's folder, which the host sets), said
// on stderr. Every path is relative to the root; paths that leave it
// ("..", absolute paths, symbolic links pointing outside) are refused with
// code 400. Access goes through os.Root, so the kernel-level lookups cannot
// escape the root either.
//
// Only regular files and folders are ever opened: named pipes, sockets and
// devices are refused with code 400 (read_text, list_dir) or skipped
// (search). Files are opened with O_NONBLOCK, so a named pipe cannot block
// the open, and the type is checked on the opened descriptor. Every call
// checks its context between chunks of reading and listing, and returns the
// context's error soon after it is cancelled.
package main

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/opentool-host/opentool-host/pluginsdk"
)

// rootEnv is the environment variable naming the root folder.
const rootEnv = "OPENTOOL_FILES_ROOT"

func main() {
	dir := os.Getenv(rootEnv)
	explicit := dir != ""
	if !explicit {
		dir = "."
	}
	ft, err := newFilesTool(dir)
	if f := os.Getenv("OPENTOOL_PLUGIN_FILE"); err != nil && !explicit && errors.Is(err, fs.ErrPermission) && f != "" {
		above := filepath.Dir(filepath.Dir(f))
		fmt.Fprintf(os.Stderr, "opentool-plugin-files: the working folder cannot be read (%v); serving %s, the folder above the plugins folder (set %s to choose)\n", err, above, rootEnv)
		ft, err = newFilesTool(above)
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "opentool-plugin-files: %v\n", err)
		os.Exit(1)
	}
	defer ft.Close()
	pluginsdk.Serve(ft.toolkit())
}
