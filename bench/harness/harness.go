// Package harness holds what the benchmarks, the scale figures and the
// soak share: installing plugin binaries (built by testkit/base), a real host
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
	"io"
	"os"
	"path/filepath"
	"sort"
	"time"

	"github.com/opentool-host/opentool-host/process/keeper"
	"golang.org/x/sys/unix"
)

// CopyExecutable copies the file src to dst (mode 0755, replacing dst)
// and returns dst. The copy's pages are then written out and dropped from
// the page cache (fsync, POSIX_FADV_DONTNEED), so that a process run
// from it maps the program as read from disk, as a deployed binary's
// first start does: a file just written in one call sits in large
// page-cache folios, each mapped whole at its first touch, which made
// the host's RSS read about 10 MiB larger than from disk. Errors: src
// cannot be read or dst written.
func CopyExecutable(src, dst string) (string, error) {
	in, err := os.Open(src)
	if err != nil {
		return "", err
	}
	defer in.Close()
	out, err := os.OpenFile(dst, os.O_CREATE|os.O_TRUNC|os.O_WRONLY, 0o755)
	if err != nil {
		return "", err
	}
	_, err = io.Copy(out, in)
	if err == nil {
		err = out.Sync()
	}
	if err == nil {
		err = unix.Fadvise(int(out.Fd()), 0, 0, unix.FADV_DONTNEED)
	}
	if err = errors.Join(err, out.Close()); err != nil {
		return "", err
	}
	return dst, os.Chmod(dst, 0o755)
}

// CopyHost copies the host binary hostBin into the folder dir as
// opentool-host (CopyExecutable), with the small keeper program beside
// hostBin (keeper.Program) beside the copy when there is one, and
// returns the copy's path: a private copy that runs the same keeper as
// hostBin. Errors: a file cannot be read or written.
func CopyHost(hostBin, dir string) (string, error) {
	small := filepath.Join(filepath.Dir(hostBin), keeper.Program)
	if _, err := os.Stat(small); err == nil {
		if _, err := CopyExecutable(small, filepath.Join(dir, keeper.Program)); err != nil {
			return "", err
		}
	}
	return CopyExecutable(hostBin, filepath.Join(dir, "opentool-host"))
}

// TrailerMark starts the trailer WriteNamedPlugin appends to a named echo
// binary; the plugin reads its name from it (see ./testkit/plugins/echo).
const TrailerMark = "\n#opentool-bench name="

// FuncName is the function a named echo plugin named name serves.
func FuncName(name string) string { return "echo_" + name }

// WriteNamedPlugin installs the named echo binary src into dir as
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
