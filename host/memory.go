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
// each result of at least trimThreshold bytes (re)arms one timer, and
// when no large result came for trimDelay the host's free memory is given
// back (debug.FreeOSMemory). Small results never arm it, so the common
// call path pays nothing.
//
// Memory belongs to the process, so there is one trimmer, memTrim.
type trimmer struct {
	mu    sync.Mutex
	timer *time.Timer
}

const (
	// trimThreshold is the smallest result that arms the trimmer (1 MiB).
	trimThreshold = 1 << 20
	// trimDelay is how long after the last large result memory is
	// returned.
	trimDelay = time.Second
)

// note records a result of n bytes.
func (t *trimmer) note(n int) {
	if n < trimThreshold {
		return
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.timer == nil {
		t.timer = time.AfterFunc(trimDelay, debug.FreeOSMemory)
		return
	}
	t.timer.Reset(trimDelay)
}

// memTrim is the process's trimmer.
var memTrim trimmer
