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
