package wire

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sync"
)

// Local is a plugin served in the host's own process: a declared plugin
// (an MCP server, for which the host is the MCP client, or the commands
// of a NAME.tools.json), whose program, if it has one, the host starts
// itself. Its methods are the wire's, called directly: no process, socket
// or encoding lies between the host and it (Client over NewLocalClient).
// It speaks protocol 3. The methods must be safe for concurrent use.
type Local interface {
	// Load returns the plugin's OpenTool document as JSON. Errors: a
	// *ToolError (the plugin's own failure, e.g. its server did not
	// answer initialize), or ctx's.
	Load(ctx context.Context) ([]byte, error)
	// Watch returns a function that blocks until the plugin reports a
	// change (Client.Watch's contract) and returns ctx's error once ctx
	// ends. Errors: none to open it; a plugin whose definitions never
	// change returns a function that waits for ctx.
	Watch(ctx context.Context) (next func() (WatchEvent, error), err error)
	// Catalog returns the plugin's MCP catalog as JSON, nil when it has
	// none. Errors: a *ToolError.
	Catalog(ctx context.Context) ([]byte, error)
	// Request answers MCP request method with params (JSON) from the
	// plugin's catalog. Errors: an *RPCError.
	Request(ctx context.Context, method string, params []byte) ([]byte, error)
	// Call runs one call: it hands each result, item, MCP result and
	// message to out, and returns the tool's error or nil. ctx ends when
	// the host cancels the call. The bytes handed to out must not be
	// modified afterwards (the host keeps them without a copy).
	Call(ctx context.Context, call *CallFrame, out CallOut) *ToolError
	// Run runs the plugin until it ends (its server exited, or its
	// session broke) and returns why; ctx's end stops it gracefully (for
	// a server over stdio: its stdin closed, then SIGTERM, then SIGKILL).
	// A plugin with no program of its own runs until ctx ends.
	Run(ctx context.Context) error
	// PID is the process id of the plugin's program, 0 when none runs
	// (before Run started it, a remote server, command tools).
	PID() int
	// Kill ends the plugin at once: its program is SIGKILLed, with its
	// process group and cgroup, and Run returns soon after.
	Kill()
	// ClientRestarts is how many processes (or sessions) of the plugin's
	// own clients ended by themselves since it was made, each replaced at
	// that client's next call (a declared MCP server's per-client
	// sessions); 0 for a plugin with none.
	ClientRestarts() int
}

// errLocalClosed ends the calls of a local client closed while they
// ran.
var errLocalClosed = errors.New("local plugin stopped")

// localEventBuffer is how many results, items and messages of one call
// may wait for the host before the plugin's next Send blocks.
const localEventBuffer = 16

// NewLocalClient returns a Client for p, which runs in the host's
// process: calls are function calls, results are the plugin's bytes as
// they are. A result or item larger than maxResult bytes (0: no limit)
// ends its call with ErrResultTooLarge (wrapped); the end of stopped
// (the host stopped the plugin; nil: never) ends the calls still in
// flight with an error, and the context of each.
func NewLocalClient(p Local, maxResult int, stopped context.Context) *Client {
	if stopped == nil {
		stopped = context.Background()
	}
	return &Client{local: p, localMax: maxResult, localStopped: stopped, v3: true}
}

// startLocal starts inv on c's Local in a goroutine of its own.
func (c *Client) startLocal(ctx context.Context, inv Invocation) *localStream {
	s := c.localStream(ctx, inv)
	s.events = make(chan localEvent, localEventBuffer)
	go s.run()
	return s
}

// localStream is the stream of call inv on c's Local, not yet run: its
// context ends with ctx, when the host cancels it, and when the plugin
// is stopped.
func (c *Client) localStream(ctx context.Context, inv Invocation) *localStream {
	ctx, cancel := context.WithCancel(ctx)
	s := &localStream{plugin: c.local, frame: inv.callFrame(), cancelCtx: cancel, stopped: c.localStopped.Done(), max: c.localMax, ctx: ctx, stream: inv.Stream}
	s.unstop = context.AfterFunc(c.localStopped, cancel)
	s.peer = NewPeer(s.message, inv.Meta)
	return s
}

// callFrame is the CallFrame of inv, as a value (a localStream holds
// its own).
func (inv Invocation) callFrame() CallFrame {
	return CallFrame{Name: inv.Name, Arguments: inv.Args, Stream: inv.Stream, Meta: inv.Meta}
}

// localEvent is an Event, or the call's end (err: io.EOF for a normal
// end).
type localEvent struct {
	ev  Event
	err error
}

// localStream is one call on a Local: the callStream the host reads and
// the CallOut the plugin writes. The call runs in a goroutine of its own
// and hands its events to the host through events.
type localStream struct {
	plugin    Local
	frame     CallFrame
	events    chan localEvent
	cancelCtx context.CancelFunc
	unstop    func() bool     // stops the cancel armed on the plugin's stop
	stopped   <-chan struct{} // closed when the host stopped the plugin
	max       int
	ctx       context.Context
	stream    bool
	peer      *Peer

	mu       sync.Mutex
	sent     bool // a unary call's result went out
	tooLarge int  // the size of a result over max, 0 when none
}

var _ CallOut = (*localStream)(nil)

// cancel ends the call's context (the host cancelled it, or it ended)
// and drops the cancel armed on the plugin's stop.
func (s *localStream) cancel() {
	s.unstop()
	s.cancelCtx()
}

// run runs the call and puts its end after everything it sent.
func (s *localStream) run() {
	end := s.call()
	select {
	case s.events <- localEvent{err: end}:
	case <-s.stopped:
	}
}

// call runs the call and returns its end as Next reports it: io.EOF for
// a normal end, the tool's error, or ErrResultTooLarge wrapped.
func (s *localStream) call() error {
	defer s.cancel()
	te := s.plugin.Call(s.ctx, &s.frame, s)
	s.peer.Close()
	s.mu.Lock()
	sent, tooLarge := s.sent, s.tooLarge
	s.mu.Unlock()
	switch {
	case tooLarge > 0:
		return fmt.Errorf("%w: %d bytes, limit %d", ErrResultTooLarge, tooLarge, s.max)
	case te != nil && !(sent && !s.stream):
		return &ToolError{Code: te.Code, Message: te.Message, Exited: te.Exited, Status: te.Status, Login: te.Login}
	}
	return io.EOF
}

// put hands ev to the host through events, blocking while the host has
// localEventBuffer events to read. Errors: the call was canceled or has
// ended, or the plugin stopped.
func (s *localStream) put(ev Event) error {
	if err := s.ctx.Err(); err != nil {
		return err
	}
	select {
	case s.events <- localEvent{ev: ev}:
		return nil
	case <-s.ctx.Done():
		return s.ctx.Err()
	case <-s.stopped:
		return errLocalClosed
	}
}

// result checks a result or item before it goes out. Errors: a second
// result of a unary call; a result over the limit (which also ends the
// call with ErrResultTooLarge).
func (s *localStream) result(b []byte) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.stream && s.sent {
		return errors.New("a unary call has one result")
	}
	if s.max > 0 && len(b) > s.max {
		s.tooLarge = len(b)
		s.cancel()
		return fmt.Errorf("%w: %d bytes, limit %d", ErrResultTooLarge, len(b), s.max)
	}
	s.sent = true
	return nil
}

// Send implements CallOut.
func (s *localStream) Send(b []byte) error {
	if err := s.result(b); err != nil {
		return err
	}
	return s.put(Event{Data: b})
}

// SendMCP implements CallOut. Errors: a streaming call has no MCP
// result; Send's.
func (s *localStream) SendMCP(b []byte) error {
	if s.stream {
		return errors.New("a streaming call has no MCP result")
	}
	if err := s.result(b); err != nil {
		return err
	}
	return s.put(Event{Data: b, MCP: true})
}

// Peer implements CallOut.
func (s *localStream) Peer() *Peer { return s.peer }

// message is the peer's send: a notification or request to the caller.
func (s *localStream) message(m Message) error {
	return s.put(Event{Message: &m})
}

// Next implements callStream.
func (s *localStream) Next() (Event, error) {
	select {
	case e := <-s.events:
		return e.ev, e.err
	case <-s.stopped:
		return Event{}, fmt.Errorf("%w: the plugin was stopped during the call", errLocalClosed)
	}
}

// Cancel implements callStream: the call's context ends.
func (s *localStream) Cancel() error {
	s.cancel()
	return nil
}

// Reply implements callStream. Errors: a reply to no request sent.
func (s *localStream) Reply(r Reply) error {
	if err := s.peer.Deliver(r); err != nil {
		s.cancel() // a reply to nothing: the host is confused
		return err
	}
	return nil
}
