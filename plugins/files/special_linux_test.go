package main

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/opentool-host/opentool-host/pluginsdk"
	"github.com/opentool-host/opentool-host/testkit"
)

// TestDeviceNodeInRoot makes a character device node (the same device as
// /dev/null, major 1 minor 3) inside a root, when allowed (it needs
// CAP_MKNOD), and checks that read_text, list_dir and search refuse or skip
// it, and that the check on the opened descriptor refuses it.
func TestDeviceNodeInRoot(t *testing.T) {
	tk, root := setup(t)
	dev := filepath.Join(root, "null.dev")
	if err := syscall.Mknod(dev, syscall.S_IFCHR|0o666, 1<<8|3); err != nil {
		t.Skipf("mknod: %v", err)
	}
	var out any
	err := callReturns(t, tk, "read_text", `{"path":"null.dev"}`, &out, nil)
	testkit.WantToolError(t, err, pluginsdk.CodeInvalidArguments, `path "null.dev" is not a regular file (character device)`)
	err = callReturns(t, tk, "list_dir", `{"path":"null.dev"}`, &out, nil)
	testkit.WantToolError(t, err, pluginsdk.CodeInvalidArguments, `path "null.dev" is not a folder (character device)`)
	var sout searchOut
	if err := callReturns(t, tk, "search_text", `{"pattern":"hello","path":"null.dev"}`, &sout, nil); err != nil || len(sout.Matches) != 0 {
		t.Errorf("search in null.dev = %+v, %v; want no matches and no error", sout.Matches, err)
	}

	r, err := os.OpenRoot(root)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	f, _, err := openChecked(r, "null.dev", wantFileOrDir)
	var ke *kindError
	if !errors.As(err, &ke) || ke.Mode&fs.ModeCharDevice == 0 {
		if f != nil {
			f.Close()
		}
		t.Errorf("openChecked(null.dev) error = %v, want a *kindError for a character device", err)
	}
}
