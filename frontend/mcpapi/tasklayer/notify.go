package tasklayer

import (
	"context"
	"encoding/json"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"golang.org/x/time/rate"

	"github.com/opentool-host/opentool-host/host/tasks"
	"github.com/opentool-host/opentool-host/host/tasks/mcptasks"
)

// notifications/tasks/status of the core tasks (MCP 2025-11-25, "Task
// Status Notification": a Task whose status changed, sent to the
// requestor; optional, clients poll tasks/get all the same).
//
// The MCP Go SDK v1.8.0 sends only the notifications it defines
// (ServerSession's sending methods are fixed), so the front end writes
// this one around it, as it writes the extension's notifications/tasks on
// a listen stream (listen.go), onto the session's own channel to its
// client (Channels):
//
//	transport           where the notification goes
//	/mcp with sessions  the session's standalone GET stream (the one the
//	                    SDK accepted: 200, no Last-Event-ID), as one SSE
//	                    event written between the SDK's, under the
//	                    stream's mutex. A session with no GET stream open
//	                    then gets none: clients poll
//	stdio               the client's connection: one JSON-RPC message
//	                    written by the SDK's own writer, which serializes
//	                    writes
//	stateless /mcp      none: no session, no stream to carry it
//
// A core task records, when it is created (callAsCoreTask), the session
// that created it and its API key; when the task changes status on this
// replica (tasks.Manager.Watch: working to completed, failed or
// cancelled; the host's tasks never ask for input) the session gets one
// notification, the Task as tasks/get answers it then, on a stream opened
// by the same API key only. A task's call that runs a declared MCP
// server's task relays that server's own status notifications while the
// task works (RelayStatus): the same Task, working, with the server's
// statusMessage.

// Sink is one channel to a client outside a request.
type Sink interface {
	// Note writes the JSON-RPC notification of method with params (a
	// JSON object) to the client. Errors: the stream has ended, the
	// client is gone or too slow.
	Note(method string, params json.RawMessage) error
}

// Channels are the front end's channels to its clients outside a
// request, by session.
type Channels interface {
	// Sinks returns where a notification to session (its
	// Mcp-Session-Id; "" for the stdio client) goes now: the stdio
	// client, or the session's open streams opened by API key owner
	// ("" without keys); none when it has none open.
	Sinks(session, owner string) []Sink
	// OnStdio reports whether the front end serves its one client on
	// stdio.
	OnStdio() bool
}

// noteTarget is the session a core task notifies: its Mcp-Session-Id
// ("" for the stdio client) and the API key that created the task.
type noteTarget struct {
	session, owner string
}

// coreNotes are the sessions of the core tasks that notify one, by task
// id.
type coreNotes struct {
	mu    sync.Mutex
	tasks map[string]noteTarget
}

// follow records that core task id, created by tools/call on ss for
// owner, notifies ss; nothing for a session without a channel to its
// client (stateless /mcp).
func (l *Layer) follow(ss *mcp.ServerSession, owner, id string) {
	var t noteTarget
	switch {
	case l.cfg.Channels.OnStdio():
		t = noteTarget{owner: owner}
	case ss != nil && ss.ID() != "":
		t = noteTarget{session: ss.ID(), owner: owner}
	default:
		return
	}
	n := &l.notes
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.tasks == nil {
		n.tasks = map[string]noteTarget{}
	}
	n.tasks[id] = t
}

// sinks returns the sinks of task id's session (none when it has none
// open, or the task notifies none); end forgets the task.
func (l *Layer) sinks(id string, end bool) []Sink {
	n := &l.notes
	n.mu.Lock()
	t, ok := n.tasks[id]
	if ok && end {
		delete(n.tasks, id)
	}
	n.mu.Unlock()
	if !ok {
		return nil
	}
	return l.cfg.Channels.Sinks(t.session, t.owner)
}

// notifyCore sends notifications/tasks/status with rec, a core task as
// now, to the session that created it: with async each sink on a
// goroutine of its own (a slow client holds only its own stream), else
// in turn before it returns. A terminal rec is the task's last.
func (l *Layer) notifyCore(rec tasks.Record, async bool) {
	sinks := l.sinks(rec.ID, rec.Status.Terminal())
	if len(sinks) == 0 {
		return
	}
	params, err := json.Marshal(mcptasks.CoreTask(rec))
	if err != nil {
		return
	}
	for _, sk := range sinks {
		send := func() {
			if err := sk.Note(mcptasks.MethodStatusNote, params); err != nil {
				l.cfg.Logger.Debug("notifications/tasks/status not delivered", "task", rec.ID, "error", err)
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
func (l *Layer) coreTaskEnded(rec tasks.Record) {
	if rec.Origin.FrontEnd == FrontEndCore {
		l.notifyCore(rec, true)
	}
}

// maxRelayedMessage is the most bytes of a server's statusMessage relayed
// (RelayStatus); a longer one is cut, on a UTF-8 boundary.
const maxRelayedMessage = 1 << 10

// coreRelayKey is the context key of a core task's coreRelay.
type coreRelayKey struct{}

// relayRate and relayBurst bound the statuses relayed for one core task
// (RelayStatus), per second and at once: past them a status is dropped,
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

// RelayStatus sends, on the call's goroutine, for a core task's call
// (ctx: the call's) whose plugin (a declared MCP server's task,
// mcpadapter) told a status (params: the server's Task, the params of
// its notifications/tasks/status), the host task as stored, still
// working, with the server's statusMessage (at most 1 KiB); only a
// message that differs from the last relayed, at most 10 a second;
// nothing for any other call, status or task, nor on a nil Layer.
func (l *Layer) RelayStatus(ctx context.Context, params []byte) {
	if l == nil {
		return
	}
	r, _ := ctx.Value(coreRelayKey{}).(*coreRelay)
	if r == nil || r.id.Load() == nil {
		return
	}
	var t mcptasks.Task
	if json.Unmarshal(params, &t) != nil || t.Status != tasks.Working || !r.fresh(t.StatusMessage) {
		return
	}
	rec, err := l.cfg.Tasks.Get(ctx, r.owner, *r.id.Load())
	if err != nil || rec.Status != tasks.Working {
		return
	}
	rec.StatusMessage = strings.ToValidUTF8(truncate(t.StatusMessage, maxRelayedMessage), "")
	rec.LastUpdatedAt = time.Now().UTC()
	l.notifyCore(rec, false) // before the call goes on: before the task's end is notified
}

// truncate returns the first n bytes of msg, or msg.
func truncate(msg string, n int) string {
	if len(msg) <= n {
		return msg
	}
	return msg[:n]
}
