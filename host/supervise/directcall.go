package supervise

import (
	"context"
	"sync"
	"sync/atomic"
	"time"
)

// directCall is the one context of a unary call of a Direct plugin
// (sendDirect), where a plugin process's call has a timeout, a cancel and
// AfterFuncs: it ends when its caller's context (parent) ends, at its
// own deadline (the call's timeout, when the caller's deadline is not
// earlier), when the plugin is stopped (localPlugin.stopCalls) and when
// the call returns (finish). One timer serves the deadline and then the
// guard: once the caller's context ended or the deadline passed, a call
// still running after the cancel grace kills the plugin (as guard does
// for a plugin process). Its values are its parent's, and so is
// context.Cause of it (nil when its own deadline or the stop ended it
// while its parent runs: Err says why).
type directCall struct {
	parent   context.Context
	inst     *instance
	fn       string
	deadline time.Time   // zero: the parent's alone
	unwatch  func() bool // context.AfterFunc(parent)'s stop; nil when parent never ends

	mu       sync.Mutex
	done     chan struct{} // made by Done, or closedChan when it ended first
	err      error
	why      endReason
	timer    *callTimer // the deadline, then the kill; nil until armed
	killAt   time.Time  // zero until the guard is armed
	killed   bool       // the guard killed the plugin
	finished bool       // finish ran
	afters   []*afterFunc

	prev, next *directCall // the localPlugin's calls in flight
}

// endReason says why a directCall ended.
type endReason uint8

const (
	running     endReason = iota
	endCaller             // the caller's context ended (its err)
	endDeadline           // the call's own deadline passed
	endStopped            // the plugin was stopped
	endFinished           // the call returned
)

// callTimer is the timer of a directCall (its deadline, then its
// guard), reused from call to call (callTimers): its function fires the
// call it serves (c), so that a call arms a timer without making one,
// and its function, each time.
type callTimer struct {
	t *time.Timer
	c atomic.Pointer[directCall] // the call it serves; nil in the pool
}

// callTimers holds the stopped callTimers no call holds. A timer goes back
// only when its Stop reported it stopped before it fired: its function
// never runs again for the call that held it.
var callTimers sync.Pool

// armTimer arms a callTimer, from callTimers or new, to fire c after d
// and returns it. c.mu is held: c.timer is set before the timer can fire
// c.
func armTimer(c *directCall, d time.Duration) *callTimer {
	ct, _ := callTimers.Get().(*callTimer)
	if ct == nil {
		ct = new(callTimer)
		ct.t = time.AfterFunc(time.Hour, ct.fire)
		ct.t.Stop()
	}
	ct.c.Store(c)
	ct.t.Reset(d)
	return ct
}

// fire fires the call the timer serves.
func (ct *callTimer) fire() {
	if c := ct.c.Load(); c != nil {
		c.fire()
	}
}

// release stops the timer; one stopped before it fired goes back to
// callTimers.
func (ct *callTimer) release() {
	if ct.t.Stop() {
		ct.c.Store(nil)
		callTimers.Put(ct)
	}
}

// afterFunc is one function registered by directCall.AfterFunc.
type afterFunc struct{ f func() }

// closedChan is the Done of a directCall that ended before Done was asked.
var closedChan = func() chan struct{} { c := make(chan struct{}); close(c); return c }()

// beginDirect starts the context of a Direct call of function fn made on
// i under parent, with timeout when > 0 (0: parent's deadline alone), and
// registers it with i's plugin for stop.
func (i *instance) beginDirect(parent context.Context, fn string, timeout time.Duration) *directCall {
	c := &directCall{parent: parent, inst: i, fn: fn}
	if timeout > 0 {
		if d, ok := parent.Deadline(); !ok || time.Until(d) > timeout {
			c.deadline = time.Now().Add(timeout)
			c.mu.Lock()
			c.timer = armTimer(c, timeout)
			c.mu.Unlock()
		}
	}
	if parent.Done() != nil {
		c.unwatch = context.AfterFunc(parent, c.callerEnded)
	}
	i.local.calls.add(c)
	return c
}

// Deadline is the earlier of the parent's and the call's own.
func (c *directCall) Deadline() (time.Time, bool) {
	d, ok := c.parent.Deadline()
	if !c.deadline.IsZero() && (!ok || c.deadline.Before(d)) {
		return c.deadline, true
	}
	return d, ok
}

// Done is closed when the call's context ends.
func (c *directCall) Done() <-chan struct{} {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.done == nil {
		c.done = make(chan struct{})
	}
	return c.done
}

// Err is nil while the call's context runs, then context.DeadlineExceeded
// (its deadline), the parent's error (its caller left) or
// context.Canceled (the plugin was stopped, or the call returned).
func (c *directCall) Err() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.err
}

// Value is the parent's value for key.
func (c *directCall) Value(key any) any { return c.parent.Value(key) }

// AfterFunc runs f in its own goroutine once the context ended; stop
// unregisters it, false when it already ran or was stopped. It spares a
// context derived from this one (context.WithCancel) a goroutine of its
// own watching Done.
func (c *directCall) AfterFunc(f func()) (stop func() bool) {
	c.mu.Lock()
	if c.err != nil {
		c.mu.Unlock()
		go f()
		return func() bool { return false }
	}
	a := &afterFunc{f: f}
	c.afters = append(c.afters, a)
	c.mu.Unlock()
	return func() bool {
		c.mu.Lock()
		defer c.mu.Unlock()
		for n, b := range c.afters {
			if b == a {
				c.afters = append(c.afters[:n], c.afters[n+1:]...)
				return true
			}
		}
		return false
	}
}

// endLocked ends the context with err (why) unless it has ended, and
// returns the AfterFuncs to run. c.mu is held.
func (c *directCall) endLocked(err error, why endReason) []*afterFunc {
	if c.err != nil {
		return nil
	}
	c.err, c.why = err, why
	if c.done == nil {
		c.done = closedChan
	} else {
		close(c.done)
	}
	fs := c.afters
	c.afters = nil
	return fs
}

// runAfter starts the AfterFuncs fs.
func runAfter(fs []*afterFunc) {
	for _, a := range fs {
		go a.f()
	}
}

// cancelLocked ends the context with err (why) and arms the guard: the
// caller's context ended or the deadline passed (also after a stop, as a
// plugin process's guard would). c.mu is held.
func (c *directCall) cancelLocked(err error, why endReason) []*afterFunc {
	fs := c.endLocked(err, why)
	if c.killAt.IsZero() && !c.finished {
		grace := c.inst.grace
		c.killAt = time.Now().Add(grace)
		if c.timer == nil {
			c.timer = armTimer(c, grace)
		} else {
			c.timer.t.Reset(grace)
		}
	}
	return fs
}

// callerEnded ends the context with its caller's (context.AfterFunc).
func (c *directCall) callerEnded() {
	c.mu.Lock()
	fs := c.cancelLocked(c.parent.Err(), endCaller)
	c.mu.Unlock()
	runAfter(fs)
}

// fire is the timer: at the deadline the context ends and the guard is
// armed; at the guard's time a call still running kills the plugin.
func (c *directCall) fire() {
	c.mu.Lock()
	if c.finished {
		c.mu.Unlock()
		return
	}
	if c.killAt.IsZero() {
		fs := c.cancelLocked(context.DeadlineExceeded, endDeadline)
		c.mu.Unlock()
		runAfter(fs)
		return
	}
	if time.Now().Before(c.killAt) {
		c.mu.Unlock()
		return // the deadline's firing, late: the guard's comes
	}
	c.killed = true
	c.mu.Unlock()
	c.inst.killIgnoring(c.fn)
}

// stop ends the context because the plugin was stopped.
func (c *directCall) stop() {
	c.mu.Lock()
	fs := c.endLocked(context.Canceled, endStopped)
	c.mu.Unlock()
	runAfter(fs)
}

// finish ends the call once it returned: it reports whether the guard
// killed the plugin first and why the context had ended (running: it had
// not).
func (c *directCall) finish() (killed bool, why endReason) {
	c.mu.Lock()
	c.finished = true
	if c.timer != nil {
		c.timer.release()
	}
	why = c.why
	fs := c.endLocked(context.Canceled, endFinished)
	killed = c.killed
	c.mu.Unlock()
	if c.unwatch != nil {
		c.unwatch()
	}
	c.inst.local.calls.remove(c)
	runAfter(fs)
	return killed, why
}

// directCalls is a localPlugin's Direct calls in flight, ended together
// when the plugin is stopped or killed.
type directCalls struct {
	mu    sync.Mutex
	head  *directCall
	ended bool
}

// add registers c; a call begun after the stop ends at once.
func (s *directCalls) add(c *directCall) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.ended {
		c.stop()
		return
	}
	c.next = s.head
	if s.head != nil {
		s.head.prev = c
	}
	s.head = c
}

// remove forgets c.
func (s *directCalls) remove(c *directCall) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if c.prev != nil {
		c.prev.next = c.next
	} else if s.head == c {
		s.head = c.next
	}
	if c.next != nil {
		c.next.prev = c.prev
	}
	c.prev, c.next = nil, nil
}

// stopCalls ends every call in flight and those begun later.
func (s *directCalls) stopCalls() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.ended = true
	for c := s.head; c != nil; c = c.next {
		c.stop()
	}
}
