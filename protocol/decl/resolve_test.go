package decl

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/opentool-host/opentool-host/protocol/lockfile"
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
		{exe, "", exe, ""},
		{"./srv", "", exe, ""},
		{"../" + filepath.Base(dir) + "/srv", "", exe, ""},
		{"srv", "relative:" + dir, exe, ""},
		{"/abs/srv", "", "", `the plugin's program "/abs/srv" does not exist`},
		{"./data", "", "", `the plugin's program "./data" is not executable`},
		{"./", "", "", `the plugin's program "./" is not a regular file`},
		{"srv", ".:relative", "", `the plugin's program "srv" is not installed`},
		{"data", dir, "", `the plugin's program "data" is not installed`}, // not executable
	}
	for _, tc := range cases {
		got, err := Program(dir, tc.command, tc.path)
		if got != tc.want || (err == nil) != (tc.err == "") || err != nil && err.Error() != tc.err {
			t.Errorf("Program(%q, PATH %q) = %q, %v; want %q, %q", tc.command, tc.path, got, err, tc.want, tc.err)
		}
	}
}

// TestProgramErrorDetail: a program's error names the program and never
// a folder of the PATH (what a caller may be told); Detail adds the
// folders searched, each once, or the path tried.
func TestProgramErrorDetail(t *testing.T) {
	_, err := Program("/plugins", "frobnicate", "/opt/secret-bin:rel:/usr/bin:/opt/secret-bin")
	var pe *ProgramError
	if !errors.As(err, &pe) {
		t.Fatalf("err = %v, want a *ProgramError", err)
	}
	if strings.Contains(err.Error(), "/opt") || strings.Contains(err.Error(), "/usr") {
		t.Errorf("Error() shows the PATH: %s", err)
	}
	want := `the plugin's program "frobnicate" is not installed: not found in any folder of the plugin's PATH: /opt/secret-bin, /usr/bin; install it, or declare its absolute path`
	if pe.Detail() != want {
		t.Errorf("Detail() =\n%s\nwant\n%s", pe.Detail(), want)
	}
	_, err = Program("/plugins", "./bin/srv", "")
	if !errors.As(err, &pe) || !strings.Contains(pe.Detail(), "/plugins/bin/srv does not exist") || strings.Contains(err.Error(), "/plugins/bin") {
		t.Errorf("a relative path: %v / %s", err, pe.Detail())
	}
}

func TestWorkDir(t *testing.T) {
	for _, tc := range [][3]string{{"/p", "", "/p"}, {"/p", "/abs", "/abs"}, {"/p", "sub", "/p/sub"}, {"/p", "../x", "/x"}} {
		if got := WorkDir(tc[0], tc[1]); got != tc[2] {
			t.Errorf("WorkDir(%q, %q) = %q, want %q", tc[0], tc[1], got, tc[2])
		}
	}
}

// TestLaunchFilesAndExec: Files lists the program and the arguments that
// name existing regular files, relative to the working directory
// (literal command-tool arguments only); Exec, under a lock, runs the
// verified copies in their place and refuses a pinned file that changed,
// naming it (issue 30, findings 3 and 4).
func TestLaunchFilesAndExec(t *testing.T) {
	dir := t.TempDir()
	sub := filepath.Join(dir, "sub")
	if err := os.Mkdir(sub, 0o755); err != nil {
		t.Fatal(err)
	}
	script, conf := filepath.Join(sub, "srv.py"), filepath.Join(dir, "conf.json")
	for _, p := range []string{script, conf} {
		if err := os.WriteFile(p, []byte("v1"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	sh := "/bin/sh"
	server := Launch{Name: "s", Dir: dir, Server: MCPServer{Command: sh, Args: []string{"-u", "srv.py", "missing.py", conf, "sub"}, Cwd: "sub"}}
	files, err := server.Files("/usr/bin:/bin")
	if err != nil {
		t.Fatal(err)
	}
	if want := slices.Sorted(slices.Values([]string{sh, conf, script})); strings.Join(files, " ") != strings.Join(want, " ") {
		t.Fatalf("server files = %v, want %v", files, want)
	}
	cmds, err := ParseCommands([]byte(`{"functions":[{"name":"f","description":"d","parameters":[{"name":"p","schema":{"type":"string"}}],"command":["/bin/sh","conf.json","{p}"]}]}`))
	if err != nil {
		t.Fatal(err)
	}
	tools := Launch{Name: "t", Dir: dir, Commands: cmds}
	if files, err = tools.Files(""); err != nil || strings.Join(files, " ") != strings.Join(slices.Sorted(slices.Values([]string{sh, conf})), " ") {
		t.Fatalf("tools files = %v, %v, want %s %s (not the caller's {p})", files, err, sh, conf)
	}

	sum := func(p string) string {
		s, err := lockfile.FileSHA256(p)
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	server.Pinned = map[string]string{sh: sum(sh), script: sum(script), conf: sum(conf)}
	server.Verified = map[string]string{sh: "/state/sh", script: "/state/srv.py", conf: "/state/conf.json"}
	e, err := server.Exec(append([]string{sh}, server.Server.Args...), "sub", "")
	if err != nil {
		t.Fatal(err)
	}
	if want := "/state/sh /bin/sh -u /state/srv.py missing.py /state/conf.json sub"; e.Path+" "+e.Arg0+" "+strings.Join(e.Args, " ") != want {
		t.Errorf("exec = %+v, want %s", e, want)
	}
	if err := os.WriteFile(script, []byte("evil"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := server.Exec(append([]string{sh}, server.Server.Args...), "sub", ""); err == nil || !strings.Contains(err.Error(), script+" changed") {
		t.Errorf("exec after the script changed: %v, want a refusal naming %s", err, script)
	}
	delete(server.Verified, conf)
	if _, err := server.Exec([]string{sh, conf}, "", ""); err == nil || !strings.Contains(err.Error(), "no verified copy") {
		t.Errorf("exec of a pinned file without a copy: %v", err)
	}
}
