package launcher

import "syscall"

// procAttr is the process's group, parent-death signal, cgroup and
// credential.
func procAttr(s Spec) *syscall.SysProcAttr {
	sig := s.DeathSignal
	if sig == 0 {
		sig = syscall.SIGKILL
	}
	if s.Outlive {
		sig = 0
	}
	a := &syscall.SysProcAttr{Setpgid: !s.SharedGroup, Pdeathsig: sig}
	if s.User != nil {
		a.Credential = &syscall.Credential{Uid: s.User.Uid, Gid: s.User.Gid, NoSetGroups: true}
	}
	if s.Cgroup != nil {
		a.UseCgroupFD, a.CgroupFD = true, s.Cgroup.FD()
	}
	return a
}
