package mcpapi

import (
	"context"
	"encoding/json"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/opentool-host/opentool-host/host"
)

// A call's messages (plugin protocol 3, host.Exchange): what a plugin
// says to the MCP client while its tool runs reaches that client, on the
// request's own stream, as if the plugin were the server:
//
//	plugin sends                      the client receives
//	notifications/progress            notifications/progress with the client's
//	                                  own progressToken (MCP "Utilities:
//	                                  Progress"); none when the client sent no
//	                                  token
//	notifications/message             notifications/message when its level is
//	                                  at or above the session's logging/setLevel
//	                                  (MCP "Server Utilities: Logging"; no level
//	                                  set: none, as the SDK's own servers do; a
//	                                  stateless request: info and above)
//	sampling/createMessage,           the same request to the client, whose
//	elicitation/create, roots/list    answer (or error) goes back to the plugin
//	                                  (MCP "Client Features"); a client without
//	                                  the capability, or a stateless /mcp
//	                                  request, is answered with the SDK's error
//
// The client's request _meta (progressToken, trace context, its own keys)
// goes to the plugin with the call.

// exchange returns the host.Exchange of tools/call req, whose handler
// runs with ctx. stream is true for a streaming function, whose progress
// the handler reports itself (one notification per item): the plugin's
// own progress is then dropped.
func (s *Server) exchange(ctx context.Context, req *mcp.CallToolRequest, stream bool) *host.Exchange {
	x := &host.Exchange{}
	if meta := req.Params.GetMeta(); len(meta) > 0 {
		x.Meta, _ = json.Marshal(meta) // decoded JSON: encodes
	}
	ss := req.Session
	if ss == nil {
		return x
	}
	token := req.Params.GetProgressToken()
	x.Notify = func(method string, params []byte) {
		switch method {
		case "notifications/progress":
			var p mcp.ProgressNotificationParams
			if token == nil || stream || json.Unmarshal(params, &p) != nil {
				return
			}
			p.ProgressToken = token
			_ = ss.NotifyProgress(ctx, &p) // advisory: a client gone ends the call through ctx
		case "notifications/message":
			var p mcp.LoggingMessageParams
			if json.Unmarshal(params, &p) != nil {
				return
			}
			_ = ss.Log(ctx, &p)
		}
	}
	return x
}
