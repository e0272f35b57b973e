package mcpapi

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"sync"

	"github.com/opentool-host/opentool-host/access"
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

// callKey names one call: the API key's name ("" without keys) and the
// request id as its JSON text (7 and "7" are different ids).
type callKey struct{ key, id string }

// envelope is what the cancel registry reads of one JSON-RPC message.
type envelope struct {
	Method string          `json:"method"`
	ID     json.RawMessage `json:"id"`
	Params struct {
		RequestID json.RawMessage `json:"requestId"`
	} `json:"params"`
}

// track handles r's one message, if it is a tools/call with an id (r gets
// a context the registry can cancel; release forgets it when the POST
// ends) or a notifications/cancelled (the named call of the same key is
// cancelled). Batches and other messages pass as they are.
func (f *inflight) track(r *http.Request) (_ *http.Request, release func()) {
	release = func() {}
	if r.Method != http.MethodPost || r.Body == nil {
		return r, release
	}
	body, err := io.ReadAll(r.Body) // checkEnvelope bounded it
	r.Body = io.NopCloser(bytes.NewReader(body))
	var m envelope
	if err != nil || json.Unmarshal(body, &m) != nil {
		return r, release
	}
	key := access.GrantFrom(r.Context()).Name()
	switch {
	case m.Method == "tools/call" && len(m.ID) > 0:
		ck := callKey{key, string(m.ID)}
		ctx, cancel := context.WithCancel(r.Context())
		f.mu.Lock()
		if f.calls == nil {
			f.calls = map[callKey]context.CancelFunc{}
		}
		f.calls[ck] = cancel
		f.mu.Unlock()
		return r.WithContext(ctx), func() {
			f.mu.Lock()
			delete(f.calls, ck)
			f.mu.Unlock()
			cancel()
		}
	case m.Method == "notifications/cancelled" && len(m.Params.RequestID) > 0:
		f.mu.Lock()
		cancel := f.calls[callKey{key, string(m.Params.RequestID)}]
		f.mu.Unlock()
		if cancel != nil {
			cancel()
		}
	}
	return r, release
}
