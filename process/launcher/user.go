package launcher

import (
	"errors"
	"fmt"
	"os/user"
	"strconv"
	"syscall"
)

// ErrNoSuchUser is LookupUser's error for a name that is neither a user
// nor a uid.
var ErrNoSuchUser = errors.New("no such user")

// LookupUser resolves a user name or a uid (as decimal digits) to the
// uid and primary gid a process runs as (Spec.User); a uid without a
// passwd entry gets the gid of the same number. "" is nil (the caller's
// own user). Errors: "NAME: " wrapping ErrNoSuchUser.
func LookupUser(name string) (*syscall.Credential, error) {
	if name == "" {
		return nil, nil
	}
	u, err := user.Lookup(name)
	if err != nil {
		if u, err = user.LookupId(name); err != nil {
			if n, nerr := strconv.ParseUint(name, 10, 32); nerr == nil {
				return &syscall.Credential{Uid: uint32(n), Gid: uint32(n)}, nil // a uid without a passwd entry
			}
			return nil, fmt.Errorf("%s: %w", name, ErrNoSuchUser)
		}
	}
	uid, _ := strconv.ParseUint(u.Uid, 10, 32)
	gid, _ := strconv.ParseUint(u.Gid, 10, 32)
	return &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}, nil
}
