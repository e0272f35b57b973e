// Package memtrim gives back to the system the pages of this process's
// own program file that its start read and serving does not need: the
// package inits of every library linked in, and the readahead and
// fault-around pages the kernel mapped with them (on Linux a fault maps
// up to 64 KiB of the file around the page asked for). On the host's
// program, measured under the load of one MCP client, that is about
// 9.5 MiB of its 40 MiB of RSS (docs/performance.md, "Memory").
//
// A leaf package: it imports nothing of this module.
package memtrim

import (
	"bufio"
	"io"
	"strconv"
	"strings"
)

// mapping is one line of /proc/PID/maps: the addresses [start, end),
// whether it is writable, and the file it maps ("" when anonymous).
type mapping struct {
	start, end uintptr
	writable   bool
	path       string
}

// programMappings returns the mappings of maps (the text of
// /proc/self/maps) that map the file exe read-only: the program's code
// and read-only data, which are never dirty and so cost nothing to give
// back but a read when a page is needed again. Lines it cannot parse
// are skipped.
func programMappings(maps io.Reader, exe string) []mapping {
	var out []mapping
	sc := bufio.NewScanner(maps)
	for sc.Scan() {
		m, ok := parseMapping(sc.Text())
		if ok && !m.writable && m.path == exe {
			out = append(out, m)
		}
	}
	return out
}

// parseMapping parses one line of /proc/PID/maps:
// "START-END PERMS OFFSET DEV INODE [PATH]" (addresses in hex). A path
// with spaces is kept whole.
func parseMapping(line string) (mapping, bool) {
	f := strings.Fields(line)
	if len(f) < 5 || len(f[1]) != 4 {
		return mapping{}, false
	}
	lo, hi, ok := strings.Cut(f[0], "-")
	if !ok {
		return mapping{}, false
	}
	start, err1 := strconv.ParseUint(lo, 16, 64)
	end, err2 := strconv.ParseUint(hi, 16, 64)
	if err1 != nil || err2 != nil || end <= start {
		return mapping{}, false
	}
	m := mapping{start: uintptr(start), end: uintptr(end), writable: f[1][1] == 'w'}
	if len(f) >= 6 {
		// The path is what follows the inode, as the kernel wrote it.
		rest := line
		for range 5 {
			rest = strings.TrimLeft(rest, " ")
			rest = rest[strings.IndexByte(rest, ' ')+1:]
		}
		m.path = strings.TrimLeft(rest, " ")
	}
	return m, true
}
