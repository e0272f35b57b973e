package e2e_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/opentool-host/opentool-host/testkit"
)

// rewriteAsNeighbour rewrites file (a host-made copy) with body as a
// process sharing the host's user can: it makes the file writable again
// and writes in place (rewrite), or makes the folder writable and renames
// a new file over it (replace).
func rewriteAsNeighbour(t *testing.T, file, body string, replace bool) {
	t.Helper()
	if !replace {
		if err := os.Chmod(file, 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(file, []byte(body), 0o700); err != nil {
			t.Fatal(err)
		}
		return
	}
	if err := os.Chmod(filepath.Dir(file), 0o700); err != nil {
		t.Fatal(err)
	}
	writeAtomic(t, file, body, 0o700)
}

// onlyMatch is the one file matching pattern.
func onlyMatch(t *testing.T, pattern string) string {
	t.Helper()
	m, err := filepath.Glob(pattern)
	if err != nil || len(m) != 1 {
		t.Fatalf("%s: %v (%v), want one file", pattern, m, err)
	}
	return m[0]
}

// TestLockedRefusesARewrittenDeclaredCopy: under --locked a command
// tool's script runs from its verified copy STATE/host-…/run/KEY/say.sh.
// A neighbour sharing the host's user (no --plugin-user, no --sandbox)
// rewrites that copy, in place or by renaming a new file over it; the
// next run is refused, the log naming the copy, and the rewritten bytes
// never run (issue 43, finding 6).
func TestLockedRefusesARewrittenDeclaredCopy(t *testing.T) {
	for _, replace := range []bool{false, true} {
		name := map[bool]string{false: "in place", true: "renamed over"}[replace]
		t.Run(name, func(t *testing.T) {
			dir, state := t.TempDir(), t.TempDir()
			marker := filepath.Join(t.TempDir(), "evil-ran")
			writeAtomic(t, filepath.Join(dir, "say.sh"), "#!/bin/sh\necho pinned-words\n", 0o755)
			writeAtomic(t, filepath.Join(dir, "say.tools.json"), `{"description": "Says.", "version": "1.0.0", "functions": [
  {"name": "say", "description": "Says the pinned words.", "parameters": [], "command": ["./say.sh"], "timeout_ms": 10000}]}`, 0o644)
			lockCmd(t, "--dir", dir)
			hp := startHostProc(t, dir, "--locked", "--state-dir", state)
			say := func() string {
				_, m := rpc(t, hp.url, `{"jsonrpc":"2.0","method":"say","id":1}`)
				b, _ := json.Marshal(m)
				return string(b)
			}
			if got := say(); !strings.Contains(got, "pinned-words") {
				t.Fatalf("say: %s, want the pinned words", got)
			}
			cp := onlyMatch(t, filepath.Join(state, "host-*", "run", "*", "say.sh"))
			if fi, err := os.Stat(cp); err != nil || fi.Mode().Perm()&0o222 != 0 {
				t.Errorf("copy %s: %v (%v), want read-only", cp, fi.Mode(), err)
			}
			if fi, err := os.Stat(filepath.Dir(cp)); err != nil || fi.Mode().Perm()&0o222 != 0 {
				t.Errorf("copy's folder %s: %v (%v), want read-only", filepath.Dir(cp), fi.Mode(), err)
			}
			rewriteAsNeighbour(t, cp, "#!/bin/sh\ntouch "+marker+"\necho evil-words\n", replace)
			got := say()
			if strings.Contains(got, "evil-words") || !strings.Contains(got, "say.sh was rewritten") {
				t.Errorf("say after its copy was rewritten: %s, want refused, naming say.sh", got)
			}
			if strings.Contains(got, state) {
				t.Errorf("the caller's error names the host's state folder: %s", got)
			}
			if _, err := os.Stat(marker); err == nil {
				t.Errorf("the rewritten copy ran")
			}
			testkit.Eventually(t, 10*time.Second, "the refusal logged naming "+cp, func() bool {
				return strings.Contains(hp.logs.String(), cp+" was rewritten after the host made and checked it")
			})
		})
	}
}

// TestLockedRefusesARewrittenBinaryCopy: two plugins of one binary share
// its copy STATE/host-…/bin/SHA256. A neighbour sharing the host's user
// renames another program over that copy while one of them runs; when
// the other restarts, its start is refused naming the copy, and the
// program put there never runs (issue 43, finding 6).
func TestLockedRefusesARewrittenBinaryCopy(t *testing.T) {
	dir, state := t.TempDir(), t.TempDir()
	marker := filepath.Join(t.TempDir(), "evil-ran")
	calc := testkit.InstallPlugin(t, dir, "calc", "./plugins/calculator")
	testkit.CopyFile(t, calc, filepath.Join(dir, "opentool-plugin-calc2"), 0o755)
	lockCmd(t, "--dir", dir)
	hp := startHostProc(t, dir, "--locked", "--state-dir", state, "--prefix-collisions")
	pids := pluginPIDs(t, hp.url)
	exe, err := os.Readlink(filepath.Join("/proc", strconv.Itoa(pids["calc2"]), "exe"))
	if err != nil || !strings.HasPrefix(exe, state) {
		t.Fatalf("calc2 runs %q (%v), want its copy under %s", exe, err, state)
	}
	if fi, err := os.Stat(exe); err != nil || fi.Mode().Perm()&0o222 != 0 {
		t.Errorf("copy %s: %v (%v), want read-only", exe, fi.Mode(), err)
	}
	rewriteAsNeighbour(t, exe, "#!/bin/sh\ntouch "+marker+"\nsleep 60\n", true)
	if err := syscall.Kill(pids["calc2"], syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	testkit.Eventually(t, 30*time.Second, "calc2's restart refused naming "+exe, func() bool {
		return strings.Contains(healthOf(t, hp.url)["calc2"].LastError, exe+" was rewritten after the host made and checked it")
	})
	if _, err := os.Stat(marker); err == nil {
		t.Errorf("the program renamed over the copy ran")
	}
	if _, m := rpc(t, hp.url, `{"jsonrpc":"2.0","method":"add","params":{"a":2,"b":3},"id":1}`); m["result"] == nil {
		t.Errorf("add on calc, still running its own process: %v", m)
	}
}
