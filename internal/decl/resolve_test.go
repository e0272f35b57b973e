package decl

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestProgramResolution(t *testing.T) {
	dir := t.TempDir()
	exe, plain := filepath.Join(dir, "srv"), filepath.Join(dir, "data")
	for p, mode := range map[string]os.FileMode{exe: 0o755, plain: 0o644} {
		if err := os.WriteFile(p, []byte("#!/bin/sh\n"), mode); err != nil {
			t.Fatal(err)
		}
	}
	cases := []struct{ command, path, want, err string }{
		{"/abs/srv", "", "/abs/srv", ""},
		{"../bin/srv", "", "/bin/srv", ""},
		{"./srv", "", "/plugins/srv", ""},
		{"srv", "relative:" + dir, exe, ""},
		{"srv", ".:relative", "", `command "srv" not found in PATH ".:relative"`},
		{"data", dir, "", `command "data" not found`}, // not executable
	}
	for _, tc := range cases {
		got, err := Program("/plugins", tc.command, tc.path)
		if got != tc.want || (err == nil) != (tc.err == "") || err != nil && !strings.Contains(err.Error(), tc.err) {
			t.Errorf("Program(%q, PATH %q) = %q, %v; want %q, %q", tc.command, tc.path, got, err, tc.want, tc.err)
		}
	}
}

func TestWorkDir(t *testing.T) {
	for _, tc := range [][3]string{{"/p", "", "/p"}, {"/p", "/abs", "/abs"}, {"/p", "sub", "/p/sub"}, {"/p", "../x", "/x"}} {
		if got := WorkDir(tc[0], tc[1]); got != tc[2] {
			t.Errorf("WorkDir(%q, %q) = %q, want %q", tc[0], tc[1], got, tc[2])
		}
	}
}
