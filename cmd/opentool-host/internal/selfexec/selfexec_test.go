package selfexec

import (
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/opentool-host/opentool-host/process/keeper"
)

// TestKeeperArgvPrefersTheSmallKeeperBesideTheHost: the host's keeper is
// the small keeper program when an executable file of that name lies
// beside the host's executable, and the host's binary itself otherwise
// (nothing beside it, a file that is not executable, a folder, a file or
// a folder another user could write).
func TestKeeperArgvPrefersTheSmallKeeperBesideTheHost(t *testing.T) {
	dir := t.TempDir()
	exe := filepath.Join(dir, "opentool-host")
	small := filepath.Join(dir, keeper.Program)
	self := []string{exe, Keeper}
	if got := keeperArgv(exe); !slices.Equal(got, self) {
		t.Errorf("alone: %q, want %q", got, self)
	}
	if err := os.Mkdir(small, 0o755); err != nil {
		t.Fatal(err)
	}
	if got := keeperArgv(exe); !slices.Equal(got, self) {
		t.Errorf("a folder beside: %q, want %q", got, self)
	}
	if err := os.Remove(small); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(small, []byte("#!/bin/sh\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if got := keeperArgv(exe); !slices.Equal(got, self) {
		t.Errorf("not executable: %q, want %q", got, self)
	}
	if err := os.Chmod(small, 0o757); err != nil {
		t.Fatal(err)
	}
	if got := keeperArgv(exe); !slices.Equal(got, self) {
		t.Errorf("writable by others: %q, want %q", got, self)
	}
	if err := os.Chmod(small, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(dir, 0o1777); err != nil { // as /tmp
		t.Fatal(err)
	}
	if got := keeperArgv(exe); !slices.Equal(got, self) {
		t.Errorf("in a folder others can write: %q, want %q", got, self)
	}
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if got, want := keeperArgv(exe), []string{small, Keeper}; !slices.Equal(got, want) {
		t.Errorf("beside: %q, want %q", got, want)
	}
}
