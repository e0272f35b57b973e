package host

import (
	"runtime/debug"
	"sync"
	"time"
)

// Large results (up to Config.MaxResultBytes each) pass through the host's
// heap: a burst of them grows it by their total, and Go gives that memory
// back to the OS only slowly (a forced collection every 2 minutes, then
// the background scavenger). trimmer returns it soon after the burst:
// each result of at least trimThreshold bytes (re)arms one timer; when no
// large result came for trimDelays[0] the host's free memory is given
// back (debug.FreeOSMemory), and once more trimDelays[1] later for the
// responses that were still being written the first time. Small results
// never arm it, so the common call path pays nothing.
//
// Memory belongs to the process, so there is one trimmer, memTrim.
type trimmer struct {
	mu    sync.Mutex
	timer *time.Timer
	pass  int // the next pass: an index into trimDelays
}

const (
	// trimThreshold is the smallest result that arms the trimmer (1 MiB).
	trimThreshold = 1 << 20
)

// trimDelays are the waits before the first and the second pass.
var trimDelays = [2]time.Duration{time.Second, 5 * time.Second}

// note records a result of n bytes.
func (t *trimmer) note(n int) {
	if n < trimThreshold {
		return
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	t.pass = 0
	if t.timer == nil {
		t.timer = time.AfterFunc(trimDelays[0], t.trim)
		return
	}
	t.timer.Reset(trimDelays[0])
}

// trim gives free memory back and arms the second pass after the first.
func (t *trimmer) trim() {
	debug.FreeOSMemory()
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.pass++; t.pass < len(trimDelays) {
		t.timer.Reset(trimDelays[t.pass])
	}
}

// memTrim is the process's trimmer.
var memTrim trimmer
