package supervise

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/opentool-host/opentool-host/host/core"
	"github.com/opentool-host/opentool-host/internal/wire"
)

// invoke runs call r on this process: it takes a concurrency slot
// (queueing up to Config.MaxQueue calls), does not send a call whose
// caller is already gone, and sends it (send). errNotSent means the call
// never reached this process, which was stopped or has exited: the caller
// may send it to the plugin's next process. timeout > 0 is the call's
// timeout, not yet applied to ctx (a Direct plugin's unary call,
// Plugin.Invoke's first try): the call then takes a free slot or is not
// sent (errNotSent), never waits.
func (i *instance) invoke(ctx context.Context, r Request, timeout time.Duration) error {
	i.calls.Add(1)
	defer i.calls.Add(-1)
	if i.stopped.Load() || i.hasExited() {
		return errNotSent
	}
	if timeout > 0 {
		select {
		case i.sem <- struct{}{}:
		default:
			return errNotSent // queued, within its timeout
		}
	} else if err := i.acquire(ctx, r); err != nil {
		return err
	}
	defer func() { <-i.sem }()
	if ctx.Err() != nil {
		return r.CtxError(ctx, i.name, " before it was sent")
	}
	return i.send(ctx, r, timeout)
}

// acquire takes a concurrency slot. When none is free the call queues,
// unless Config.MaxQueue calls already wait (busy at once); a queued call
// whose deadline passes is busy too, one whose caller left is canceled.
func (i *instance) acquire(ctx context.Context, r Request) error {
	select {
	case i.sem <- struct{}{}:
		return nil
	default:
	}
	if i.queued.Add(1) > i.queue {
		i.queued.Add(-1)
		return r.Fail(core.KindBusy, i.name, fmt.Sprintf("busy: %d calls in flight and %d queued", cap(i.sem), i.queue), nil)
	}
	defer i.queued.Add(-1)
	select {
	case i.sem <- struct{}{}:
		return nil
	case <-ctx.Done():
		if errors.Is(ctx.Err(), context.DeadlineExceeded) {
			return r.Fail(core.KindBusy, i.name, fmt.Sprintf("busy: no slot of %d freed before the deadline", cap(i.sem)), nil)
		}
		return r.CtxError(ctx, i.name, " while queued")
	case <-i.exited():
		return errNotSent
	}
}

// errNotSent: the instance was stopped or exited before the call was
// sent to it; the caller may safely retry on the plugin's next instance.
var errNotSent = errors.New("instance gone before the call was sent")

// send sends r on one Invoke stream and hands each result to r.emit. The
// stream's own context outlives ctx: when ctx ends (or emit fails, or a
// result is rejected) the guard sends cancel on the stream and gives the
// plugin Config.CancelGrace to end it before it kills the process. The
// guard is armed before the stream is opened, so a connection that hangs
// while opening it is bounded too. A unary call of a declared plugin
// served in the host's process as a Direct (the host's MCP client of a
// declared server, command tools) is a function call on this goroutine
// (sendDirect): no stream, goroutine or channel between the caller and
// the plugin; timeout is then the call's when ctx lacks it (invoke).
func (i *instance) send(ctx context.Context, r Request, timeout time.Duration) error {
	inv := r.Invocation()
	if d := i.direct(); d != nil && !inv.Stream {
		return i.sendDirect(ctx, r, d, timeout)
	}
	// The call's events and its guard are one allocation.
	h := &events{inst: i, ctx: ctx, r: r, g: guard{inst: i, fn: r.Function()}}
	g := &h.g
	stop := context.AfterFunc(ctx, g.cancel)
	defer stop()
	// The stream's context never ends by itself (a Done of nil also
	// spares gRPC a watcher goroutine per stream): it ends when the plugin
	// ends the stream, or the connection breaks (the process exited or
	// the guard killed it).
	inv.Name = strings.TrimPrefix(inv.Name, i.prefix)
	sctx := context.WithoutCancel(ctx)
	h.stream = inv.Stream
	call, err := i.tool.Start(sctx, inv)
	if err != nil {
		killed := !g.end()
		if !killed && (i.stopped.Load() || i.hasExited()) {
			return errNotSent
		}
		return i.endError(ctx, r, err, 0, killed)
	}
	g.attach(call)
	h.call = call
	for {
		ev, err := call.Next()
		if err != nil {
			return h.end(err)
		}
		h.event(ev)
	}
}

// events is what one call in flight has sent: its results go to the
// Request, its messages too until the call was cut short.
type events struct {
	inst   *instance
	ctx    context.Context
	r      Request
	g      guard
	call   *wire.Call
	stream bool
	first  error // why the call was cut short (emit failed, result rejected)
	n      int   // results and items taken
}

// event takes one thing the plugin sent.
func (h *events) event(ev wire.Event) {
	if ev.Message != nil {
		if h.first == nil {
			h.r.Message(h.ctx, h.call, ev.Message)
		}
		return
	}
	item := ev.Data
	if ev.MCP {
		if h.stream {
			h.first = h.r.Fail(core.KindResultRejected, h.inst.name, "the plugin sent an MCP result for a streaming call", nil)
			h.g.cancel()
		}
		h.r.SetMCP(false) // a plugin process's: not looked at
	}
	h.n++
	core.MemTrim.Note(len(item))
	if h.first != nil {
		return // draining after a cancel
	}
	if h.first = h.r.Accept(h.inst.name, item, h.n); h.first == nil {
		h.first = h.r.Emit(item)
	}
	if h.first != nil {
		h.g.cancel()
	}
}

// end is the call's error once the plugin ended it with err (io.EOF for
// a normal end): why it was cut short, else endError's.
func (h *events) end(err error) error {
	killed := !h.g.end()
	if h.first != nil {
		return h.first
	}
	return h.inst.endError(h.ctx, h.r, err, h.n, killed)
}

// endError maps how a stream ended to the call's error (nil for success):
// io.EOF is success when a unary call got its result; the tool's own
// error keeps its code; a stream cut by the caller's context, an exit, a
// result over the size cap or a lost connection each get their Kind.
func (i *instance) endError(ctx context.Context, r Request, err error, n int, killed bool) error {
	if errors.Is(err, io.EOF) {
		if n == 0 && !r.Invocation().Stream {
			if ctx.Err() != nil {
				return r.CtxError(ctx, i.name, "")
			}
			return r.Fail(core.KindResultRejected, i.name, "the plugin ended the call without a result", nil)
		}
		return nil
	}
	var te *wire.ToolError
	switch {
	case killed:
		return r.CtxError(ctx, i.name, fmt.Sprintf("; the plugin ignored cancellation for %v and was killed", i.grace))
	case ctx.Err() != nil:
		return r.CtxError(ctx, i.name, "")
	case errors.As(err, &te) && te.Login != "":
		return &core.Error{Kind: core.KindNeedsLogin, Function: r.Function(), Plugin: i.name, Message: te.Message, Login: te.Login}
	case te != nil && !te.Exited:
		return &core.Error{Kind: core.KindTool, Function: r.Function(), Plugin: i.name, Code: te.Code, Message: te.Message}
	case te != nil && te.Status != "": // a program of this call alone exited; the plugin runs on
		return &core.Error{Kind: core.KindExited, Function: r.Function(), Plugin: i.name, Status: te.Status, Message: te.Message, Err: err}
	case errors.Is(err, wire.ErrResultTooLarge):
		return r.Fail(core.KindResultRejected, i.name, fmt.Sprintf("the plugin's result is larger than the limit of %d bytes", i.maxResult), err)
	case te != nil || i.exitedSoon(): // te: a declared plugin's program exited (ToolError.Exited)
		if te != nil {
			i.exitedSoon() // its Run ends right after the program, with the status
		}
		return &core.Error{Kind: core.KindExited, Function: r.Function(), Plugin: i.name, Status: i.exitStatus(),
			Message: fmt.Sprintf("the plugin exited during the call (%s); it is being restarted", i.exitStatus()), Err: err}
	}
	return r.Fail(core.KindTransport, i.name, "the connection to the plugin failed", err)
}

// exitedSoon reports whether the process has exited, waiting up to
// exitNoticeWait: a broken connection is seen a little before go-plugin
// reaps the process, and the exit is the better report.
func (i *instance) exitedSoon() bool {
	if i.hasExited() {
		return true
	}
	t := time.NewTimer(exitNoticeWait)
	defer t.Stop()
	select {
	case <-i.exited():
		return true
	case <-t.C:
		return false
	}
}

// exitNoticeWait bounds exitedSoon's wait (only on a broken connection).
const exitNoticeWait = 100 * time.Millisecond

// guard is the cancel grace of one call in flight: cancel sends cancel
// on the call's stream (at once, or as soon as the stream is attached)
// and arms a timer; when the stream has not ended by then the process is
// killed. end reports false when the timer killed it first.
type guard struct {
	inst  *instance
	fn    string
	state atomic.Int32 // guardRunning, guardEnded or guardKilled

	mu       sync.Mutex
	call     *wire.Call // nil until the stream is open
	canceled bool
}

const (
	guardRunning int32 = iota
	guardEnded
	guardKilled
)

// attach hands the guard the open stream, and sends the cancel that
// was asked for while it opened.
func (g *guard) attach(c *wire.Call) {
	g.mu.Lock()
	g.call = c
	canceled := g.canceled
	g.mu.Unlock()
	if canceled {
		_ = c.Cancel() // a broken stream ends the call anyway
	}
}

// cancel asks the plugin to stop the call and arms the kill timer. Safe
// to call many times and from any goroutine; only the first counts.
func (g *guard) cancel() {
	g.mu.Lock()
	if g.canceled || g.state.Load() != guardRunning {
		g.mu.Unlock()
		return
	}
	g.canceled = true
	c := g.call
	g.mu.Unlock()
	// The kill timer is armed first: a plugin that stopped reading can
	// block the cancel's write, never the kill.
	time.AfterFunc(g.inst.grace, g.expire)
	if c != nil {
		_ = c.Cancel()
	}
}

// expire kills the process when the call is still running.
func (g *guard) expire() {
	if g.state.CompareAndSwap(guardRunning, guardKilled) {
		g.inst.killIgnoring(g.fn)
	}
}

// killIgnoring kills the process whose call of fn ignored cancellation
// for the cancel grace.
func (i *instance) killIgnoring(fn string) {
	i.log.Warn("plugin ignored cancellation; killing it", "plugin", i.name, "function", fn, "grace", i.grace)
	i.kill()
}

// end marks the stream ended; false when expire got there first.
func (g *guard) end() bool { return g.state.CompareAndSwap(guardRunning, guardEnded) }
