//go:build linux

package memtrim

import (
	"errors"
	"fmt"
	"os"

	"golang.org/x/sys/unix"
)

// Program asks the kernel to reclaim the resident pages of this
// process's program file (its read-only mappings: code and read-only
// data) with madvise MADV_PAGEOUT (Linux 5.4 and later): pages no other
// process maps leave the RSS at once, and those serving needs are read
// again, each at its first use after the call (a page fault; from the
// disk when the page cache dropped it). Call it once, when the start is
// over. It returns the bytes of the mappings advised. Errors: the
// program or /proc/self/maps cannot be read; the kernel refused the
// advice (EINVAL before 5.4), joined for each mapping.
func Program() (int64, error) {
	exe, err := os.Executable()
	if err != nil {
		return 0, fmt.Errorf("memtrim: %w", err)
	}
	f, err := os.Open("/proc/self/maps")
	if err != nil {
		return 0, fmt.Errorf("memtrim: %w", err)
	}
	ms := programMappings(f, exe)
	_ = f.Close()
	if len(ms) == 0 {
		return 0, fmt.Errorf("memtrim: no read-only mapping of %s in /proc/self/maps", exe)
	}
	var n int64
	var errs []error
	for _, m := range ms {
		// The addresses are the mapping's own (page-aligned, from the
		// kernel); madvise reads no memory there.
		if _, _, e := unix.Syscall(unix.SYS_MADVISE, m.start, m.end-m.start, unix.MADV_PAGEOUT); e != 0 {
			err := error(e)
			errs = append(errs, fmt.Errorf("memtrim: madvise MADV_PAGEOUT %#x-%#x: %w", m.start, m.end, err))
			continue
		}
		n += int64(m.end - m.start)
	}
	return n, errors.Join(errs...)
}
