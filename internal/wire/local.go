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
// ends its call with ErrResultTooLarge (wrapped); closing done (the
// host stopped the plugin) ends the calls still in flight with an error.
func NewLocalClient(p Local, maxResult int, done <-chan struct{}) *Client {
	return &Client{local: p, localMax: maxResult, localDone: done, v3: true}
}

// startLocal starts inv on c's Local in a goroutine of its own.
func (c *Client) startLocal(ctx context.Context, inv Invocation) *localStream {
	ctx, cancel := context.WithCancel(ctx)
	s := &localStream{events: make(chan localEvent, localEventBuffer), cancel: cancel, done: c.localDone, max: c.localMax, ctx: ctx, stream: inv.Stream}
	s.peer = NewPeer(s.message, inv.Meta)
	go s.run(c.local, &CallFrame{Name: inv.Name, Arguments: inv.Args, Stream: inv.Stream, Meta: inv.Meta})
	return s
}

// localEvent is an Event, or the call's end (err: io.EOF for a normal
// end).
type localEvent struct {
	ev  Event
	err error
}

// localStream is one call on a Local: the callStream the host reads and
// the CallOut the plugin writes.
type localStream struct {
	events chan localEvent
	cancel context.CancelFunc
	done   <-chan struct{}
	max    int
	ctx    context.Context
	stream bool
	peer   *Peer

	mu       sync.Mutex
	sent     bool // a unary call's result went out
	tooLarge int  // the size of a result over max, 0 when none
}

var _ CallOut = (*localStream)(nil)

// run runs the call and puts its end after everything it sent.
func (s *localStream) run(p Local, cf *CallFrame) {
	defer s.cancel()
	te := p.Call(s.ctx, cf, s)
	s.peer.Close()
	s.mu.Lock()
	sent, tooLarge := s.sent, s.tooLarge
	s.mu.Unlock()
	var end error = io.EOF
	switch {
	case tooLarge > 0:
		end = fmt.Errorf("%w: %d bytes, limit %d", ErrResultTooLarge, tooLarge, s.max)
	case te != nil && !(sent && !s.stream):
		end = &ToolError{Code: te.Code, Message: te.Message}
	}
	select {
	case s.events <- localEvent{err: end}:
	case <-s.done:
	}
}

// put hands ev to the host; it blocks while the host has
// localEventBuffer events to read. Errors: the call was canceled or the
// plugin stopped.
func (s *localStream) put(ev Event) error {
	if err := s.ctx.Err(); err != nil {
		return err
	}
	select {
	case s.events <- localEvent{ev: ev}:
		return nil
	case <-s.ctx.Done():
		return s.ctx.Err()
	case <-s.done:
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
	case <-s.done:
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
