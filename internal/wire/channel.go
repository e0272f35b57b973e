package wire

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"sync"
	"sync/atomic"
	"syscall"
)

// Channel is the host side of a plugin's data channel (frame.go): calls
// multiplexed by id on one unix stream socket, each written by its
// calling goroutine and read by one reader goroutine (readLoop) that
// hands each frame to its call. Safe for concurrent use. Client.Invoke
// uses it once Client.UseChannel was called.
type Channel struct {
	w       frameWriter
	maxRecv int64
	v3      bool // protocol 3: meta, replies, MCP results and messages
	// onViolation is called once, from the reader, when the plugin broke
	// the protocol (the host kills the process).
	onViolation func(error)

	mu    sync.Mutex
	calls map[uint64]*frameStream
	next  uint64
	err   error // why the channel is closed; nil while it serves
}

// ErrChannelClosed is wrapped by the error of a call in flight when the
// channel closed (the plugin exited, or Close) and by Invoke's error after.
var ErrChannelClosed = errors.New("data channel closed")

// AcceptChannel looks, without waiting, for the hello a plugin writes on
// its end of the data channel before its handshake, so it must be called
// after the go-plugin handshake was read. With the hello it returns the
// channel, serving until conn closes; without one (a plugin that does not
// speak the channel) nil and a nil error, and the caller closes conn.
// Results and items over maxRecv bytes fail their call with
// ErrResultTooLarge; onViolation (may be nil) is told of a protocol
// violation. Errors: ErrProtocol wrapped when the first bytes are not a
// hello; the socket's error.
func AcceptChannel(conn net.Conn, maxRecv int64, onViolation func(error)) (*Channel, error) {
	hello, err := peekHello(conn)
	if err != nil || !hello {
		return nil, err
	}
	ch := &Channel{
		w: frameWriter{conn: conn}, maxRecv: maxRecv, onViolation: onViolation,
		calls: map[uint64]*frameStream{},
	}
	go ch.readLoop()
	return ch, nil
}

// peekHello reads the hello frame if it is already there (one
// non-blocking read). Errors: ErrProtocol when other bytes are.
func peekHello(conn net.Conn) (bool, error) {
	sc, ok := conn.(syscall.Conn)
	if !ok {
		return false, fmt.Errorf("data channel: %T is not a socket", conn)
	}
	rc, err := sc.SyscallConn()
	if err != nil {
		return false, err
	}
	want := headerSize + len(HelloBody)
	buf := make([]byte, want)
	var n int
	var rerr error
	if err := rc.Read(func(fd uintptr) bool {
		n, rerr = syscall.Read(int(fd), buf)
		return true // never wait: the hello precedes the handshake
	}); err != nil {
		return false, err
	}
	switch {
	case errors.Is(rerr, syscall.EAGAIN):
		return false, nil // the plugin does not speak the channel
	case rerr != nil:
		return false, rerr
	case n == 0:
		return false, nil // the plugin closed its end
	}
	hd, err := parseHeader(buf[:n])
	if err != nil || n != want || hd.typ != FrameHello || hd.id != 0 || int(hd.size) != len(HelloBody) || string(buf[headerSize:]) != HelloBody {
		return false, fmt.Errorf("%w: the plugin's first %d bytes on the data channel are not the %q hello", ErrProtocol, n, HelloBody)
	}
	return true, nil
}

// Close closes the channel; calls in flight fail with ErrChannelClosed.
// Idempotent.
func (ch *Channel) Close() error {
	ch.close(ErrChannelClosed)
	return nil
}

// close records why the channel ended, closes the socket and fails every
// call in flight with err. The first reason wins.
func (ch *Channel) close(err error) {
	ch.mu.Lock()
	if ch.err != nil {
		ch.mu.Unlock()
		return
	}
	ch.err = err
	calls := ch.calls
	ch.calls = nil
	ch.mu.Unlock()
	_ = ch.w.conn.Close()
	for _, fs := range calls {
		fs.end(frameEvent{err: err})
	}
}

// SetV3 makes the channel speak protocol 3 (ProtocolV3): the host calls
// it when go-plugin negotiated that version, before the first call.
func (ch *Channel) SetV3() { ch.v3 = true }

// invoke sends the call frame of a new call and returns its stream.
// Errors: ErrChannelClosed (wrapped) when the channel has ended; the
// socket's write error.
func (ch *Channel) invoke(ctx context.Context, inv Invocation) (*frameStream, error) {
	name, args, stream := inv.Name, inv.Args, inv.Stream
	fs := &frameStream{ch: ch, stream: stream}
	fs.events.init()
	fs.credit.Store(StreamWindow)
	ch.mu.Lock()
	if ch.err != nil {
		err := ch.err
		ch.mu.Unlock()
		return nil, err
	}
	ch.next++
	fs.id = ch.next
	ch.calls[fs.id] = fs
	ch.mu.Unlock()
	tp, ts := traceFields(ctx)
	meta := inv.Meta
	if !ch.v3 {
		meta = nil
	}
	prefix := appendCallPrefix(fs.prefix[:0], &CallFrame{Stream: stream, Name: name, Traceparent: tp, Tracestate: ts, Meta: meta})
	if err := ch.w.write(FrameCall, fs.id, prefix, args); err != nil {
		ch.forget(fs.id)
		return nil, err
	}
	return fs, nil
}

// lookup returns call id's stream, nil when there is none.
func (ch *Channel) lookup(id uint64) *frameStream {
	ch.mu.Lock()
	defer ch.mu.Unlock()
	return ch.calls[id]
}

// forget drops call id.
func (ch *Channel) forget(id uint64) {
	ch.mu.Lock()
	delete(ch.calls, id)
	ch.mu.Unlock()
}

// readLoop reads frames until the socket ends, handing each to its call.
// Handing over never blocks: credit bounds what a call can have waiting.
func (ch *Channel) readLoop() {
	r := bufio.NewReaderSize(ch.w.conn, 64<<10)
	var hb [headerSize]byte
	for {
		h, err := readHeader(r, &hb)
		if err == nil {
			err = ch.dispatch(r, h)
		}
		if err == nil {
			continue
		}
		if errors.Is(err, ErrProtocol) {
			ch.close(err)
			if ch.onViolation != nil {
				ch.onViolation(err)
			}
			return
		}
		ch.close(fmt.Errorf("%w: %v", ErrChannelClosed, err))
		return
	}
}

// dispatch reads the body of frame h and hands it to its call. Errors:
// ErrProtocol wrapped for a frame the plugin may not send; the read error.
func (ch *Channel) dispatch(r *bufio.Reader, h header) error {
	maxType := FrameError
	if ch.v3 {
		maxType = FrameMessage
	}
	if h.typ < FrameResult || h.typ > maxType {
		return fmt.Errorf("%w: frame type %d", ErrProtocol, h.typ)
	}
	fs := ch.lookup(h.id)
	if fs == nil {
		return fmt.Errorf("%w: frame type %d for call %d, which is not in flight", ErrProtocol, h.typ, h.id)
	}
	if int64(h.size) > ch.maxRecv {
		if _, err := r.Discard(int(h.size)); err != nil {
			return err
		}
		fs.abandon(fmt.Errorf("%w: a frame of %d bytes, over the limit of %d", ErrResultTooLarge, h.size, ch.maxRecv))
		if h.typ != FrameItem && h.typ != FrameMessage {
			ch.forget(h.id)
		}
		return nil
	}
	body := make([]byte, h.size)
	if _, err := io.ReadFull(r, body); err != nil {
		return err
	}
	switch h.typ {
	case FrameResult, FrameMCPResult:
		if fs.stream {
			return fmt.Errorf("%w: result frame for streaming call %d", ErrProtocol, h.id)
		}
		ch.forget(h.id)
		fs.deliver(body, h.typ == FrameMCPResult)
		fs.end(frameEvent{err: io.EOF})
	case FrameMessage:
		m, err := decodeMessage(body)
		if err != nil {
			return err
		}
		fs.message(m)
	case FrameItem:
		if !fs.stream {
			return fmt.Errorf("%w: item frame for unary call %d", ErrProtocol, h.id)
		}
		if fs.credit.Add(-1) < 0 {
			return fmt.Errorf("%w: call %d sent more than %d items without credit", ErrProtocol, h.id, StreamWindow)
		}
		fs.deliver(body, false)
	case FrameEnd:
		ch.forget(h.id)
		fs.end(frameEvent{err: io.EOF})
	case FrameError:
		te, err := parseErrorBody(body)
		if err != nil {
			return err
		}
		ch.forget(h.id)
		fs.end(frameEvent{err: te})
	}
	return nil
}

// frameEvent is what a call's reader hands its consumer: one result or
// item (data; mcp for an MCP result), a message, or the end (err:
// io.EOF, *ToolError or another error).
type frameEvent struct {
	data []byte
	mcp  bool
	msg  *Message
	err  error
}

// eventQueue is one call's frameEvents from readLoop to its one consumer,
// first in first out: push never blocks (what a call can have waiting is
// bounded by its credit, MessageWindow and its ends, not by the queue),
// pop waits for the next. The first two events (a unary call's result and
// its end) take no allocation beyond the call's own; more grow a slice,
// which a stream reuses once it has been emptied.
type eventQueue struct {
	mu     sync.Mutex
	ready  sync.Cond    // signalled on each push; L is &mu
	q      []frameEvent // waiting: q[head:]
	head   int
	inline [2]frameEvent
}

// init readies an eventQueue in place, before its first use.
func (e *eventQueue) init() {
	e.ready.L = &e.mu
	e.q = e.inline[:0]
}

// push adds ev at the end of the queue.
func (e *eventQueue) push(ev frameEvent) {
	e.mu.Lock()
	e.q = append(e.q, ev)
	e.mu.Unlock()
	e.ready.Signal()
}

// pop removes and returns the first event, waiting for one.
func (e *eventQueue) pop() frameEvent {
	e.mu.Lock()
	for e.head == len(e.q) {
		e.ready.Wait()
	}
	ev := e.q[e.head]
	e.q[e.head] = frameEvent{} // the consumer's now: not kept alive here
	if e.head++; e.head == len(e.q) {
		e.q, e.head = e.q[:0], 0
	}
	e.mu.Unlock()
	return ev
}

// frameStream is one call on a Channel. readLoop delivers; one consumer
// calls Next; Cancel may run concurrently with Next.
type frameStream struct {
	ch     *Channel
	id     uint64
	stream bool
	prefix [128]byte // the call frame's prefix, built without allocating
	// events holds at most StreamWindow items (credit enforces it),
	// MessageWindow messages (queued) and the call's ends, so that
	// readLoop never blocks on a slow consumer.
	events eventQueue
	credit atomic.Int64 // items the plugin may still send
	taken  int          // items consumed and not yet granted back (consumer only)
	// queued counts the messages in events, at most MessageWindow.
	queued atomic.Int64
	// abandoned: the consumer was given an error; later
	// frames of the call are dropped.
	abandoned atomic.Bool
}

// deliver hands one result or item to the consumer (readLoop only).
func (fs *frameStream) deliver(data []byte, mcp bool) {
	if fs.abandoned.Load() {
		return
	}
	fs.events.push(frameEvent{data: data, mcp: mcp})
}

// message hands one message to the consumer (readLoop only), unless
// MessageWindow messages wait already: a notification is then dropped
// (progress and log messages are advisory) and a request answered with
// an error, without blocking readLoop.
func (fs *frameStream) message(m *Message) {
	if fs.abandoned.Load() {
		return
	}
	if fs.queued.Add(1) > MessageWindow {
		fs.queued.Add(-1)
		if m.IsRequest() {
			go func() {
				_ = fs.Reply(Reply{ID: m.ID, Error: &RPCError{Code: CodeInternalError, Message: fmt.Sprintf("more than %d messages of the call wait for the host", MessageWindow)}})
			}()
		}
		return
	}
	fs.events.push(frameEvent{msg: m})
}

// end hands the call's end to the consumer; one that already took an
// end has stopped reading, and the events after it are dropped with the
// call. At most three ends come (a result's or error frame's, abandon's
// and close's), each once.
func (fs *frameStream) end(ev frameEvent) {
	if fs.abandoned.Load() {
		return
	}
	fs.events.push(ev)
}

// abandon ends the call for its consumer with err and asks the plugin to
// cancel it; frames of the call that follow are dropped (readLoop only).
func (fs *frameStream) abandon(err error) {
	if fs.abandoned.Load() {
		return
	}
	fs.end(frameEvent{err: err})
	fs.abandoned.Store(true)
	go func() { _ = fs.Cancel() }() // never block readLoop on a write
}

// Next implements callStream.
func (fs *frameStream) Next() (Event, error) {
	ev := fs.events.pop()
	if ev.err != nil {
		return Event{}, ev.err
	}
	if ev.msg != nil {
		fs.queued.Add(-1)
		return Event{Message: ev.msg}, nil
	}
	if fs.stream {
		fs.taken++
		if fs.taken >= StreamWindow/2 {
			n := fs.taken
			fs.taken = 0
			fs.credit.Add(int64(n))
			var b [4]byte
			b[0], b[1], b[2], b[3] = byte(n>>24), byte(n>>16), byte(n>>8), byte(n)
			_ = fs.ch.w.write(FrameCredit, fs.id, b[:], nil) // a broken channel ends the call anyway
		}
	}
	return Event{Data: ev.data, MCP: ev.mcp}, nil
}

// Cancel implements callStream: it sends the cancel frame.
func (fs *frameStream) Cancel() error { return fs.ch.w.write(FrameCancel, fs.id, nil, nil) }

// Reply implements callStream: it sends the reply frame.
func (fs *frameStream) Reply(r Reply) error {
	b, err := json.Marshal(r)
	if err != nil {
		return err
	}
	return fs.ch.w.write(FrameReply, fs.id, nil, b)
}
