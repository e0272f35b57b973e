package supervise

import (
	"context"
	"errors"
	"testing"
	"time"
)

// TestDirectCallEnds: a directCall ends with its caller's context
// (reaching a context derived from it through its AfterFunc, no watcher
// goroutine), at its own deadline, and at finish; finish says why it had
// ended.
func TestDirectCallEnds(t *testing.T) {
	i := &instance{local: &localPlugin{}, grace: time.Hour}

	parent, cancel := context.WithCancel(context.Background())
	c := i.beginDirect(parent, "f", time.Hour)
	if d, ok := c.Deadline(); !ok || time.Until(d) < 59*time.Minute {
		t.Fatalf("Deadline = %v, %v; want the timeout's", d, ok)
	}
	child, stopChild := context.WithCancel(c)
	defer stopChild()
	if len(c.afters) != 1 {
		t.Fatalf("a context derived from the call registered %d AfterFuncs; want 1 (no goroutine of its own)", len(c.afters))
	}
	cancel()
	<-child.Done()
	if !errors.Is(c.Err(), context.Canceled) || !errors.Is(child.Err(), context.Canceled) {
		t.Fatalf("Err = %v, child %v; want the caller's context.Canceled", c.Err(), child.Err())
	}
	if killed, why := c.finish(); killed || why != endCaller {
		t.Fatalf("finish = %v, %v; want not killed, ended by its caller", killed, why)
	}

	c = i.beginDirect(context.Background(), "f", 10*time.Millisecond)
	<-c.Done()
	if !errors.Is(c.Err(), context.DeadlineExceeded) {
		t.Fatalf("Err = %v at the deadline; want context.DeadlineExceeded", c.Err())
	}
	if killed, why := c.finish(); killed || why != endDeadline {
		t.Fatalf("finish = %v, %v; want not killed, ended at its deadline", killed, why)
	}

	c = i.beginDirect(context.Background(), "f", time.Hour)
	if killed, why := c.finish(); killed || why != running || !errors.Is(c.Err(), context.Canceled) {
		t.Fatalf("finish = %v, %v, Err %v; want a call that ran to its end, its context ended", killed, why, c.Err())
	}
	if i.local.calls.head != nil {
		t.Fatal("finished calls are still registered for stop")
	}
}

// TestDirectCallTimerReused: a call's timer, stopped when the call
// returned before it fired, serves a later call (callTimers) and fires
// that call alone; the call that held it before keeps how it ended.
func TestDirectCallTimerReused(t *testing.T) {
	i := &instance{local: &localPlugin{}, grace: time.Hour}
	seen := map[*callTimer]bool{}
	for range 50 {
		c := i.beginDirect(context.Background(), "f", time.Hour)
		seen[c.timer] = true
		c.finish()
	}
	// The race detector's sync.Pool drops a quarter of what is put back.
	if len(seen) > 25 {
		t.Fatalf("50 calls in a row armed %d timers; want each to reuse the last one's", len(seen))
	}

	var old, c *directCall
	for range 50 { // the pool may drop a timer: try until one is reused
		old = i.beginDirect(context.Background(), "f", time.Hour)
		held := old.timer
		old.finish()
		c = i.beginDirect(context.Background(), "f", 10*time.Millisecond)
		if c.timer == held {
			break
		}
		c.finish()
		c = nil
	}
	if c == nil {
		t.Fatal("a stopped timer never served a later call")
	}
	<-c.Done()
	if !errors.Is(c.Err(), context.DeadlineExceeded) {
		t.Fatalf("Err = %v at the reused timer's firing; want context.DeadlineExceeded", c.Err())
	}
	if killed, why := c.finish(); killed || why != endDeadline {
		t.Fatalf("finish = %v, %v; want not killed, ended at its deadline", killed, why)
	}
	if !errors.Is(old.Err(), context.Canceled) || old.why != endFinished {
		t.Fatalf("the timer's earlier call: Err %v, why %v; want its own end, untouched", old.Err(), old.why)
	}
}
