package core

import (
	"runtime/debug"
	"sync"
	"time"
)

// Trimmer gives the heap back to the OS after bursts of large results.
//
// Large results (up to Config.MaxResultBytes each) pass through the host's
// heap: a burst of them grows it by their total, and Go gives that memory
// back to the OS only slowly (a forced collection every 2 minutes, then
// the background scavenger). Trimmer returns it soon after the burst:
// each result of at least trimThreshold bytes (re)arms one timer; when no
// large result came for trimDelays[0] the host's free memory is given
// back (debug.FreeOSMemory), and once more trimDelays[1] later for the
// responses that were still being written the first time. Small results
// never arm it, so the common call path pays nothing.
//
// Memory belongs to the process, so there is one Trimmer, MemTrim.
type Trimmer struct {
	mu    sync.Mutex
	timer *time.Timer
	pass  int // the next pass: an index into trimDelays
}

const (
	// trimThreshold is the smallest result that arms the Trimmer (1 MiB).
	trimThreshold = 1 << 20
)

// trimDelays are the waits before the first and the second pass.
var trimDelays = [2]time.Duration{time.Second, 5 * time.Second}

// Note records a result of n bytes.
func (t *Trimmer) Note(n int) {
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
func (t *Trimmer) trim() {
	debug.FreeOSMemory()
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.pass++; t.pass < len(trimDelays) {
		t.timer.Reset(trimDelays[t.pass])
	}
}

// MemTrim is the process's Trimmer.
var MemTrim Trimmer
