package host_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/opentool-host/opentool-host/host"
	"github.com/opentool-host/opentool-host/host/core"
	"github.com/opentool-host/opentool-host/testkit"
)

// A dead host's state folders (binary copies, socket folder) are swept
// when a host starts, and a host removes its own when it closes.
func TestStateFoldersSweptAndRemoved(t *testing.T) {
	parent := t.TempDir()
	// pid 2^22+1 is above Linux's pid_max ceiling: never alive.
	deadState := filepath.Join(parent, "host-4194305-123")
	deadSock := filepath.Join(os.TempDir(), "oth-4194305-123")
	for _, d := range []string{deadState, deadSock} {
		if err := os.MkdirAll(filepath.Join(d, "x"), 0o700); err != nil {
			t.Fatal(err)
		}
	}
	defer os.RemoveAll(deadSock)
	dir := t.TempDir()
	testkit.InstallPlugin(t, dir, "calculator", "./plugins/calculator")
	h, err := host.New(core.Config{Dir: dir, StateDir: parent, Logger: testkit.Logger(t)})
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range []string{deadState, deadSock} {
		if _, err := os.Stat(d); !os.IsNotExist(err) {
			t.Fatalf("dead host's %s not swept (%v)", d, err)
		}
	}
	if err := h.Start(t.Context()); err != nil {
		t.Fatal(err)
	}
	own, _ := filepath.Glob(filepath.Join(parent, "host-*"))
	if len(own) != 1 {
		t.Fatalf("state folders %v, want exactly one", own)
	}
	copies, _ := filepath.Glob(filepath.Join(own[0], "bin", "*"))
	if len(copies) != 1 {
		t.Fatalf("binary copies %v, want one", copies)
	}
	if err := h.Close(t.Context()); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(own[0]); !os.IsNotExist(err) {
		t.Fatalf("own state folder left after Close: %v", err)
	}
}
