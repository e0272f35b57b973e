package harness

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"os"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// Memory of a process tree, read from /proc (Linux): which processes
// descend from a root (ProcTree), each one's proportional set size
// (PSSKiB), and which of them run one given program wherever it was
// copied (Program), so that a host's own processes can be told from the
// MCP servers it runs (TreePSS).

// ProcTree returns root followed by every live process descended from it
// (children found by their parent pid in /proc/PID/stat), breadth first,
// each level in pid order. It returns nil when root does not exist.
func ProcTree(root int) []int {
	if st, _ := ProcState(root); st == 0 {
		return nil
	}
	ents, err := os.ReadDir("/proc")
	if err != nil {
		return []int{root}
	}
	children := map[int][]int{}
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if st, ppid := ProcState(pid); st != 0 && st != 'Z' {
			children[ppid] = append(children[ppid], pid)
		}
	}
	out := []int{root}
	for i := 0; i < len(out); i++ {
		kids := children[out[i]]
		sort.Ints(kids)
		out = append(out, kids...)
	}
	return out
}

// errGone says that a process ended (or became a zombie, which holds no
// memory) while it was being read.
var errGone = errors.New("process gone")

// PSSKiB returns pid's proportional set size in KiB: the "Pss:" line of
// /proc/PID/smaps_rollup (each page shared by k processes counts 1/k).
// Errors: errGone when the process no longer exists or is a zombie; the
// file cannot be read (another user's process, a kernel before 4.14) or
// has no Pss line.
func PSSKiB(pid int) (int64, error) {
	f, err := os.Open("/proc/" + strconv.Itoa(pid) + "/smaps_rollup")
	if err != nil {
		if st, _ := ProcState(pid); st == 0 || st == 'Z' {
			return 0, errGone
		}
		return 0, fmt.Errorf("PSS of process %d: %w", pid, err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		v, ok := strings.CutPrefix(sc.Text(), "Pss:")
		if !ok {
			continue
		}
		fields := strings.Fields(v)
		if len(fields) != 2 || fields[1] != "kB" {
			return 0, fmt.Errorf("PSS of process %d: unexpected line %q", pid, sc.Text())
		}
		return strconv.ParseInt(fields[0], 10, 64)
	}
	if st, _ := ProcState(pid); st == 0 || st == 'Z' {
		return 0, errGone
	}
	if err := sc.Err(); err != nil {
		return 0, fmt.Errorf("PSS of process %d: %w", pid, err)
	}
	return 0, fmt.Errorf("PSS of process %d: no Pss line in smaps_rollup", pid)
}

// fileID is a file's identity: its device and inode.
type fileID struct{ dev, ino uint64 }

// Program recognises the processes that run one executable file, even a
// copy of it under another name (a launcher may run a copy from its state
// folder): a process runs it when its /proc/PID/exe is the same file
// (device and inode) or a file of the same size and SHA-256. What a
// process says of itself (its cmdline, its comm) is not looked at: a
// program may set both. Not safe for concurrent use.
type Program struct {
	path string
	size int64
	sum  [sha256.Size]byte
	seen map[fileID]bool // executables already compared
}

// NewProgram returns the Program of the executable at path. Errors: the
// file cannot be read.
func NewProgram(path string) (*Program, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, err
	}
	p := &Program{path: path, size: fi.Size(), seen: map[fileID]bool{}}
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	h.Sum(p.sum[:0])
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		p.seen[fileID{uint64(st.Dev), st.Ino}] = true
	}
	return p, nil
}

// Runs reports whether pid runs the program. A process whose executable
// cannot be read (gone, another user's) does not.
func (p *Program) Runs(pid int) bool {
	exe := "/proc/" + strconv.Itoa(pid) + "/exe"
	var st syscall.Stat_t
	if err := syscall.Stat(exe, &st); err != nil {
		return false
	}
	id := fileID{uint64(st.Dev), st.Ino}
	if same, ok := p.seen[id]; ok {
		return same
	}
	same := st.Size == p.size && p.sameContent(exe)
	p.seen[id] = same
	return same
}

// sameContent reports whether the file at exe has the program's SHA-256.
func (p *Program) sameContent(exe string) bool {
	f, err := os.Open(exe)
	if err != nil {
		return false
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return false
	}
	return bytes.Equal(h.Sum(nil), p.sum[:])
}

// TreeMemory is the PSS of a process tree split in two: the processes
// that run one program (the MCP servers of a host) and all the others
// (the host, its keeper, adapters, sandbox launchers).
type TreeMemory struct {
	// OwnKiB is the PSS in KiB of the processes of the tree that do not
	// run the program, root included; Own is how many there are.
	OwnKiB int64
	Own    int
	// ProgramKiB is the PSS in KiB of the processes that run the
	// program; Programs is how many there are.
	ProgramKiB int64
	Programs   int
	// OwnRSSKiB and ProgramRSSKiB are the same two sides' resident set
	// sizes (VmRSS), summed over their processes in KiB: a page shared by
	// k processes counts k times, as tools that add up RSS count it.
	OwnRSSKiB, ProgramRSSKiB int64
}

// TreePSS reads the PSS and RSS of root's process tree (ProcTree),
// split by whether each process runs prog. A process that ends while it
// is read is left out. Errors: root does not exist; a live process's PSS cannot
// be read (PSSKiB).
func TreePSS(root int, prog *Program) (TreeMemory, error) {
	var m TreeMemory
	pids := ProcTree(root)
	if len(pids) == 0 {
		return m, fmt.Errorf("process %d does not exist", root)
	}
	for _, pid := range pids {
		kib, err := PSSKiB(pid)
		if errors.Is(err, errGone) {
			continue
		}
		if err != nil {
			return m, err
		}
		rss := max(ReadProcStats(pid).RSSKiB, 0)
		if prog.Runs(pid) {
			m.ProgramKiB += kib
			m.ProgramRSSKiB += rss
			m.Programs++
		} else {
			m.OwnKiB += kib
			m.OwnRSSKiB += rss
			m.Own++
		}
	}
	return m, nil
}

// TreeCPU returns the user+system CPU time used so far by root and the
// live processes descended from it (ProcTree, CPUTime): the CPU of a
// host process and everything it runs.
func TreeCPU(root int) time.Duration {
	var d time.Duration
	for _, pid := range ProcTree(root) {
		d += CPUTime(pid)
	}
	return d
}
