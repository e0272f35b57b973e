// Package testkit builds real plugin binaries for tests and starts real
// hosts on loopback. Only tests import it.
package testkit

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/opentool-host/opentool-host/host/discover"
	"github.com/opentool-host/opentool-host/testkit/base"
)

var (
	buildDirOnce sync.Once
	buildDir     string
	buildDirErr  error
)

// RepoRoot returns the repository root (the folder holding go.mod).
func RepoRoot(t testing.TB) string { return base.RepoRoot() }

// Build builds the main package pkg (a path relative to the repository
// root, e.g. "./plugins/mock") once per test binary (base.Build) and
// returns the path of the binary.
func Build(t testing.TB, pkg string) string {
	t.Helper()
	buildDirOnce.Do(func() { buildDir, buildDirErr = newBuildDir() })
	if buildDirErr != nil {
		t.Fatal(buildDirErr)
	}
	bin, err := base.Build(pkg, buildDir)
	if err != nil {
		t.Fatal(err)
	}
	return bin
}

// buildDirPrefix names the folder of one test binary's plugin builds in
// the temporary folder: PREFIX<pid>-<random>.
const buildDirPrefix = "opentool-test-bin-"

// newBuildDir makes this test binary's build folder. A test binary cannot
// remove its own as it exits (only a TestMain could, and every package
// would need one), so each removes, as it makes its own, those of test
// binaries that have exited (discover.SweepDeadDirs): at most one folder
// per running test binary stays (each some hundred MB).
func newBuildDir() (string, error) {
	discover.SweepDeadDirs(os.TempDir(), buildDirPrefix, hclog.NewNullLogger())
	return os.MkdirTemp("", fmt.Sprintf("%s%d-", buildDirPrefix, os.Getpid()))
}

// InstallPlugin copies the binary of pkg into dir as opentool-plugin-NAME
// (mode 0755) and returns its path. The copy is written to a temp name and
// renamed into place, as a careful deploy would.
func InstallPlugin(t testing.TB, dir, name, pkg string) string {
	t.Helper()
	dst := filepath.Join(dir, "opentool-plugin-"+name)
	CopyFile(t, Build(t, pkg), dst, 0o755)
	return dst
}

// CopyFile copies src to dst through a temp file and a rename.
func CopyFile(t testing.TB, src, dst string, mode os.FileMode) {
	t.Helper()
	in, err := os.Open(src)
	if err != nil {
		t.Fatal(err)
	}
	defer in.Close()
	tmp := filepath.Join(filepath.Dir(dst), "."+filepath.Base(dst)+".tmp")
	out, err := os.OpenFile(tmp, os.O_CREATE|os.O_TRUNC|os.O_WRONLY, mode)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.Copy(out, in); err != nil {
		t.Fatal(err)
	}
	if err := out.Close(); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(tmp, mode); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, dst); err != nil {
		t.Fatal(err)
	}
}

// Logger returns an hclog logger that writes to t.Log at the level given
// by OPENTOOL_TEST_LOG (default "warn").
func Logger(t testing.TB) hclog.Logger {
	lvl := hclog.LevelFromString(os.Getenv("OPENTOOL_TEST_LOG"))
	if lvl == hclog.NoLevel {
		lvl = hclog.Warn
	}
	return hclog.New(&hclog.LoggerOptions{Name: "test", Level: lvl, Output: &tWriter{t: t}, Color: hclog.ColorOff})
}

type tWriter struct {
	t  testing.TB
	mu sync.Mutex
}

// Write implements io.Writer by logging p to the test.
func (w *tWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	defer func() { _ = recover() }() // logging after the test ended
	w.t.Log(strings.TrimRight(string(p), "\n"))
	return len(p), nil
}

// FreeAddr returns a free 127.0.0.1:PORT.
func FreeAddr(t testing.TB) string {
	t.Helper()
	addr, err := base.FreeAddr()
	if err != nil {
		t.Fatal(err)
	}
	return addr
}

// Serve serves h on a free loopback port until the test ends and returns
// the base URL "http://127.0.0.1:PORT".
func Serve(t testing.TB, h http.Handler) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 5 * time.Second}
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = srv.Shutdown(ctx)
	})
	return "http://" + ln.Addr().String()
}

// Eventually polls cond every 10 ms (base.Poll) until it is true or
// timeout passes, then fails the test with msg.
func Eventually(t testing.TB, timeout time.Duration, msg string, cond func() bool) {
	t.Helper()
	if _, err := base.Poll(timeout, 10*time.Millisecond, cond); err != nil {
		t.Fatalf("timed out after %v: %s", timeout, msg)
	}
}

// StartPiped starts cmd with pipes to its stdin and from its stdout and
// returns them; it fails the test when a pipe cannot be made or the
// command cannot start. The caller waits for cmd (and closes stdin).
func StartPiped(t testing.TB, cmd *exec.Cmd) (stdin io.WriteCloser, stdout io.ReadCloser) {
	t.Helper()
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err = cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	return stdin, stdout
}
