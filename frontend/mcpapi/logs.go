package mcpapi

import (
	"context"
	"encoding/json"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/opentool-host/opentool-host/host/access"
)

// A plugin's log messages sent outside any call (a declared MCP server's,
// host.Host.OnLogMessage) reach every session whose client asked for log
// messages (logging/setLevel), at or above its level (the SDK's
// ServerSession.Log filters), when the session's key may see the whole
// plugin (access.Grant.AllowsPlugin). Messages sent during a call go to
// the caller of that call (exchange.go). Without sessions (stateless
// requests) there is no session to send them on.

// logSessions are the sessions that set a log level, with their key's
// grant (nil without keys).
type logSessions struct {
	mu     sync.Mutex
	grants map[*mcp.ServerSession]*access.Grant
}

// asked reports whether ss asked for log messages (logging/setLevel).
func (l *logSessions) asked(ss *mcp.ServerSession) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	_, ok := l.grants[ss]
	return ok
}

// logSendTimeout bounds sending one log message to one session.
const logSendTimeout = time.Second

// noteLogLevel records that req's session asked for log messages with
// grant g.
func (s *Server) noteLogLevel(req mcp.Request, g *access.Grant) {
	ss, ok := req.GetSession().(*mcp.ServerSession)
	if !ok || ss == nil {
		return
	}
	s.logs.mu.Lock()
	defer s.logs.mu.Unlock()
	if s.logs.grants == nil {
		s.logs.grants = map[*mcp.ServerSession]*access.Grant{}
	}
	s.logs.grants[ss] = g
}

// logMessage sends plugin's log message (the params of
// notifications/message) to the sessions that asked for it and may see
// the plugin, forgetting the sessions that ended.
func (s *Server) logMessage(plugin string, params json.RawMessage) {
	var p mcp.LoggingMessageParams
	if json.Unmarshal(params, &p) != nil {
		return
	}
	live := map[*mcp.ServerSession]bool{}
	for ss := range s.srv.Sessions() {
		live[ss] = true
	}
	var to []*mcp.ServerSession
	s.logs.mu.Lock()
	for ss, g := range s.logs.grants {
		switch {
		case !live[ss]:
			delete(s.logs.grants, ss)
		case g.AllowsPlugin(plugin):
			to = append(to, ss)
		}
	}
	s.logs.mu.Unlock()
	for _, ss := range to {
		ctx, cancel := context.WithTimeout(s.down, logSendTimeout)
		_ = ss.Log(ctx, &p)
		cancel()
	}
}
