package host_test

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/opentool-host/opentool-host/host"
	"github.com/opentool-host/opentool-host/host/core"
)

// TestNewExplainsMissingFolder: a plugins folder that does not exist is
// an error that says where New looked and how to choose another, and
// still wraps fs.ErrNotExist.
func TestNewExplainsMissingFolder(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "plugins")
	_, err := host.New(core.Config{Dir: dir, StateDir: t.TempDir()})
	want := "plugins folder " + dir + " not found (looked for " + dir + "): --dir defaults to ./plugins in the working folder; give --dir PATH or create the folder"
	if !errors.Is(err, fs.ErrNotExist) || err.Error() != want {
		t.Fatalf("New(missing folder) = %v\nwant %q (wrapping fs.ErrNotExist)", err, want)
	}
	file := filepath.Join(t.TempDir(), "file")
	if err := os.WriteFile(file, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := host.New(core.Config{Dir: file, StateDir: t.TempDir()}); err == nil || !strings.Contains(err.Error(), "is not a directory") {
		t.Errorf("New(a file) = %v; want not a directory", err)
	}
}
