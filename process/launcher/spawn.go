package launcher

import (
	"os/exec"
	"runtime"
	"sync"
)

// ForkLock keeps forks and open-for-write files apart. A child forked
// while a file is open for writing inherits the descriptor until it
// execs, and exec of that file then fails with ETXTBSY
// (golang/go#22315). Hold ForkLock.RLock while writing a file that will
// be executed (a binary copy); every Start holds the write lock while it
// forks.
var ForkLock sync.RWMutex

type spawnRequest struct {
	cmd  *exec.Cmd
	done chan error
}

var (
	spawnOnce sync.Once
	spawnCh   chan spawnRequest
)

// spawn starts cmd from the dedicated spawner thread. The thread is
// locked and its goroutine never returns, so the thread never exits and
// the parent-death signal of its children fires only when the caller's
// process dies.
func spawn(cmd *exec.Cmd) error {
	spawnOnce.Do(func() {
		spawnCh = make(chan spawnRequest)
		go func() {
			runtime.LockOSThread()
			for req := range spawnCh {
				ForkLock.Lock()
				err := req.cmd.Start()
				ForkLock.Unlock()
				req.done <- err
			}
		}()
	})
	done := make(chan error, 1)
	spawnCh <- spawnRequest{cmd: cmd, done: done}
	return <-done
}
