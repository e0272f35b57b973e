package mcpapi

import (
	"context"
	"encoding/json"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/opentool-host/opentool-host/internal/mcpsession"
)

// Each MCP session with an Mcp-Session-Id has one mcpsession.Session,
// made at its first tools/call, logging/setLevel or resources/subscribe
// and put on the context of its tools/calls and resources/subscribe and
// unsubscribe (withClient): a declared MCP server gives
// that client an upstream session of its own (mcpadapter, sessions.go).
// The identity is the SDK's *mcp.ServerSession the request came on,
// never anything in the request. Stateless requests and sessions of
// 2026-07-28 clients without an id carry none (the shared session).

// clientSessions maps each live SDK session to its mcpsession.Session.
type clientSessions struct {
	mu sync.Mutex
	by map[*mcp.ServerSession]*mcpsession.Session
}

// withClient returns ctx carrying ss's mcpsession.Session, ctx itself
// for a request without a session id.
func (s *Server) withClient(ctx context.Context, ss *mcp.ServerSession) context.Context {
	if c := s.client(ss); c != nil {
		return mcpsession.With(ctx, c)
	}
	return ctx
}

// noteClientLevel records logging/setLevel req's level on its session's
// mcpsession.Session.
func (s *Server) noteClientLevel(req mcp.Request) {
	ss, _ := req.GetSession().(*mcp.ServerSession)
	p, _ := req.GetParams().(*mcp.SetLoggingLevelParams)
	if c := s.client(ss); c != nil && p != nil {
		c.SetLevel(p.Level)
	}
}

// client returns ss's mcpsession.Session, made on first use and
// forgotten when ss ends; nil for no session or one without an id.
func (s *Server) client(ss *mcp.ServerSession) *mcpsession.Session {
	if ss == nil || ss.ID() == "" || ss.InitializeParams() == nil {
		return nil
	}
	s.clients.mu.Lock()
	defer s.clients.mu.Unlock()
	if c := s.clients.by[ss]; c != nil {
		return c
	}
	if s.clients.by == nil {
		s.clients.by = map[*mcp.ServerSession]*mcpsession.Session{}
	}
	done := make(chan struct{})
	c := &mcpsession.Session{
		ID:   ss.ID(),
		Init: ss.InitializeParams(),
		Done: done,
		Ask: func(ctx context.Context, method string, params json.RawMessage) (json.RawMessage, error) {
			if err := canAsk(ss, method, false); err != nil {
				return nil, err
			}
			res, err := ask(ctx, ss, method, params)
			if err != nil {
				return nil, rpcError(method, err)
			}
			return json.Marshal(res)
		},
		Log:     func(ctx context.Context, p *mcp.LoggingMessageParams) { _ = ss.Log(ctx, p) },
		Updated: func(ctx context.Context, uri string) { s.ownUpdated(ctx, ss, uri) },
	}
	s.clients.by[ss] = c
	go func() {
		_ = ss.Wait()
		s.clients.mu.Lock()
		delete(s.clients.by, ss)
		s.clients.mu.Unlock()
		close(done)
	}()
	return c
}
