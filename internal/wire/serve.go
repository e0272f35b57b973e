package wire

import (
	"bufio"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"strconv"
	"sync"
	"sync/atomic"
	"time"
)

// The plugin side of the data channel (frame.go).

// CallHandler runs one call in the plugin: it hands each encoded result
// (one for a unary call, one per item for a streaming one) to out.Send,
// or a unary call's MCP result to out.SendMCP, may send messages through
// out.Peer(), and returns the tool's error, or nil. ctx ends when the
// host cancels the call or the channel closes; sends fail once ctx has
// ended.
type CallHandler func(ctx context.Context, call *CallFrame, out CallOut) *ToolError

// OpenPluginChannel returns the plugin's end of the data channel named by
// DataFDEnv, with the hello already written, or nil when the host gave
// none. The variable is removed from the environment and the descriptor
// is not inherited by the plugin's children. Call it before the go-plugin
// handshake is printed. Errors: a bad descriptor, or the hello's write
// error.
func OpenPluginChannel() (net.Conn, error) {
	v, ok := os.LookupEnv(DataFDEnv)
	if !ok {
		return nil, nil
	}
	_ = os.Unsetenv(DataFDEnv)
	fd, err := strconv.Atoi(v)
	if err != nil || fd < 3 {
		return nil, fmt.Errorf("data channel: %s=%q is not a descriptor", DataFDEnv, v)
	}
	f := os.NewFile(uintptr(fd), "opentool-data")
	conn, err := net.FileConn(f) // a close-on-exec duplicate
	_ = f.Close()
	if err != nil {
		return nil, fmt.Errorf("data channel: %w", err)
	}
	w := frameWriter{conn: conn}
	if err := w.write(FrameHello, 0, nil, []byte(HelloBody)); err != nil {
		_ = conn.Close()
		return nil, fmt.Errorf("data channel hello: %w", err)
	}
	return conn, nil
}

// ServeChannel serves calls from conn with h until conn ends; then every
// call still running is canceled. A unary call that arrives while no
// other call runs and nothing else waits is run by the reading goroutine
// itself (no goroutine hand-off: what a single caller sees); should it
// run longer than inlineGrace, a new goroutine takes over reading, so
// cancels and other calls are never held longer than that. Every other
// call runs in its own goroutine. Call frames over MaxMessageSize bytes,
// or malformed, end the channel. Errors: why it ended (io.EOF when the
// host closed it). v3 says the host negotiated protocol 3 (ProtocolV3):
// calls then carry the caller's _meta and may send MCP results and
// messages.
func ServeChannel(conn net.Conn, v3 bool, h CallHandler) error {
	s := &channelServer{
		w: frameWriter{conn: conn}, h: h, v3: v3, calls: map[uint64]*servedCall{},
		r: bufio.NewReaderSize(conn, 64<<10), done: make(chan error, 1),
	}
	s.loop()
	err := <-s.done
	s.mu.Lock()
	for _, c := range s.calls {
		c.cancel()
	}
	s.closed = true
	s.mu.Unlock()
	_ = conn.Close()
	return err
}

// channelServer is the plugin side of one data channel.
type channelServer struct {
	w  frameWriter
	h  CallHandler
	v3 bool // protocol 3
	// r and hb belong to the one goroutine reading (loop); done gets
	// why reading ended.
	r    *bufio.Reader
	hb   [headerSize]byte
	done chan error

	running atomic.Int64 // calls running
	mu      sync.Mutex
	calls   map[uint64]*servedCall
	closed  bool
}

// inlineGrace is how long a call run by the reading goroutine may take
// before another goroutine takes over reading.
const inlineGrace = 100 * time.Microsecond

// errHandedOff ends a read loop whose goroutine handed reading over.
var errHandedOff = errors.New("reading handed over")

// loop reads frames until the channel ends (reporting why on done) or
// its goroutine hands reading over.
func (s *channelServer) loop() {
	if err := s.read(); !errors.Is(err, errHandedOff) {
		s.done <- err
	}
}

// servedCall is one call running in the plugin.
type servedCall struct {
	cancel context.CancelFunc
	peer   *Peer
	mu     sync.Mutex
	credit int           // items the host allows beyond those sent
	more   chan struct{} // signaled when credit grows
}

// read reads frames until conn ends. Errors: the read error, or
// ErrProtocol wrapped for a frame the host may not send.
func (s *channelServer) read() error {
	r := s.r
	for {
		h, err := readHeader(r, &s.hb)
		if err != nil {
			return err
		}
		if h.size > MaxMessageSize {
			return fmt.Errorf("%w: a frame of %d bytes", ErrProtocol, h.size)
		}
		body := make([]byte, h.size)
		if _, err := io.ReadFull(r, body); err != nil {
			return err
		}
		switch h.typ {
		case FrameCall:
			if err := s.start(h.id, body); err != nil {
				return err
			}
		case FrameCancel:
			if c := s.lookup(h.id); c != nil {
				c.cancel()
			}
		case FrameCredit:
			if len(body) != 4 {
				return fmt.Errorf("%w: credit frame of %d bytes", ErrProtocol, len(body))
			}
			if c := s.lookup(h.id); c != nil {
				c.grant(int(binary.BigEndian.Uint32(body)))
			}
		case FrameReply:
			if !s.v3 {
				return fmt.Errorf("%w: frame type %d", ErrProtocol, h.typ)
			}
			r, err := decodeReply(body)
			if err != nil {
				return err
			}
			if c := s.lookup(h.id); c != nil {
				if err := c.peer.Deliver(r); err != nil {
					return err
				}
			}
		default:
			return fmt.Errorf("%w: frame type %d", ErrProtocol, h.typ)
		}
	}
}

// lookup returns call id, nil when it is not running (a cancel or credit
// may cross the call's end).
func (s *channelServer) lookup(id uint64) *servedCall {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.calls[id]
}

// start runs the call of a call frame: inline (runInline) when it is
// unary, no other call runs and no other frame is buffered, else in its
// own goroutine. Errors: errHandedOff when another goroutine now reads;
// ErrProtocol wrapped for a bad call frame.
func (s *channelServer) start(id uint64, body []byte) error {
	cf, err := ParseCallFrame(body)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithCancel(WithTraceFields(context.Background(), cf.Traceparent, cf.Tracestate))
	c := &servedCall{cancel: cancel, credit: StreamWindow, more: make(chan struct{}, 1)}
	var sendMsg func(Message) error
	if s.v3 {
		sendMsg = func(m Message) error {
			if err := ctx.Err(); err != nil {
				return err
			}
			b, err := encodeMessage(m)
			if err != nil {
				return err
			}
			return s.w.write(FrameMessage, id, nil, b)
		}
	}
	c.peer = NewPeer(sendMsg, cf.Meta)
	s.mu.Lock()
	if _, dup := s.calls[id]; dup || s.closed {
		s.mu.Unlock()
		cancel()
		return fmt.Errorf("%w: call id %d reused", ErrProtocol, id)
	}
	s.calls[id] = c
	s.mu.Unlock()
	if s.running.Add(1) == 1 && !cf.Stream && s.r.Buffered() == 0 {
		return s.runInline(ctx, id, cf, c)
	}
	go s.run(ctx, id, cf, c)
	return nil
}

// runInline runs a call on the reading goroutine. If it takes longer
// than inlineGrace a new goroutine takes over reading, and this one
// returns errHandedOff once the call ended.
func (s *channelServer) runInline(ctx context.Context, id uint64, cf *CallFrame, c *servedCall) error {
	const (
		running int32 = iota
		finished
		takenOver
	)
	var state atomic.Int32
	t := time.AfterFunc(inlineGrace, func() {
		if state.CompareAndSwap(running, takenOver) {
			s.loop() // the timer's own goroutine reads from now on
		}
	})
	s.run(ctx, id, cf, c)
	t.Stop()
	if !state.CompareAndSwap(running, finished) {
		return errHandedOff
	}
	return nil
}

// run runs one call and writes its end: the error frame, the stream's
// end frame, or nothing after a unary result (the result frame ends it).
func (s *channelServer) run(ctx context.Context, id uint64, cf *CallFrame, c *servedCall) {
	defer c.cancel()
	out := &channelOut{s: s, id: id, cf: cf, c: c, ctx: ctx}
	te := s.h(ctx, cf, out)
	sent := out.sent
	c.peer.Close()
	s.mu.Lock()
	delete(s.calls, id)
	s.mu.Unlock()
	s.running.Add(-1)
	switch {
	case te != nil && !(sent && !cf.Stream):
		_ = s.w.write(FrameError, id, nil, errorBody(te.Code, te.Message))
	case cf.Stream || !sent:
		_ = s.w.write(FrameEnd, id, nil, nil)
	}
}

// channelOut is the CallOut of one call on the data channel.
type channelOut struct {
	s    *channelServer
	id   uint64
	cf   *CallFrame
	c    *servedCall
	ctx  context.Context
	sent bool // a unary call's result went out
}

// Send implements CallOut.
func (o *channelOut) Send(b []byte) error { return o.send(FrameResult, b) }

// SendMCP implements CallOut. Errors:
// errNotV3 under protocol 2; a streaming call has no MCP result.
func (o *channelOut) SendMCP(b []byte) error {
	if !o.s.v3 {
		return errNotV3
	}
	if o.cf.Stream {
		return errors.New("a streaming call has no MCP result")
	}
	return o.send(FrameMCPResult, b)
}

// Peer implements CallOut.
func (o *channelOut) Peer() *Peer { return o.c.peer }

// send writes a unary result (typ) or, for a streaming call, an item.
func (o *channelOut) send(typ byte, b []byte) error {
	if err := o.ctx.Err(); err != nil {
		return err
	}
	if !o.cf.Stream {
		if o.sent {
			return errors.New("a unary call has one result")
		}
		o.sent = true
		return o.s.w.write(typ, o.id, nil, b)
	}
	if err := o.c.take(o.ctx); err != nil {
		return err
	}
	return o.s.w.write(FrameItem, o.id, nil, b)
}

// take waits for credit to send one item. Errors: ctx's error.
func (c *servedCall) take(ctx context.Context) error {
	for {
		c.mu.Lock()
		if c.credit > 0 {
			c.credit--
			c.mu.Unlock()
			return nil
		}
		c.mu.Unlock()
		select {
		case <-c.more:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// grant adds n items of credit.
func (c *servedCall) grant(n int) {
	c.mu.Lock()
	c.credit += n
	c.mu.Unlock()
	select {
	case c.more <- struct{}{}:
	default:
	}
}
