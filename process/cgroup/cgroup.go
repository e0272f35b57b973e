// Package cgroup keeps each plugin's process tree in a cgroup v2 of its
// own, so that the whole tree is killed at once (cgroup.kill), descendants
// that left the process group with setsid included. The host makes one
// folder "opentool-host-PID" under its own cgroup and one child per plugin
// process; a plugin is cloned straight into its child (CLONE_INTO_CGROUP),
// so nothing of it ever runs outside. Where the host cannot (no cgroup2
// mount, no permission to make folders, a kernel before 5.14 without
// cgroup.kill), New returns nil and plugins run as before (process groups
// only).
//
// Only cgroup.kill and cgroup.procs are used: no controller has to be
// enabled, so this works under systemd (Delegate=yes), in containers that
// mount cgroup2 writable, and on v1/v2 hybrids.
package cgroup

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"time"
)

// Prefix names a host's folder: Prefix + the host's pid + "-" + a number
// (several hosts may run in one process, as in tests).
const Prefix = "opentool-host-"

// roots numbers the Roots of this process.
var roots atomic.Int64

// Root is the host's cgroup folder.
type Root struct {
	dir string
	seq atomic.Int64
}

// Group is one plugin process's cgroup.
type Group struct {
	dir string
	fd  *os.File
}

// New makes the host's folder under its own cgroup and removes the
// folders of hosts that are dead (their plugins killed). It returns nil
// when cgroups cannot be used here, with the reason.
func New() (*Root, error) {
	mount, err := mountPoint()
	if err != nil {
		return nil, err
	}
	own, err := ownPath()
	if err != nil {
		return nil, err
	}
	parent := filepath.Join(mount, own)
	if _, err := os.Stat(filepath.Join(parent, "cgroup.kill")); err != nil && own != "/" {
		return nil, fmt.Errorf("no cgroup.kill in %s (kernel before 5.14?)", parent)
	}
	sweep(parent)
	dir := filepath.Join(parent, fmt.Sprintf("%s%d-%d", Prefix, os.Getpid(), roots.Add(1)))
	if err := os.Mkdir(dir, 0o755); err != nil {
		return nil, fmt.Errorf("make %s: %w", dir, err)
	}
	return &Root{dir: dir}, nil
}

// Dir is the host's folder.
func (r *Root) Dir() string { return r.dir }

// Child makes a cgroup for one process of plugin name and returns it with
// its folder open (FD, for SysProcAttr.CgroupFD).
func (r *Root) Child(name string) (*Group, error) {
	dir := filepath.Join(r.dir, fmt.Sprintf("%s-%d", name, r.seq.Add(1)))
	if err := os.Mkdir(dir, 0o755); err != nil {
		return nil, err
	}
	f, err := os.Open(dir)
	if err != nil {
		_ = os.Remove(dir)
		return nil, err
	}
	return &Group{dir: dir, fd: f}, nil
}

// Close kills what is left in every child and removes the host's folder.
func (r *Root) Close() error {
	return removeTree(r.dir)
}

// FD is the open folder, for syscall.SysProcAttr.CgroupFD.
func (g *Group) FD() int { return int(g.fd.Fd()) }

// Kill kills every process of the group at once (cgroup.kill: SIGKILL,
// setsid descendants included). Errors are ignored: an empty or removed
// group has nothing to kill.
func (g *Group) Kill() {
	_ = os.WriteFile(filepath.Join(g.dir, "cgroup.kill"), []byte("1"), 0)
}

// Remove kills the group and removes its folder once it is empty (the
// kernel needs a moment to reap), waiting at most 1 s.
func (g *Group) Remove() {
	_ = g.fd.Close()
	_ = removeGroup(g.dir)
}

// removeGroup kills dir's processes and removes it, retrying while the
// kernel still counts them.
func removeGroup(dir string) error {
	_ = os.WriteFile(filepath.Join(dir, "cgroup.kill"), []byte("1"), 0)
	var err error
	for i := 0; i < 100; i++ {
		if err = syscall.Rmdir(dir); err == nil || errors.Is(err, syscall.ENOENT) {
			return nil
		}
		time.Sleep(10 * time.Millisecond)
	}
	return err
}

// removeTree removes dir's children and then dir.
func removeTree(dir string) error {
	entries, _ := os.ReadDir(dir)
	for _, e := range entries {
		if e.IsDir() {
			_ = removeGroup(filepath.Join(dir, e.Name()))
		}
	}
	return removeGroup(dir)
}

// sweep removes the folders of dead hosts under parent, killing what they
// still hold (a plugin's descendant that outlived a SIGKILLed host).
func sweep(parent string) {
	entries, _ := os.ReadDir(parent)
	for _, e := range entries {
		rest, ok := strings.CutPrefix(e.Name(), Prefix)
		if !ok || !e.IsDir() {
			continue
		}
		pid, _, _ := strings.Cut(rest, "-")
		if n, err := strconv.Atoi(pid); err == nil && n != os.Getpid() && syscall.Kill(n, 0) != nil {
			_ = removeTree(filepath.Join(parent, e.Name()))
		}
	}
}

// mountPoint returns where cgroup2 is mounted (/sys/fs/cgroup on pure v2,
// /sys/fs/cgroup/unified on hybrids).
func mountPoint() (string, error) {
	f, err := os.Open("/proc/self/mountinfo")
	if err != nil {
		return "", err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		for i, x := range fields {
			if x == "-" && i+1 < len(fields) && fields[i+1] == "cgroup2" && len(fields) > 4 {
				return fields[4], nil
			}
		}
	}
	return "", errors.New("no cgroup2 mount")
}

// ownPath returns this process's cgroup v2 path ("0::/PATH").
func ownPath() (string, error) {
	b, err := os.ReadFile("/proc/self/cgroup")
	if err != nil {
		return "", err
	}
	for _, line := range strings.Split(string(b), "\n") {
		if p, ok := strings.CutPrefix(line, "0::"); ok {
			return p, nil
		}
	}
	return "", errors.New("no cgroup v2 entry in /proc/self/cgroup")
}

// KillOwn kills the calling process's cgroup when it is one a host made
// for a plugin (its parent folder is named Prefix+PID): the plugin and
// every descendant. It reports whether it did; a plugin SDK calls it when
// its host died. A process outside such a cgroup is never touched.
func KillOwn() bool {
	mount, err := mountPoint()
	if err != nil {
		return false
	}
	own, err := ownPath()
	if err != nil || !strings.HasPrefix(filepath.Base(filepath.Dir(own)), Prefix) {
		return false
	}
	return os.WriteFile(filepath.Join(mount, own, "cgroup.kill"), []byte("1"), 0) == nil
}

// cpuPeriodUS is the period of cpu.max, in µs (the kernel's default).
const cpuPeriodUS = 100000

// EnableControllers asks for the cpu and pids controllers in the host's
// folder (so that its children get cpu.max and pids.max): in the host's
// own cgroup's cgroup.subtree_control, then in the folder's. Either write
// may be refused (a parent that does not delegate them, or processes in
// the host's own cgroup: cgroup v2's no-internal-process rule); SetLimits
// then reports which limit cannot be set.
func (r *Root) EnableControllers() {
	for _, dir := range []string{filepath.Dir(r.dir), r.dir} {
		for _, c := range []string{"cpu", "pids"} {
			_ = os.WriteFile(filepath.Join(dir, "cgroup.subtree_control"), []byte("+"+c), 0)
		}
	}
}

// SetLimits sets the group's CPU share (cpu.max, percent of one core; 0:
// none) and process cap (pids.max; 0: none) before anything runs in it.
// Errors: the controller's file is missing (the controller is not
// available to the host's cgroups), or the kernel refused the value.
func (g *Group) SetLimits(cpuPercent, processes int) error {
	if cpuPercent > 0 {
		quota := int64(cpuPercent) * cpuPeriodUS / 100
		if err := g.write("cpu.max", fmt.Sprintf("%d %d", quota, cpuPeriodUS)); err != nil {
			return fmt.Errorf("cpu_percent %d: %w", cpuPercent, err)
		}
	}
	if processes > 0 {
		if err := g.write("pids.max", strconv.Itoa(processes)); err != nil {
			return fmt.Errorf("processes %d: %w", processes, err)
		}
	}
	return nil
}

// write writes value to the group's control file name, saying when the
// file is missing because its controller is not enabled.
func (g *Group) write(name, value string) error {
	path := filepath.Join(g.dir, name)
	if _, err := os.Stat(path); err != nil {
		return fmt.Errorf("the cgroup controller for %s is not available to the host's cgroups (cgroup v2 with the controller delegated, e.g. systemd Delegate=yes, is needed)", name)
	}
	return os.WriteFile(path, []byte(value), 0)
}

// Stat returns the value of key in the group's file name (e.g. cpu.stat
// usage_usec), for tests and metrics. Errors: the file or key is missing.
func (g *Group) Stat(name, key string) (int64, error) {
	b, err := os.ReadFile(filepath.Join(g.dir, name))
	if err != nil {
		return 0, err
	}
	for _, line := range strings.Split(string(b), "\n") {
		if k, v, ok := strings.Cut(line, " "); ok && k == key {
			return strconv.ParseInt(v, 10, 64)
		}
	}
	return 0, fmt.Errorf("%s: no %s", name, key)
}

// KillTree kills every process in the cgroup folder dir and below
// (cgroup.kill on each) and removes the folders: what a host's keeper
// does once the host is gone (package keeper). Errors: the folder could
// not be removed.
func KillTree(dir string) error {
	_ = os.WriteFile(filepath.Join(dir, "cgroup.kill"), []byte("1"), 0) // the whole tree at once
	return removeTree(dir)
}
