package mcpapi

import (
	"context"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// On stdio the client is the host's only one (Config.Sole): once it
// initialized, its session is the declared MCP servers' client outside
// calls (mcpsession.Sole: a server's roots/list at its start or after
// notifications/roots/list_changed gets this client's roots), and its
// notifications/roots/list_changed reach every server.

// soleInitialized makes the stdio client that sent notifications/initialized
// s.cfg.Sole's session, until its session ends.
func (s *Server) soleInitialized(_ context.Context, req *mcp.InitializedRequest) {
	ss := req.Session
	if ss == nil || ss.ID() != "" || !s.chans.OnStdio() || ss.InitializeParams() == nil {
		return
	}
	done := make(chan struct{})
	ending, end := context.WithCancel(context.Background())
	s.cfg.Sole.Set(s.sessionFor(ss, "", done, ending))
	go func() {
		_ = ss.Wait()
		end()
		close(done)
	}()
}

// soleRootsChanged passes the stdio client's
// notifications/roots/list_changed on to every server (s.cfg.Sole).
func (s *Server) soleRootsChanged(_ context.Context, req *mcp.RootsListChangedRequest) {
	if ss := req.Session; ss != nil && ss.ID() == "" && s.chans.OnStdio() {
		s.cfg.Sole.RootsChanged()
	}
}
