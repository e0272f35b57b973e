package sandbox

import (
	"os"
	"path/filepath"
	"slices"
	"testing"
)

// TestInterpreterReads: a #! line's interpreter found in the given PATH
// (through env), with links resolved; what it needs outside DefaultRead
// is itself, PREFIX/lib beside its bin folder and, for a Python, the
// user's site-packages; an interpreter under /usr needs nothing more.
func TestInterpreterReads(t *testing.T) {
	prefix := t.TempDir()
	home := t.TempDir()
	for _, d := range []string{filepath.Join(prefix, "bin"), filepath.Join(prefix, "lib"), filepath.Join(home, ".local", "lib", "python3.12", "site-packages")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	real := filepath.Join(prefix, "bin", "python3.12")
	if err := os.WriteFile(real, []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("python3.12", filepath.Join(prefix, "bin", "python3")); err != nil {
		t.Fatal(err)
	}
	script := filepath.Join(t.TempDir(), "plugin")
	if err := os.WriteFile(script, []byte("#!/usr/bin/env -S python3 -u\nprint()\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	interp := Interpreter(Shebang(script), "relative:"+filepath.Join(prefix, "bin"))
	if interp != real {
		t.Fatalf("Interpreter = %q, want %q", interp, real)
	}
	want := []string{real, filepath.Join(prefix, "lib"), filepath.Join(home, ".local", "lib", "python3.12", "site-packages")}
	if got := InterpreterReads(interp, home); !slices.Equal(got, want) {
		t.Errorf("InterpreterReads = %v, want %v", got, want)
	}
	if got := InterpreterReads("/usr/bin/env", "/"); len(got) != 0 {
		t.Errorf("an interpreter under /usr: %v", got)
	}
	if Shebang(filepath.Join(prefix, "lib")) != nil || Interpreter(nil, "") != "" {
		t.Errorf("no #! line: an interpreter")
	}
}
