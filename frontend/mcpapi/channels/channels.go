// Package channels holds the channels of the MCP front end's sessions
// to their clients outside a request, for the notifications the host
// writes around the MCP Go SDK (which sends only the ones it defines:
// ServerSession's sending methods are fixed), the core tasks'
// notifications/tasks/status (tasklayer, notify.go): Channels, the
// task layer's tasklayer.Channels. It knows the request, the task
// layer's Sink and its markers of a stdio request only.
package channels

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/opentool-host/opentool-host/frontend/httpguard"
	"github.com/opentool-host/opentool-host/frontend/mcpapi/envelope"
	"github.com/opentool-host/opentool-host/frontend/mcpapi/tasklayer"
	"github.com/opentool-host/opentool-host/frontend/sse"
	"github.com/opentool-host/opentool-host/host/access"
	"github.com/opentool-host/opentool-host/host/tasks/mcptasks"
	"github.com/opentool-host/opentool-host/internal/strictjson"
	"github.com/opentool-host/opentool-host/protocol/mcpmethod"
)

// A session's channels to its client outside a request, for the
// notifications the host writes around the MCP Go SDK (which sends only
// the ones it defines: ServerSession's sending methods are fixed), the
// core tasks' notifications/tasks/status (tasklayer, notify.go):
//
//	transport           the channel
//	/mcp with sessions  the session's standalone GET stream (the one the
//	                    SDK accepted: 200, no Last-Event-ID), as one SSE
//	                    event written between the SDK's, under the
//	                    stream's mutex (Stream)
//	stdio               the client's connection (Channels.Stdio): one
//	                    JSON-RPC message written by the SDK's own writer,
//	                    which serializes writes
//	stateless /mcp      none: no session, no stream to carry it

// errStreamEnded is a note to a stream that has ended.
var errStreamEnded = errors.New("the client's stream has ended")

// Channels are the sinks of one MCP server's sessions
// (tasklayer.Channels). The zero Channels is ready; it is safe for
// concurrent use.
type Channels struct {
	mu      sync.Mutex
	stdio   tasklayer.Sink                  // the stdio client (Stdio); nil on HTTP
	streams map[string]map[*Stream]struct{} // Mcp-Session-Id → its standalone GET streams
}

// Sinks implements tasklayer.Channels: the stdio client, else the
// accepted GET streams of session opened by owner.
func (c *Channels) Sinks(session, owner string) []tasklayer.Sink {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.stdio != nil {
		return []tasklayer.Sink{c.stdio}
	}
	var out []tasklayer.Sink
	for st := range c.streams[session] {
		if st.owner == owner && st.accepted() {
			out = append(out, st)
		}
	}
	return out
}

// OnStdio implements tasklayer.Channels: whether the Server serves a
// stdio client (Server.Stdio connected); it then has no stateless
// requests.
func (c *Channels) OnStdio() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.stdio != nil
}

// Stream is the standalone GET stream of a session (with sessions),
// respond.Stream: the SDK's writes and the host's notifications go
// through its mutex, so that each event is written whole.
type Stream struct {
	owner string // the API key's name ("" without keys)
	w     http.ResponseWriter
	d     time.Duration // write deadline of each write and flush

	mu     sync.Mutex  // guards every write to w
	ok     atomic.Bool // the SDK accepted the stream (200)
	closed atomic.Bool // the GET ended, or a write failed
}

// accepted reports whether the SDK serves the stream and it is open
// (without waiting for a write in progress).
func (st *Stream) accepted() bool { return st.ok.Load() && !st.closed.Load() }

// Note implements tasklayer.Sink: one SSE event, flushed.
func (st *Stream) Note(method string, params json.RawMessage) error {
	st.mu.Lock()
	defer st.mu.Unlock()
	if st.closed.Load() {
		return errStreamEnded
	}
	err := sse.Send(st.w, http.NewResponseController(st.w), sse.Note(method, params), st.d)
	if err != nil {
		st.closed.Store(true)
	}
	return err
}

// WriteHeader records the SDK's status of the stream and writes it
// (respond.Writer).
func (st *Stream) WriteHeader(code int) {
	st.mu.Lock()
	defer st.mu.Unlock()
	st.ok.Store(code == http.StatusOK)
	st.w.WriteHeader(code)
}

// Write implements respond.Stream: p, what the SDK wrote, under the
// write deadline (a GET carries no request: no response).
func (st *Stream) Write(p []byte, _ bool) (int, error) {
	st.mu.Lock()
	defer st.mu.Unlock()
	httpguard.SetWriteDeadline(st.w, st.d)
	n, err := st.w.Write(p)
	if err != nil {
		st.closed.Store(true)
	}
	return n, err
}

// Flush implements respond.Stream: the stream flushed under the write
// deadline.
func (st *Stream) Flush() error {
	st.mu.Lock()
	defer st.mu.Unlock()
	httpguard.SetWriteDeadline(st.w, st.d)
	return http.NewResponseController(st.w).Flush()
}

// Open registers r, a session's GET that opens its standalone stream
// (no Last-Event-ID), written through w with write deadline d, and
// returns it (nil for any other request); close it with Close when the
// GET ends.
func (c *Channels) Open(w http.ResponseWriter, r *http.Request, d time.Duration) *Stream {
	id := r.Header.Get("Mcp-Session-Id")
	if r.Method != http.MethodGet || id == "" || r.Header.Get("Last-Event-ID") != "" {
		return nil
	}
	st := &Stream{owner: access.GrantFrom(r.Context()).Name(), w: w, d: d}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.streams == nil {
		c.streams = map[string]map[*Stream]struct{}{}
	}
	if c.streams[id] == nil {
		c.streams[id] = map[*Stream]struct{}{}
	}
	c.streams[id][st] = struct{}{}
	return st
}

// Close unregisters st, the GET stream of session id.
func (c *Channels) Close(id string, st *Stream) {
	st.mu.Lock() // a note being written ends first
	st.closed.Store(true)
	st.mu.Unlock()
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.streams[id], st)
	if len(c.streams[id]) == 0 {
		delete(c.streams, id)
	}
}

// Stdio returns t, the transport of the one client of a stdio server
// (mcp.StdioTransport), as the transport to connect the server with: the
// host's own notifications (notifications/tasks/status) reach that
// client through it, and a tools/call's params.task (which the SDK's
// CallToolParamsRaw drops) reaches the task middleware. Use it for one
// connection only.
func (c *Channels) Stdio(t mcp.Transport) mcp.Transport { return &stdioTransport{Transport: t, c: c} }

// stdioTransport is Channels.Stdio's transport.
type stdioTransport struct {
	mcp.Transport
	c *Channels
}

// Connect implements mcp.Transport: the connection is the stdio sink.
func (t *stdioTransport) Connect(ctx context.Context) (mcp.Connection, error) {
	c, err := t.Transport.Connect(ctx)
	if err != nil {
		return nil, err
	}
	sc := &stdioConn{Connection: c}
	t.c.mu.Lock()
	t.c.stdio = sc
	t.c.mu.Unlock()
	return sc, nil
}

// stdioConn is the stdio client's connection.
type stdioConn struct{ mcp.Connection }

// Read implements mcp.Connection: a tools/call whose params.task is an
// object is marked for the task middleware (tasklayer.CoreTaskHeader on
// its RequestExtra, as the front end marks an HTTP one); a core-only
// method in the extension's dialect is answered here
// (tasklayer.CoreOnlyAsked), and the next message read.
func (c *stdioConn) Read(ctx context.Context) (jsonrpc.Message, error) {
	for {
		msg, err := c.Connection.Read(ctx)
		req, ok := msg.(*jsonrpc.Request)
		if !ok || err != nil {
			return msg, err
		}
		switch req.Method {
		case mcpmethod.ToolsCall:
			if tasklayer.AsksCoreTask(req.Params) {
				req.Extra = &mcp.RequestExtra{Header: http.Header{tasklayer.CoreTaskHeader: {"1"}}}
			}
		case mcptasks.MethodResult, mcptasks.MethodList:
			version := envelope.JSONString(strictjson.Member(req.Params, "_meta", envelope.MetaProtocolVersion))
			if je := tasklayer.CoreOnlyAsked(req.Method, version, req.Params); je != nil && req.IsCall() {
				if err := c.Write(ctx, &jsonrpc.Response{ID: req.ID, Error: je}); err != nil {
					return nil, err
				}
				continue
			}
		}
		return msg, err
	}
}

// Note implements tasklayer.Sink: one JSON-RPC notification, written by
// the SDK's writer (which serializes writes).
func (c *stdioConn) Note(method string, params json.RawMessage) error {
	return c.Write(context.Background(), &jsonrpc.Request{Method: method, Params: params})
}
