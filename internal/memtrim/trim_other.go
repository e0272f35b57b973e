//go:build !linux

package memtrim

import "errors"

// Program is Linux only (madvise MADV_PAGEOUT); elsewhere it does
// nothing and returns an error saying so.
func Program() (int64, error) {
	return 0, errors.New("memtrim: not supported on this system")
}
