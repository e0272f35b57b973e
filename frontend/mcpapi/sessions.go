package mcpapi

import (
	"context"
	"fmt"
	"net/http"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/opentool-host/opentool-host/host/access"
)

// Defaults of the session caps (--mcp-max-sessions,
// --mcp-max-sessions-per-key, --mcp-session-idle). One key may hold a
// tenth of the host's sessions: an agent needs one per connection it
// keeps, rarely more than a few, and ten keys at their cap still leave
// the host room.
const (
	DefaultMaxSessions       = 1000
	DefaultMaxSessionsPerKey = 100
	DefaultSessionIdle       = 10 * time.Minute
)

// sessionSlots counts the MCP sessions held (HTTPOptions.Sessions),
// overall and per API key. A slot is taken before the SDK sees an
// initialize, so that concurrent initializes cannot overshoot a cap, and
// given back when the SDK opened no session for it or when that session
// ends: closed by its client (DELETE), idle for SessionIdle, or closed
// because its key was revoked (hold). Without API keys there is one
// caller, and only the host's cap applies.
type sessionSlots struct {
	max, perKey int
	idle        time.Duration

	mu    sync.Mutex
	total int
	byKey map[string]int
}

// acquire takes a slot for the caller of grant g (nil: keys off), or
// returns the status and message of the refusal: 429 over the key's cap,
// 503 over the host's.
func (c *sessionSlots) acquire(g *access.Grant) (int, string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if g != nil && c.byKey[g.Name()] >= c.perKey {
		return http.StatusTooManyRequests, fmt.Sprintf("too many MCP sessions for this API key: %d (--mcp-max-sessions-per-key); end one (DELETE) or let one idle out (--mcp-session-idle %v)", c.perKey, c.idle)
	}
	if c.total >= c.max {
		return http.StatusServiceUnavailable, fmt.Sprintf("too many MCP sessions: %d (--mcp-max-sessions); idle ones close after %v", c.max, c.idle)
	}
	c.total++
	if g != nil {
		c.byKey[g.Name()]++
	}
	return 0, ""
}

// release gives back a slot of g's caller.
func (c *sessionSlots) release(g *access.Grant) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.total--
	if g == nil {
		return
	}
	if c.byKey[g.Name()]--; c.byKey[g.Name()] <= 0 {
		delete(c.byKey, g.Name())
	}
}

// hold keeps the slot acquire took for an initialize the SDK has
// answered on w: while the session it opened (the response's
// Mcp-Session-Id) lives, closing that session when g is revoked
// (access.UntilRevoked); at once when it opened none (a refused or failed
// initialize).
func (h *HTTPHandler) hold(w http.ResponseWriter, g *access.Grant) {
	ss := h.s.session(w.Header().Get("Mcp-Session-Id"))
	if ss == nil {
		h.slots.release(g)
		return
	}
	life, done := access.UntilRevoked(access.WithGrant(context.Background(), g))
	stop := context.AfterFunc(life, func() {
		h.s.endAsks(ss.ID(), g)
		_ = ss.Close()
	})
	go func() {
		_ = ss.Wait() // DELETE, the idle timer, revocation, shutdown
		stop()
		done()
		h.slots.release(g)
	}()
}

// session returns the session the SDK server holds under id, or nil.
func (s *Server) session(id string) *mcp.ServerSession {
	if id == "" {
		return nil
	}
	for ss := range s.srv.Sessions() {
		if ss.ID() == id {
			return ss
		}
	}
	return nil
}
