package mcpapi

import (
	"context"
	"net/http"
	"sync"

	"github.com/opentool-host/opentool-host/frontend/mcpapi/envelope"
	"github.com/opentool-host/opentool-host/host/access"
	"github.com/opentool-host/opentool-host/protocol/mcpmethod"
)

// Without sessions (--mcp-stateless) the MCP SDK cannot tie a
// notifications/cancelled to the call it names: the notification comes on
// a POST of its own. The host can, when both reach the same replica: the
// calls in flight are kept by the API key that made them and their
// JSON-RPC id (MCP "Cancellation": requestId), and a notification from the
// same key cancels the call it names. A notification naming no call in
// flight here is accepted and does nothing, as the spec allows.

// inflight is the stateless calls in flight of one Server.
type inflight struct {
	mu    sync.Mutex
	calls map[callKey]context.CancelFunc
}

// callKey names one call: the API key's name ("" without keys), the
// session it was made on ("" without sessions) and the request id as its
// JSON text (7 and "7" are different ids).
type callKey struct{ key, session, id string }

// track handles r's one message m (envelope.Check read it; nil for a
// batch) on session ("" without sessions: the stateless calls; with
// sessions, the calls the host answers itself, fastcall.go): if it is a
// tools/call with an id, r gets a context the registry can cancel
// (release forgets it when the POST ends); if it is a
// notifications/cancelled, the named call of the same key and session is
// cancelled. Batches and other messages pass as they are.
func (f *inflight) track(r *http.Request, m *envelope.Message, session string) (_ *http.Request, release func()) {
	release = func() {}
	if m == nil {
		return r, release
	}
	switch {
	case m.Method == mcpmethod.ToolsCall && len(m.ID) > 0:
		ctx, release := f.call(r.Context(), m.ID, session)
		return r.WithContext(ctx), release
	case m.Method == mcpmethod.Cancelled && len(m.RequestID) > 0:
		f.mu.Lock()
		cancel := f.calls[callKey{access.GrantFrom(r.Context()).Name(), session, string(m.RequestID)}]
		f.mu.Unlock()
		if cancel != nil {
			cancel()
		}
	}
	return r, release
}

// call keeps the tools/call id (its JSON text) of the API key of ctx
// (its grant) on session in flight: ctx gets a context the registry can
// cancel, and release forgets the call and cancels that context.
func (f *inflight) call(ctx context.Context, id []byte, session string) (_ context.Context, release func()) {
	ck := callKey{access.GrantFrom(ctx).Name(), session, string(id)}
	ctx, cancel := context.WithCancel(ctx)
	f.mu.Lock()
	if f.calls == nil {
		f.calls = map[callKey]context.CancelFunc{}
	}
	f.calls[ck] = cancel
	f.mu.Unlock()
	return ctx, func() {
		f.mu.Lock()
		delete(f.calls, ck)
		f.mu.Unlock()
		cancel()
	}
}

// endSession cancels every call of API key name in flight on session (its
// DELETE: the SDK ends the calls it holds as it closes the session).
func (f *inflight) endSession(key, session string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for ck, cancel := range f.calls {
		if ck.session == session && ck.key == key {
			cancel()
		}
	}
}
