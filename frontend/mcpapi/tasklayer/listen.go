package tasklayer

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/json"
	"net/http"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/opentool-host/opentool-host/frontend/httpguard"
	"github.com/opentool-host/opentool-host/frontend/sse"
	"github.com/opentool-host/opentool-host/host/access"
	"github.com/opentool-host/opentool-host/host/tasks"
	"github.com/opentool-host/opentool-host/host/tasks/mcptasks"
	"github.com/opentool-host/opentool-host/protocol/mcpmethod"
)

// Task status notifications (extension, "Task Status Notifications") on
// subscriptions/listen streams.
//
// The MCP Go SDK serves subscriptions/listen (SEP-2575) for the list
// changes and resource updates it knows, and has no way to send a
// notification it does not define; its NotificationSubscriptions has no
// taskIds, so it drops them from the request and from its
// acknowledgement. The host does the rest around it, on the HTTP stream:
//
//   - Before the SDK reads a listen POST (Mcp-Method:
//     subscriptions/listen, one message), the front end's HTTP handler
//     gives its body to OpenListen, which reads
//     params.notifications.taskIds and, when the request's _meta declares the extension, agrees to
//     those of them that tasks/get would answer for the same API key and
//     whose end this replica sees (ended already, or running here; at
//     most maxListenTaskIDs); their ids are registered with the stream's
//     writer (taskListens).
//   - The receiving middleware (listenMiddleware) answers -32021 when the
//     request names taskIds without declaring the extension, and keeps
//     the stream open (the SDK ends one that agreed to nothing of its
//     own) until the client goes, the host shuts down, or every agreed
//     task has been notified ended.
//   - The stream's writer (the front end's, writing through the Listen) adds the
//     agreed ids to the SDK's notifications/subscriptions/acknowledged as
//     params.notifications.taskIds, and writes each notifications/tasks
//     after it. The SDK writes each event with one Write call, so an event
//     written between two of them under the same mutex is whole.
//   - tasks.Manager.Watch reports each task that ends on this replica;
//     the stream gets one notifications/tasks whose params are the task as
//     tasks/get returns it then (DetailedTask: result or error inlined).
//     A task that had already ended when the stream opened is notified
//     right after the acknowledgement.
//
// The host's tasks change status once (working to completed, failed or
// cancelled; never input_required), so each agreed task is notified
// once. A task still running on another replica that shares the task
// store is not agreed to here: only that replica sees it end.

// ListenHeader is the request header that carries a listen POST's token
// from OpenListen to listenMiddleware, which sees the request's headers
// (mcp.RequestExtra.Header) but not its context. The transport removes a
// client's own first.
const ListenHeader = "Opentool-Task-Listen"

// The methods of the listen stream.
const (
	methodListen          = mcpmethod.SubscriptionsListen
	methodListenAck       = mcpmethod.SubscriptionsAck
	methodTaskStatusNotif = mcpmethod.TasksNotify
)

// maxListenTaskIDs is the most task ids one listen stream is agreed to;
// more are left out of its acknowledgement (one API key holds at most
// tasks.DefaultMaxPerOwner tasks by default).
const maxListenTaskIDs = 100

// taskListens are the listen streams of one Layer that named task ids,
// by token and by task id.
type taskListens struct {
	mu      sync.Mutex
	byToken map[string]*Listen
	byTask  map[string]map[*Listen]struct{}
}

// Listen is one listen stream (a subscriptions/listen POST) that named
// task ids: the SDK's writes to the stream go through it (Write, Flush),
// with the task notifications between them.
type Listen struct {
	owner   string // the API key's name ("" without keys)
	token   string // ListenHeader's value
	optedIn bool   // the request's _meta declares the extension

	done    chan struct{} // closed when the POST ends
	allSent chan struct{} // closed once every agreed task was notified ended

	mu      sync.Mutex // guards the fields below and every write to w
	w       http.ResponseWriter
	d       time.Duration // write deadline of each write and flush
	ids     []string      // agreed task ids; final before the SDK runs
	acked   bool          // the SDK's acknowledgement is written
	closed  bool          // the stream ended, or a write failed
	sent    map[string]bool
	pending []tasks.Record // ended before the acknowledgement
}

// listenRequest is what the host reads of a subscriptions/listen
// request: the task ids it names and its _meta.
type listenRequest struct {
	Params struct {
		Meta          map[string]any `json:"_meta"`
		Notifications struct {
			TaskIDs []string `json:"taskIds"`
		} `json:"notifications"`
	} `json:"params"`
}

// OpenListen registers r, a listen POST whose body (its one JSON-RPC
// message, read whole) is body, for the tasks it names, writing to w with
// write deadline d, and returns its Listen: nil when it names none, or l
// is nil. Close it with CloseListen when the POST ends.
func (l *Layer) OpenListen(w http.ResponseWriter, r *http.Request, d time.Duration, body []byte) *Listen {
	if l == nil {
		return nil
	}
	var lr listenRequest
	if json.Unmarshal(body, &lr) != nil || len(lr.Params.Notifications.TaskIDs) == 0 {
		return nil
	}
	tl := &Listen{
		owner: access.GrantFrom(r.Context()).Name(), token: rand.Text(), optedIn: mcptasks.Allows(lr.Params.Meta),
		done: make(chan struct{}), allSent: make(chan struct{}), w: w, d: d, sent: map[string]bool{},
	}
	r.Header.Set(ListenHeader, tl.token)
	ls := &l.listens
	ls.mu.Lock()
	if ls.byToken == nil {
		ls.byToken, ls.byTask = map[string]*Listen{}, map[string]map[*Listen]struct{}{}
	}
	ls.byToken[tl.token] = tl
	ls.mu.Unlock()
	if !tl.optedIn {
		return tl // listenMiddleware refuses it
	}
	seen := map[string]bool{}
	for _, id := range lr.Params.Notifications.TaskIDs {
		if len(seen) == maxListenTaskIDs {
			break
		}
		if seen[id] || !tasks.ValidID(id) {
			continue
		}
		seen[id] = true
		// Registered before the look-up, so that an end between the two
		// is reported (and sent once: Listen.notify).
		ls.index(tl, id, true)
		rec, err := l.cfg.Tasks.Get(r.Context(), tl.owner, id)
		if err != nil || rec.Origin.FrontEnd != FrontEnd || !rec.Status.Terminal() && rec.Replica != l.cfg.Tasks.Replica() {
			// Not this key's MCP task, or one still running on another
			// replica, whose end only that replica reports: not agreed.
			ls.index(tl, id, false)
			continue
		}
		tl.mu.Lock()
		tl.ids = append(tl.ids, id)
		tl.mu.Unlock()
		if rec.Status.Terminal() {
			tl.notify(rec)
		}
	}
	return tl
}

// index adds tl to the streams of task id (add) or removes it.
func (l *taskListens) index(tl *Listen, id string, add bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	set := l.byTask[id]
	if add {
		if set == nil {
			set = map[*Listen]struct{}{}
			l.byTask[id] = set
		}
		set[tl] = struct{}{}
		return
	}
	delete(set, tl)
	if len(set) == 0 {
		delete(l.byTask, id)
	}
}

// CloseListen unregisters tl once its POST has ended: nothing more is
// written to it.
func (l *Layer) CloseListen(tl *Listen) {
	tl.mu.Lock()
	tl.closed = true
	ids := tl.ids
	tl.mu.Unlock()
	ls := &l.listens
	ls.mu.Lock()
	delete(ls.byToken, tl.token)
	ls.mu.Unlock()
	for _, id := range ids {
		ls.index(tl, id, false)
	}
	close(tl.done)
}

// taskEnded is the tasks.Manager.Watch hook: rec's streams each get its
// notification, each on a goroutine of its own (a slow client holds only
// its own stream, for at most the write deadline).
func (l *Layer) taskEnded(rec tasks.Record) {
	if rec.Origin.FrontEnd != FrontEnd {
		return
	}
	ls := &l.listens
	ls.mu.Lock()
	streams := make([]*Listen, 0, len(ls.byTask[rec.ID]))
	for tl := range ls.byTask[rec.ID] {
		if tl.owner == rec.Owner {
			streams = append(streams, tl)
		}
	}
	ls.mu.Unlock()
	for _, tl := range streams {
		go tl.notify(rec)
	}
}

// listenOf returns the Listen of a listen request (nil when it named
// no task ids).
func (l *Layer) listenOf(ctx context.Context, req mcp.Request) *Listen {
	extra := req.GetExtra()
	if extra == nil || extra.Header == nil {
		return nil
	}
	token := extra.Header.Get(ListenHeader)
	if token == "" {
		return nil
	}
	ls := &l.listens
	ls.mu.Lock()
	defer ls.mu.Unlock()
	tl := ls.byToken[token]
	if tl == nil || tl.owner != access.GrantFrom(ctx).Name() {
		return nil
	}
	return tl
}

// listenMiddleware serves the taskIds of a subscriptions/listen (see
// above): -32021 without the extension in the request's _meta ("Task
// Status Notifications", "Error Handling"); else the SDK's listen, and a
// stream that agreed to tasks stays open until the POST or the listen
// ends, or every agreed task has been notified ended.
func (l *Layer) listenMiddleware(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		if method != methodListen {
			return next(ctx, method, req)
		}
		tl := l.listenOf(ctx, req)
		if tl == nil {
			return next(ctx, method, req)
		}
		if !tl.optedIn {
			return nil, mcptasks.MissingCapability(methodListen)
		}
		res, err := next(ctx, method, req)
		tl.mu.Lock()
		agreed := len(tl.ids) > 0
		tl.mu.Unlock()
		if err != nil || !agreed {
			return res, err
		}
		select {
		case <-ctx.Done():
		case <-tl.done:
		case <-tl.allSent:
		}
		return res, err
	}
}

// notify sends rec, an ended task, on the stream once: at once when the
// acknowledgement is out, else right after it.
func (tl *Listen) notify(rec tasks.Record) {
	tl.mu.Lock()
	defer tl.mu.Unlock()
	if tl.closed || tl.sent[rec.ID] {
		return
	}
	tl.sent[rec.ID] = true
	if !tl.acked {
		tl.pending = append(tl.pending, rec)
		return
	}
	if frame, err := taskFrame(rec); err == nil && sse.Send(tl.w, http.NewResponseController(tl.w), frame, tl.d) != nil {
		tl.closed = true
	}
	tl.checkAllSent()
}

// taskFrame is rec's notifications/tasks event (sse.Note): params the
// DetailedTask.
func taskFrame(rec tasks.Record) ([]byte, error) {
	params, err := json.Marshal(rec.Detailed())
	if err != nil {
		return nil, err
	}
	return sse.Note(methodTaskStatusNotif, params), nil
}

// checkAllSent closes allSent once every agreed task has been notified.
// The caller holds tl.mu.
func (tl *Listen) checkAllSent() {
	if !tl.acked || len(tl.ids) == 0 || len(tl.sent) < len(tl.ids) {
		return
	}
	select {
	case <-tl.allSent:
	default:
		close(tl.allSent)
	}
}

// Write implements respond.Stream: p, one event the SDK wrote on the
// stream (response: the listen's handler has returned, marked by the
// front end's own receiving middleware, respond.Marks: p is its response,
// after which nothing of the host's is written), under the write
// deadline: its
// acknowledgement with the agreed task ids added, followed by the tasks
// that ended before it; the listen's response ends the stream.
func (tl *Listen) Write(p []byte, response bool) (int, error) {
	tl.mu.Lock()
	defer tl.mu.Unlock()
	httpguard.SetWriteDeadline(tl.w, tl.d)
	ack := !tl.acked && isAck(p)
	out := p
	if ack {
		out = withTaskIDs(p, tl.ids)
	}
	if _, err := tl.w.Write(out); err != nil {
		tl.closed = true
		return 0, err
	}
	switch {
	case ack:
		tl.acked = true
		// The SDK flushes after this write: the frames go out with it.
		for _, rec := range tl.pending {
			frame, err := taskFrame(rec)
			if err != nil {
				continue
			}
			if _, err := tl.w.Write(frame); err != nil {
				tl.closed = true
				break
			}
		}
		tl.pending = nil
		tl.checkAllSent()
	case response:
		tl.closed = true
	}
	return len(p), nil
}

// Flush flushes the stream under the write deadline.
func (tl *Listen) Flush() error {
	tl.mu.Lock()
	defer tl.mu.Unlock()
	httpguard.SetWriteDeadline(tl.w, tl.d)
	return http.NewResponseController(tl.w).Flush()
}

// isAck reports whether p is the event of the SDK's
// notifications/subscriptions/acknowledged.
func isAck(p []byte) bool {
	data := sse.Data(p)
	if data == nil || !bytes.Contains(data, []byte(methodListenAck)) {
		return false
	}
	var m struct {
		Method string `json:"method"`
	}
	return json.Unmarshal(data, &m) == nil && m.Method == methodListenAck
}

// withTaskIDs returns the acknowledgement event p with
// params.notifications.taskIds set to ids (extension, "Task Status
// Notifications": the ids the server agreed to); p as it is when ids is
// empty or p does not decode.
func withTaskIDs(p []byte, ids []string) []byte {
	data := sse.Data(p)
	if len(ids) == 0 || data == nil {
		return p
	}
	var msg map[string]json.RawMessage
	var params map[string]json.RawMessage
	notifs := map[string]json.RawMessage{}
	if json.Unmarshal(data, &msg) != nil || json.Unmarshal(msg["params"], &params) != nil {
		return p
	}
	if raw, ok := params["notifications"]; ok && json.Unmarshal(raw, &notifs) != nil {
		return p
	}
	var err error
	if notifs["taskIds"], err = json.Marshal(ids); err != nil {
		return p
	}
	if params["notifications"], err = json.Marshal(notifs); err != nil {
		return p
	}
	if msg["params"], err = json.Marshal(params); err != nil {
		return p
	}
	out, err := json.Marshal(msg)
	if err != nil {
		return p
	}
	head := p[:len(p)-len(data)-2]
	return append(append(append([]byte{}, head...), out...), "\n\n"...)
}
