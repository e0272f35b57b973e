package harness

import (
	"bytes"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// ProcStats are a process's resource readings from /proc (Linux). A field
// that could not be read is -1.
type ProcStats struct {
	// RSSKiB is VmRSS from /proc/PID/status, in KiB.
	RSSKiB int64
	// HWMKiB is VmHWM (peak RSS), in KiB.
	HWMKiB int64
	// Threads is the number of OS threads.
	Threads int
	// FDs is the number of open file descriptors (/proc/PID/fd).
	FDs int
	// Goroutines is the host's goroutine count where it can be read (an
	// in-process host), else -1.
	Goroutines int
}

// ReadProcStats reads pid's RSS, threads and fds from /proc.
func ReadProcStats(pid int) ProcStats {
	s := ProcStats{RSSKiB: -1, HWMKiB: -1, Threads: -1, FDs: -1, Goroutines: -1}
	if b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/status"); err == nil {
		for _, line := range strings.Split(string(b), "\n") {
			k, v, ok := strings.Cut(line, ":")
			if !ok {
				continue
			}
			f := strings.Fields(v)
			if len(f) == 0 {
				continue
			}
			n, err := strconv.ParseInt(f[0], 10, 64)
			if err != nil {
				continue
			}
			switch k {
			case "VmRSS":
				s.RSSKiB = n
			case "VmHWM":
				s.HWMKiB = n
			case "Threads":
				s.Threads = int(n)
			}
		}
	}
	if ents, err := os.ReadDir("/proc/" + strconv.Itoa(pid) + "/fd"); err == nil {
		s.FDs = len(ents)
	}
	return s
}

// ProcState returns the state letter of pid from /proc/PID/stat ('R',
// 'S', 'Z' ...) and its parent pid, or 0 when pid does not exist.
func ProcState(pid int) (state byte, ppid int) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0, 0
	}
	// pid (comm) state ppid ...; comm may hold spaces and parens.
	i := bytes.LastIndexByte(b, ')')
	if i < 0 || i+2 >= len(b) {
		return 0, 0
	}
	f := strings.Fields(string(b[i+2:]))
	if len(f) < 2 {
		return 0, 0
	}
	ppid, _ = strconv.Atoi(f[1])
	return f[0][0], ppid
}

// Alive reports whether pid exists and is not a zombie.
func Alive(pid int) bool {
	if pid <= 0 || syscall.Kill(pid, 0) != nil {
		return false
	}
	st, _ := ProcState(pid)
	return st != 0 && st != 'Z'
}

// ProcsUnder lists the processes whose executable lies under dir (plugin
// processes run copies of their binaries from the host's state folder),
// and the zombie children of parent (exited plugins nobody reaped; 0 to
// skip).
func ProcsUnder(dir string, parent int) []int {
	dir, _ = filepath.Abs(dir)
	if real, err := filepath.EvalSymlinks(dir); err == nil {
		dir = real
	}
	ents, err := os.ReadDir("/proc")
	if err != nil {
		return nil
	}
	var out []int
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == os.Getpid() {
			continue
		}
		exe, err := os.Readlink("/proc/" + e.Name() + "/exe")
		if err == nil && strings.HasPrefix(exe, dir+string(filepath.Separator)) {
			out = append(out, pid)
			continue
		}
		if parent > 0 {
			if st, pp := ProcState(pid); st == 'Z' && pp == parent {
				out = append(out, pid)
			}
		}
	}
	return out
}

// CPUTime returns the user+system CPU time pid has used, from
// /proc/PID/stat (clock ticks of 10 ms), or 0 when it cannot be read.
func CPUTime(pid int) time.Duration {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0
	}
	i := bytes.LastIndexByte(b, ')')
	if i < 0 || i+2 >= len(b) {
		return 0
	}
	f := strings.Fields(string(b[i+2:]))
	if len(f) < 13 {
		return 0
	}
	// After "pid (comm)": state(0) ppid pgrp session tty tpgid flags minflt
	// cminflt majflt cmajflt utime(11) stime(12).
	ut, _ := strconv.ParseInt(f[11], 10, 64)
	st, _ := strconv.ParseInt(f[12], 10, 64)
	return time.Duration(ut+st) * (time.Second / clockTicks)
}

// clockTicks is USER_HZ, 100 on every Linux platform Go supports.
const clockTicks = 100

// SelfCPUTime returns the user+system CPU time of this process
// (getrusage, µs resolution).
func SelfCPUTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
