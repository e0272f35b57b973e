package launcher_test

import (
	"errors"
	"syscall"
	"testing"

	"github.com/opentool-host/opentool-host/process/launcher"
)

// TestLookupUser: a user name and a uid resolve to uid and primary gid, a
// uid without a passwd entry to itself twice, "" to nil, and anything
// else fails with ErrNoSuchUser.
func TestLookupUser(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want *syscall.Credential
	}{
		{"", nil},
		{"root", &syscall.Credential{Uid: 0, Gid: 0}},
		{"0", &syscall.Credential{Uid: 0, Gid: 0}},
		{"4000000", &syscall.Credential{Uid: 4000000, Gid: 4000000}}, // no passwd entry
	} {
		got, err := launcher.LookupUser(tc.in)
		if err != nil || (got == nil) != (tc.want == nil) || got != nil && (got.Uid != tc.want.Uid || got.Gid != tc.want.Gid) {
			t.Errorf("LookupUser(%q) = %+v, %v; want %+v", tc.in, got, err, tc.want)
		}
	}
	if _, err := launcher.LookupUser("no-such-user-here"); !errors.Is(err, launcher.ErrNoSuchUser) || err.Error() != "no-such-user-here: no such user" {
		t.Errorf("LookupUser(no-such-user-here): %v; want ErrNoSuchUser", err)
	}
}
