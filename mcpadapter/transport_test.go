package mcpadapter

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/opentool-host/opentool-host/internal/decl"
	"github.com/opentool-host/opentool-host/internal/wire"
)

func TestResolveCommand(t *testing.T) {
	dir := t.TempDir()
	exe, plain := filepath.Join(dir, "srv"), filepath.Join(dir, "data")
	for p, mode := range map[string]os.FileMode{exe: 0o755, plain: 0o644} {
		if err := os.WriteFile(p, []byte("#!/bin/sh\n"), mode); err != nil {
			t.Fatal(err)
		}
	}
	l := func(c string) decl.Launch { return decl.Launch{Dir: "/plugins", Server: decl.MCPServer{Command: c}} }
	cases := []struct{ command, path, want, err string }{
		{"/abs/srv", "", "/abs/srv", ""},
		{"../bin/srv", "", "/bin/srv", ""},
		{"./srv", "", "/plugins/srv", ""},
		{"srv", "relative:" + dir, exe, ""},
		{"srv", ".:relative", "", `command "srv" not found in PATH ".:relative"`},
		{"data", dir, "", `command "data" not found`}, // not executable
	}
	for _, tc := range cases {
		got, err := resolveCommand(l(tc.command), tc.path)
		if got != tc.want || (err == nil) != (tc.err == "") || err != nil && !strings.Contains(err.Error(), tc.err) {
			t.Errorf("resolveCommand(%q, PATH %q) = %q, %v; want %q, %q", tc.command, tc.path, got, err, tc.want, tc.err)
		}
	}
}

func TestServerEnv(t *testing.T) {
	environ := []string{"PATH=/bin", decl.EnvLaunch + "={}", wire.Handshake.MagicCookieKey + "=x", "PLUGIN_MIN_PORT=1", "HOME=/h", "KEEP=1"}
	got := serverEnv(environ, map[string]string{"KEEP": "2", "B": "b", "A": "a"})
	if want := []string{"PATH=/bin", "HOME=/h", "A=a", "B=b", "KEEP=2"}; !slices.Equal(got, want) {
		t.Fatalf("serverEnv = %v, want %v", got, want)
	}
}
