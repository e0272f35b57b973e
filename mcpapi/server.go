package mcpapi

import (
	"context"
	"sync"

	"github.com/hashicorp/go-hclog"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/opentool-host/opentool-host/host"
	"github.com/opentool-host/opentool-host/internal/version"
)

// Config configures a Server. Zero fields take the defaults listed.
type Config struct {
	// MaxResultBytes caps the JSON a streaming function's collected items
	// may add up to, in bytes; past it the call ends with an isError
	// result. Default host.DefaultMaxResultBytes (16 MiB).
	MaxResultBytes int64
	// Logger receives tool-list changes and definitions that could not be
	// converted. Default: hclog.NewNullLogger().
	Logger hclog.Logger
}

// Server is an MCP server whose tools are the functions a host serves.
// Create it with New; it is safe for concurrent use.
type Server struct {
	h   *host.Host
	cfg Config
	srv *mcp.Server

	mu    sync.Mutex        // one sync at a time; guards tools
	tools map[string]string // served tool name → fingerprint
}

// New returns a Server for h with the tools h serves now. Call Follow to
// keep the tools in step with h.
func New(h *host.Host, cfg Config) *Server {
	if cfg.MaxResultBytes <= 0 {
		cfg.MaxResultBytes = host.DefaultMaxResultBytes
	}
	if cfg.Logger == nil {
		cfg.Logger = hclog.NewNullLogger()
	}
	s := &Server{h: h, cfg: cfg, tools: map[string]string{}}
	s.srv = mcp.NewServer(&mcp.Implementation{Name: "opentool-host", Version: version.Version}, &mcp.ServerOptions{
		// Tools come and go with plugins, so clients are told to expect
		// tools/list_changed even while none are served.
		Capabilities: &mcp.ServerCapabilities{Tools: &mcp.ToolCapabilities{ListChanged: true}},
	})
	s.sync()
	return s
}

// MCP returns the SDK server, for a transport (Run) or an HTTP handler.
func (s *Server) MCP() *mcp.Server { return s.srv }

// Run serves one MCP session on t (for example &mcp.StdioTransport{})
// until the client disconnects or ctx ends. Errors: those of the SDK's
// Server.Run.
func (s *Server) Run(ctx context.Context, t mcp.Transport) error { return s.srv.Run(ctx, t) }

// Follow keeps the tools in step with the host until ctx ends: after each
// host change it adds new and changed tools and removes gone ones; the
// SDK then sends notifications/tools/list_changed to every session.
func (s *Server) Follow(ctx context.Context) {
	for {
		changed := s.h.Changed()
		s.sync()
		select {
		case <-ctx.Done():
			return
		case <-changed:
		}
	}
}

// sync brings the tool list in line with the host's functions.
func (s *Server) sync() {
	s.mu.Lock()
	defer s.mu.Unlock()
	seen := map[string]bool{}
	for _, fi := range s.h.Functions() {
		t, err := toolOf(fi)
		if err != nil {
			s.cfg.Logger.Error("function not served over MCP: its parameters do not convert", "plugin", fi.Plugin, "error", err)
			continue
		}
		seen[t.Name] = true
		fp := fingerprint(t)
		if s.tools[t.Name] == fp {
			continue
		}
		s.tools[t.Name] = fp
		s.srv.AddTool(t, s.handler(t.Name))
		s.cfg.Logger.Debug("MCP tool served", "tool", t.Name, "plugin", fi.Plugin)
	}
	var gone []string
	for name := range s.tools {
		if !seen[name] {
			gone = append(gone, name)
			delete(s.tools, name)
		}
	}
	if len(gone) > 0 {
		s.srv.RemoveTools(gone...)
		s.cfg.Logger.Debug("MCP tools removed", "tools", gone)
	}
}
