package sandbox

import (
	"fmt"

	seccomp "github.com/elastic/go-seccomp-bpf"
	"golang.org/x/sys/unix"
)

// The network denial of DenyNetwork beyond what Landlock holds. Landlock
// restricts TCP bind and connect only: UDP, raw sockets, MPTCP (protocol
// 262, which Go's net.Listen uses by default on kernels that have it),
// SCTP and packet sockets stay open. A seccomp filter (elastic's
// go-seccomp-bpf, installed after no_new_privs, inherited by everything
// the plugin starts, never lifted) therefore refuses, with EACCES:
//
//   - socket(2) of any family but AF_UNIX, or with ConnectTCP ports
//     (which Landlock then holds port by port), of any family but
//     AF_UNIX, AF_INET and AF_INET6, and for AF_INET/AF_INET6 of any type
//     but SOCK_STREAM and any protocol but 0 and IPPROTO_TCP;
//   - io_uring_setup(2), whose IORING_OP_SOCKET would make sockets
//     around socket(2).
//
// socketpair(2) needs no rule: only AF_UNIX pairs exist.
func netFilter(s Spec) seccomp.Filter {
	deny := seccomp.ActionErrno | seccomp.Action(unix.EACCES)
	sock := func(conds ...seccomp.Condition) seccomp.NameWithConditions {
		return seccomp.NameWithConditions{Name: "socket", Conditions: conds}
	}
	arg := func(n uint32, op seccomp.Operation, v uint64) seccomp.Condition {
		return seccomp.Condition{Argument: n, Operation: op, Value: v}
	}
	var rules []seccomp.NameWithConditions
	if len(s.ConnectTCP) == 0 {
		rules = append(rules, sock(arg(0, seccomp.NotEqual, unix.AF_UNIX)))
	} else {
		rules = append(rules,
			sock(arg(0, seccomp.NotEqual, unix.AF_UNIX), arg(0, seccomp.NotEqual, unix.AF_INET), arg(0, seccomp.NotEqual, unix.AF_INET6)))
		for _, fam := range []uint64{unix.AF_INET, unix.AF_INET6} {
			rules = append(rules,
				// The low nibble of the type is the type; SOCK_STREAM (1)
				// is the only one without bits 1..3.
				sock(arg(0, seccomp.Equal, fam), arg(1, seccomp.BitsSet, 0xe)),
				sock(arg(0, seccomp.Equal, fam), arg(2, seccomp.NotEqual, 0), arg(2, seccomp.NotEqual, unix.IPPROTO_TCP)))
		}
	}
	return seccomp.Filter{
		NoNewPrivs: true,
		Flag:       seccomp.FilterFlagTSync,
		Policy: seccomp.Policy{
			DefaultAction: seccomp.ActionAllow,
			Syscalls: []seccomp.SyscallGroup{
				{Action: deny, NamesWithCondtions: rules},
				{Action: deny, Names: []string{"io_uring_setup"}},
			},
		},
	}
}

// denyNetwork installs netFilter(s). Errors wrap ErrNotApplied.
func denyNetwork(s Spec) error {
	if err := seccomp.LoadFilter(netFilter(s)); err != nil {
		return fmt.Errorf("%w: seccomp network filter: %v", ErrNotApplied, err)
	}
	return nil
}
