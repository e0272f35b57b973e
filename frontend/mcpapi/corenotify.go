package mcpapi

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"golang.org/x/time/rate"

	"github.com/opentool-host/opentool-host/frontend/httpguard"
	"github.com/opentool-host/opentool-host/frontend/sse"
	"github.com/opentool-host/opentool-host/host/access"
	"github.com/opentool-host/opentool-host/host/tasks"
	"github.com/opentool-host/opentool-host/host/tasks/mcptasks"
	"github.com/opentool-host/opentool-host/internal/strictjson"
	"github.com/opentool-host/opentool-host/protocol/mcpmethod"
)

// notifications/tasks/status of the core tasks (MCP 2025-11-25, "Task
// Status Notification": a Task whose status changed, sent to the
// requestor; optional, clients poll tasks/get all the same).
//
// The MCP Go SDK v1.8.0 sends only the notifications it defines
// (ServerSession's sending methods are fixed), so the host writes this
// one around it, as it writes the extension's notifications/tasks on a
// listen stream (tasknotify.go), onto the session's own channel to its
// client:
//
//	transport           where the notification goes
//	/mcp with sessions  the session's standalone GET stream (the one the
//	                    SDK accepted: 200, no Last-Event-ID), as one SSE
//	                    event written between the SDK's, under the
//	                    stream's mutex (sessionStream). A session with no
//	                    GET stream open then gets none: clients poll
//	stdio               the client's connection (Server.Stdio): one
//	                    JSON-RPC message written by the SDK's own writer,
//	                    which serializes writes
//	stateless /mcp      none: no session, no stream to carry it
//
// A core task records, when it is created (callAsCoreTask), the session
// that created it and its API key; when the task changes status on this
// replica (tasks.Manager.Watch: working to completed, failed or
// cancelled; the host's tasks never ask for input) the session gets one
// notification, the Task as tasks/get answers it then, on a stream opened
// by the same API key only. A task's call that runs a declared MCP
// server's task relays that server's own status notifications while the
// task works (relayStatus): the same Task, working, with the server's
// statusMessage.

// noteSink is where a session's raw notifications go.
type noteSink interface {
	// note writes the JSON-RPC notification of method with params (a
	// JSON object) to the client. Errors: the stream has ended, the
	// client is gone or too slow.
	note(method string, params json.RawMessage) error
}

// errStreamEnded is a note to a stream that has ended.
var errStreamEnded = errors.New("the client's stream has ended")

// noteTarget is the session a core task notifies: its Mcp-Session-Id
// ("" for the stdio client) and the API key that created the task.
type noteTarget struct {
	session, owner string
}

// coreNotes are the sinks of a Server's sessions and the session of each
// core task that notifies one.
type coreNotes struct {
	mu      sync.Mutex
	stdio   noteSink                               // the stdio client (Server.Stdio); nil on HTTP
	streams map[string]map[*sessionStream]struct{} // Mcp-Session-Id → its standalone GET streams
	tasks   map[string]noteTarget                  // core task id → its session
}

// follow records that core task id, created by tools/call on ss for
// owner, notifies ss; nothing for a session without a channel to its
// client (stateless /mcp).
func (n *coreNotes) follow(ss *mcp.ServerSession, owner, id string) {
	n.mu.Lock()
	defer n.mu.Unlock()
	var t noteTarget
	switch {
	case n.stdio != nil:
		t = noteTarget{owner: owner}
	case ss != nil && ss.ID() != "":
		t = noteTarget{session: ss.ID(), owner: owner}
	default:
		return
	}
	if n.tasks == nil {
		n.tasks = map[string]noteTarget{}
	}
	n.tasks[id] = t
}

// sinks returns the sinks of task id's session (none when it has none
// open, or the task notifies none); end forgets the task.
func (n *coreNotes) sinks(id string, end bool) []noteSink {
	n.mu.Lock()
	defer n.mu.Unlock()
	t, ok := n.tasks[id]
	if !ok {
		return nil
	}
	if end {
		delete(n.tasks, id)
	}
	if n.stdio != nil {
		return []noteSink{n.stdio}
	}
	var out []noteSink
	for st := range n.streams[t.session] {
		if st.owner == t.owner && st.accepted() {
			out = append(out, st)
		}
	}
	return out
}

// notifyCore sends notifications/tasks/status with rec, a core task as
// now, to the session that created it: with async each sink on a
// goroutine of its own (a slow client holds only its own stream), else
// in turn before it returns. A terminal rec is the task's last.
func (s *Server) notifyCore(rec tasks.Record, async bool) {
	sinks := s.notes.sinks(rec.ID, rec.Status.Terminal())
	if len(sinks) == 0 {
		return
	}
	params, err := json.Marshal(mcptasks.CoreTask(rec))
	if err != nil {
		return
	}
	for _, sk := range sinks {
		send := func() {
			if err := sk.note(mcptasks.MethodStatusNote, params); err != nil {
				s.cfg.Logger.Debug("notifications/tasks/status not delivered", "task", rec.ID, "error", err)
			}
		}
		if async {
			go send()
		} else {
			send()
		}
	}
}

// coreTaskEnded is the tasks.Manager.Watch hook of the core dialect.
func (s *Server) coreTaskEnded(rec tasks.Record) {
	if rec.Origin.FrontEnd == FrontEndCore {
		s.notifyCore(rec, true)
	}
}

// noteFrame is the JSON-RPC notification of method (a name of
// [a-z/]: nothing to escape) with params as one SSE event of the
// streamable HTTP transport (event message).
func noteFrame(method string, params json.RawMessage) []byte {
	b := sse.Head(make([]byte, 0, len(params)+len(method)+64), "message")
	b = append(b, `{"jsonrpc":"2.0","method":"`...)
	b = append(b, method...)
	b = append(b, `","params":`...)
	b = append(b, params...)
	return sse.End(append(b, '}'))
}

// sessionStream is the standalone GET stream of a session (with
// sessions): the SDK's writes and the host's notifications go through
// its mutex, so that each event is written whole.
type sessionStream struct {
	owner string // the API key's name ("" without keys)
	w     http.ResponseWriter
	d     time.Duration // write deadline of each write and flush

	mu     sync.Mutex  // guards every write to w
	ok     atomic.Bool // the SDK accepted the stream (200)
	closed atomic.Bool // the GET ended, or a write failed
}

// accepted reports whether the SDK serves the stream and it is open
// (without waiting for a write in progress).
func (st *sessionStream) accepted() bool { return st.ok.Load() && !st.closed.Load() }

// note implements noteSink: one SSE event, flushed.
func (st *sessionStream) note(method string, params json.RawMessage) error {
	st.mu.Lock()
	defer st.mu.Unlock()
	if st.closed.Load() {
		return errStreamEnded
	}
	err := sse.Send(st.w, http.NewResponseController(st.w), noteFrame(method, params), st.d)
	if err != nil {
		st.closed.Store(true)
	}
	return err
}

// writeHeader records the SDK's status of the stream and writes it.
func (st *sessionStream) writeHeader(code int) {
	st.mu.Lock()
	defer st.mu.Unlock()
	st.ok.Store(code == http.StatusOK)
	st.w.WriteHeader(code)
}

// write writes p, what the SDK wrote, under the write deadline.
func (st *sessionStream) write(p []byte) (int, error) {
	st.mu.Lock()
	defer st.mu.Unlock()
	httpguard.SetWriteDeadline(st.w, st.d)
	n, err := st.w.Write(p)
	if err != nil {
		st.closed.Store(true)
	}
	return n, err
}

// flush flushes the stream under the write deadline.
func (st *sessionStream) flush() error {
	st.mu.Lock()
	defer st.mu.Unlock()
	httpguard.SetWriteDeadline(st.w, st.d)
	return http.NewResponseController(st.w).Flush()
}

// openSessionStream registers r, a session's GET that opens its
// standalone stream (no Last-Event-ID), written through w with write
// deadline d, and returns it (nil for any other request); close it with
// closeSessionStream when the GET ends.
func (s *Server) openSessionStream(w http.ResponseWriter, r *http.Request, d time.Duration) *sessionStream {
	id := r.Header.Get("Mcp-Session-Id")
	if r.Method != http.MethodGet || id == "" || r.Header.Get("Last-Event-ID") != "" {
		return nil
	}
	st := &sessionStream{owner: access.GrantFrom(r.Context()).Name(), w: w, d: d}
	n := &s.notes
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.streams == nil {
		n.streams = map[string]map[*sessionStream]struct{}{}
	}
	if n.streams[id] == nil {
		n.streams[id] = map[*sessionStream]struct{}{}
	}
	n.streams[id][st] = struct{}{}
	return st
}

// closeSessionStream unregisters st, the GET stream of session id.
func (s *Server) closeSessionStream(id string, st *sessionStream) {
	st.mu.Lock() // a note being written ends first
	st.closed.Store(true)
	st.mu.Unlock()
	n := &s.notes
	n.mu.Lock()
	defer n.mu.Unlock()
	delete(n.streams[id], st)
	if len(n.streams[id]) == 0 {
		delete(n.streams, id)
	}
}

// Stdio returns t, the transport of the one client of a stdio server
// (mcp.StdioTransport), as the transport to connect s.MCP() with: the
// host's own notifications (notifications/tasks/status) reach that
// client through it, and a tools/call's params.task (which the SDK's
// CallToolParamsRaw drops) reaches the task middleware. Use it for one
// connection only.
func (s *Server) Stdio(t mcp.Transport) mcp.Transport { return &stdioTransport{Transport: t, s: s} }

// stdioTransport is Server.Stdio's transport.
type stdioTransport struct {
	mcp.Transport
	s *Server
}

// Connect implements mcp.Transport: the connection is s's stdio sink.
func (t *stdioTransport) Connect(ctx context.Context) (mcp.Connection, error) {
	c, err := t.Transport.Connect(ctx)
	if err != nil {
		return nil, err
	}
	sc := &stdioConn{Connection: c}
	t.s.notes.mu.Lock()
	t.s.notes.stdio = sc
	t.s.notes.mu.Unlock()
	return sc, nil
}

// stdioConn is the stdio client's connection.
type stdioConn struct{ mcp.Connection }

// Read implements mcp.Connection: a tools/call whose params.task is an
// object is marked for the task middleware (coreTaskHeader on its
// RequestExtra, as markCoreTask marks an HTTP one); a core-only method
// in the extension's dialect is answered here (coreOnlyAsked), and the
// next message read.
func (c *stdioConn) Read(ctx context.Context) (jsonrpc.Message, error) {
	for {
		msg, err := c.Connection.Read(ctx)
		req, ok := msg.(*jsonrpc.Request)
		if !ok || err != nil {
			return msg, err
		}
		switch req.Method {
		case mcpmethod.ToolsCall:
			if asksCoreTask(req.Params) {
				req.Extra = &mcp.RequestExtra{Header: http.Header{coreTaskHeader: {"1"}}}
			}
		case mcptasks.MethodResult, mcptasks.MethodList:
			version := jsonString(strictjson.Member(req.Params, "_meta", metaProtocolVersion))
			if je := coreOnlyAsked(req.Method, version, req.Params); je != nil && req.IsCall() {
				if err := c.Write(ctx, &jsonrpc.Response{ID: req.ID, Error: je}); err != nil {
					return nil, err
				}
				continue
			}
		}
		return msg, err
	}
}

// note implements noteSink: one JSON-RPC notification, written by the
// SDK's writer (which serializes writes).
func (c *stdioConn) note(method string, params json.RawMessage) error {
	return c.Write(context.Background(), &jsonrpc.Request{Method: method, Params: params})
}

// onStdio reports whether the Server serves a stdio client (Server.Stdio
// connected): it then has no stateless requests.
func (n *coreNotes) onStdio() bool {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.stdio != nil
}

// maxRelayedMessage is the most bytes of a server's statusMessage relayed
// (relayStatus); a longer one is cut, on a UTF-8 boundary.
const maxRelayedMessage = 1 << 10

// coreRelayKey is the context key of a core task's coreRelay.
type coreRelayKey struct{}

// relayRate and relayBurst bound the statuses relayed for one core task
// (relayStatus), per second and at once: past them a status is dropped,
// so that a plugin's flood of them costs the task store and the client
// no more.
const (
	relayRate  = 10
	relayBurst = 10
)

// coreRelay is the host task a core task's call runs for: id is set once
// the task is created (a status before it is not relayed).
type coreRelay struct {
	owner string
	id    atomic.Pointer[string]
	limit *rate.Limiter // relayRate, relayBurst

	mu   sync.Mutex
	last string // the statusMessage last relayed
}

// newCoreRelay returns the coreRelay of a core task of owner.
func newCoreRelay(owner string) *coreRelay {
	return &coreRelay{owner: owner, limit: rate.NewLimiter(relayRate, relayBurst)}
}

// fresh reports whether msg is to be relayed: not the message last
// relayed, and within the rate (then it is the last relayed).
func (r *coreRelay) fresh(msg string) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	if msg == r.last || !r.limit.Allow() {
		return false
	}
	r.last = msg
	return true
}

// relayStatus sends, on the call's goroutine, for a core task's call
// whose plugin (a declared MCP server's task, mcpadapter) told a status
// (params: the server's Task), the host task as stored, still working,
// with the server's statusMessage (at most maxRelayedMessage bytes); only
// a message that differs from the last relayed, at most relayRate a
// second; nothing for any other call, status or task.
func (s *Server) relayStatus(ctx context.Context, params []byte) {
	r, _ := ctx.Value(coreRelayKey{}).(*coreRelay)
	if r == nil || r.id.Load() == nil {
		return
	}
	var t mcptasks.Task
	if json.Unmarshal(params, &t) != nil || t.Status != tasks.Working || !r.fresh(t.StatusMessage) {
		return
	}
	rec, err := s.cfg.Tasks.Get(ctx, r.owner, *r.id.Load())
	if err != nil || rec.Status != tasks.Working {
		return
	}
	rec.StatusMessage = strings.ToValidUTF8(truncate(t.StatusMessage, maxRelayedMessage), "")
	rec.LastUpdatedAt = time.Now().UTC()
	s.notifyCore(rec, false) // before the call goes on: before the task's end is notified
}

// truncate returns the first n bytes of msg, or msg.
func truncate(msg string, n int) string {
	if len(msg) <= n {
		return msg
	}
	return msg[:n]
}
