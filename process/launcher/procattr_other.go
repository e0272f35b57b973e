//go:build !linux

package launcher

import "syscall"

// procAttr is the process's group and credential. There is no
// parent-death signal and no cgroup outside Linux; the Keeper and
// pluginsdk's parent watch cover the first.
func procAttr(s Spec) *syscall.SysProcAttr {
	a := &syscall.SysProcAttr{Setpgid: !s.SharedGroup}
	if s.User != nil {
		a.Credential = &syscall.Credential{Uid: s.User.Uid, Gid: s.User.Gid, NoSetGroups: true}
	}
	return a
}
