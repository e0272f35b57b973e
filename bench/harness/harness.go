// Package harness holds what the benchmarks, the scale figures and the
// soak share: building and installing plugin binaries, a real host
// process (bin/opentool-host run) or an in-process host, HTTP clients for
// POST /opentool/call (net/http, and a raw keep-alive client that does
// not allocate, to count the host's own allocations), /proc readings
// (RSS, fds, threads, leftover plugin processes) and latency percentiles.
//
// Only the bench package, its commands and tests import it.
package harness

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sort"
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

// Build builds main package pkg (relative to the repository root, e.g.
// "./bench/namedecho") into dir, once per process, and returns the
// binary's path.
func Build(pkg, dir string) (string, error) {
	buildMu.Lock()
	defer buildMu.Unlock()
	if bin, ok := buildCache[pkg]; ok {
		return bin, nil
	}
	bin := filepath.Join(dir, strings.NewReplacer("/", "_", ".", "_").Replace(pkg))
	cmd := exec.Command("go", "build", "-o", bin, pkg)
	cmd.Dir = RepoRoot()
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("go build %s: %v\n%s", pkg, err, out)
	}
	buildCache[pkg] = bin
	return bin, nil
}

// CopyExecutable copies the file src to dst (mode 0755, replacing dst)
// and returns dst. Errors: src cannot be read or dst written.
func CopyExecutable(src, dst string) (string, error) {
	data, err := os.ReadFile(src)
	if err != nil {
		return "", err
	}
	if err := os.WriteFile(dst, data, 0o755); err != nil {
		return "", err
	}
	return dst, os.Chmod(dst, 0o755)
}

// TrailerMark starts the trailer WriteNamedPlugin appends to a namedecho
// binary; the plugin reads its name from it (see ./bench/namedecho).
const TrailerMark = "\n#opentool-bench name="

// FuncName is the function a namedecho plugin named name serves.
func FuncName(name string) string { return "echo_" + name }

// WriteNamedPlugin installs the namedecho binary src into dir as
// opentool-plugin-NAME with a trailer naming it name, generation gen (a
// new gen gives a new sha256, so the host replaces the running process).
// The file is written under a dot name and renamed into place, as a
// careful deploy does. It returns the installed path.
func WriteNamedPlugin(src, dir, name string, gen int) (string, error) {
	data, err := os.ReadFile(src)
	if err != nil {
		return "", err
	}
	data = append(data, fmt.Sprintf("%s%s gen=%d\n", TrailerMark, name, gen)...)
	dst := filepath.Join(dir, "opentool-plugin-"+name)
	tmp := filepath.Join(dir, fmt.Sprintf(".opentool-plugin-%s.%d.tmp", name, gen))
	if err := os.WriteFile(tmp, data, 0o755); err != nil {
		return "", err
	}
	if err := os.Chmod(tmp, 0o755); err != nil {
		return "", err
	}
	if err := os.Rename(tmp, dst); err != nil {
		os.Remove(tmp)
		return "", err
	}
	return dst, nil
}

// Percentile returns the p-th percentile (0 < p ≤ 100) of sorted, nearest
// rank; 0 for an empty slice.
func Percentile(sorted []time.Duration, p float64) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	i := int(float64(len(sorted))*p/100+0.5) - 1
	i = min(max(i, 0), len(sorted)-1)
	return sorted[i]
}

// SortDurations sorts d in place and returns it.
func SortDurations(d []time.Duration) []time.Duration {
	sort.Slice(d, func(i, j int) bool { return d[i] < d[j] })
	return d
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
