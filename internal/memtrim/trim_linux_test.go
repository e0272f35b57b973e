//go:build linux

package memtrim

import (
	"errors"
	"os"
	"strconv"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

// rssFileKiB is this process's RssFile (resident pages of mapped files).
func rssFileKiB(t *testing.T) int64 {
	t.Helper()
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		t.Skipf("no /proc/self/status: %v", err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "RssFile:"); ok {
			n, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
			if err != nil {
				t.Fatal(err)
			}
			return n
		}
	}
	t.Skip("no RssFile in /proc/self/status")
	return 0
}

// TestProgramGivesBackPages: after Program the test binary's own
// resident file pages (its start's, mapped by no other process) are
// fewer by at least 1 MiB; what it advised covers the program.
func TestProgramGivesBackPages(t *testing.T) {
	before := rssFileKiB(t)
	n, err := Program()
	if errors.Is(err, unix.EINVAL) {
		t.Skipf("this kernel has no MADV_PAGEOUT (Linux 5.4): %v", err)
	}
	if err != nil {
		t.Fatal(err)
	}
	after := rssFileKiB(t)
	t.Logf("RssFile %d KiB -> %d KiB; %d bytes advised", before, after, n)
	if exe, _ := os.Stat(os.Args[0]); exe != nil && n < exe.Size()/2 {
		t.Errorf("advised %d bytes of a %d-byte program", n, exe.Size())
	}
	if before-after < 1024 {
		t.Errorf("RssFile %d KiB -> %d KiB: less than 1 MiB given back", before, after)
	}
}
