// Package base is what the test kit (testkit) and the bench harness
// (bench/harness) share, the standard library only: the repository root,
// main packages built once per process, a free loopback address, and
// polling. Only testkit, bench and their commands and tests import it.
package base

import (
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"time"
)

// RepoRoot returns the repository root (the folder holding go.mod).
func RepoRoot() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Clean(filepath.Join(filepath.Dir(file), "..", ".."))
}

var (
	buildMu    sync.Mutex
	buildCache = map[string]string{}
)

// HostPkg is the host's main package. Build builds it as make host does:
// into a folder of its own as opentool-host, with the small keeper
// program (process/keeper's keeper.Program, keeperPkg) beside it, which the host then runs
// as its keeper, and the code runner (codeRunnerPkg) that --code-mode
// runs from beside it.
const HostPkg = "./cmd/opentool-host"

// keeperPkg is the main package of the small keeper program.
const keeperPkg = "./cmd/opentool-host-keeper"

// codeRunnerPkg is the main package of the code runner (--code-mode).
const codeRunnerPkg = "./cmd/opentool-host-coderunner"

// Build builds main package pkg (relative to the repository root, e.g.
// "./testkit/plugins/echo") into dir, once per process, and returns the
// binary's path (HostPkg: with its keeper and code runner beside it).
func Build(pkg, dir string) (string, error) {
	buildMu.Lock()
	defer buildMu.Unlock()
	if bin, ok := buildCache[pkg]; ok {
		return bin, nil
	}
	bin := filepath.Join(dir, strings.NewReplacer("/", "_", ".", "_").Replace(pkg))
	cmd := exec.Command("go", "build", "-o", bin, pkg)
	if pkg == HostPkg {
		if err := os.MkdirAll(bin, 0o755); err != nil {
			return "", err
		}
		cmd = exec.Command("go", "build", "-o", bin+string(filepath.Separator), pkg, keeperPkg, codeRunnerPkg)
		bin = filepath.Join(bin, "opentool-host")
	}
	cmd.Dir = RepoRoot()
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("go build %s: %v\n%s", pkg, err, out)
	}
	buildCache[pkg] = bin
	return bin, nil
}

// FreeAddr returns a free "127.0.0.1:PORT".
func FreeAddr() (string, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	defer ln.Close()
	return ln.Addr().String(), nil
}

// Poll calls cond every interval until it returns true or timeout
// passes; it returns the time waited, or ErrTimeout.
func Poll(timeout, interval time.Duration, cond func() bool) (time.Duration, error) {
	start := time.Now()
	for {
		if cond() {
			return time.Since(start), nil
		}
		if time.Since(start) > timeout {
			return time.Since(start), ErrTimeout
		}
		time.Sleep(interval)
	}
}

// ErrTimeout is returned by Poll when its condition never held.
var ErrTimeout = errors.New("timed out")
