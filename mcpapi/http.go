package mcpapi

import (
	"net/http"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Path is where the streamable HTTP endpoint is mounted.
const Path = "/mcp"

// HTTPOptions tunes Handler.
type HTTPOptions struct {
	// Sessions keeps MCP sessions (Mcp-Session-Id, a GET stream for
	// server notifications) for clients of protocol revisions before
	// 2026-07-28 that want tools/list_changed pushed. Off (default): the
	// endpoint is stateless, so any replica behind a load balancer can
	// answer any request; clients of 2026-07-28 and later still get
	// list_changed over subscriptions/listen, older ones are answered
	// request by request.
	Sessions bool
	// MaxBodyBytes caps a request body, in bytes (default the SDK's,
	// 4 MiB); a larger body is answered 413.
	MaxBodyBytes int64
}

// Handler returns the MCP streamable-HTTP endpoint (MCP "Transports",
// streamable HTTP) for s. Calls end when their HTTP request does (on
// 2026-07-28 and later) or on notifications/cancelled; the host then
// cancels them in the plugin. Authentication is the caller's: wrap it
// with httpguard.RequireAPIKey.
func (s *Server) Handler(o HTTPOptions) http.Handler {
	return mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s.srv }, &mcp.StreamableHTTPOptions{
		Stateless:                    !o.Sessions,
		PropagateRequestCancellation: true,
		MaxRequestBodyBytes:          o.MaxBodyBytes,
	})
}
