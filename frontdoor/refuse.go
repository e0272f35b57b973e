// Package frontdoor is what stands between the socket and the front ends
// (the OpenTool API, Open Tool Calling, MCP, the status page): the
// request guard's refusals, written once in the wire format of the route
// a request asked for.
package frontdoor

import (
	"net/http"
	"strings"

	"github.com/opentool-host/opentool-host/httpapi"
	"github.com/opentool-host/opentool-host/internal/httpguard"
	"github.com/opentool-host/opentool-host/jsonrpc"
	"github.com/opentool-host/opentool-host/mcpapi"
	"github.com/opentool-host/opentool-host/otc"
)

// Refuse writes a request refused before any front end read it (status
// 403 or 415, see httpguard.RequestGuard) in the format of its route:
//   - /opentool/*: a JSON-RPC error response, code -32600 (httpapi);
//   - /otc/*: an OTC CallResponse with success false (otc);
//   - /mcp: a JSON-RPC error response with a null id, code -32600
//     (mcpapi);
//   - anything else: {"error":{"code":STATUS,"message":MSG}}.
func Refuse(w http.ResponseWriter, r *http.Request, status int, msg string) {
	p := r.URL.Path
	switch {
	case under(p, httpapi.BasePath):
		httpapi.WriteRefusal(w, status, msg)
	case under(p, otc.BasePath):
		otc.WriteRefusal(w, status, msg)
	case under(p, mcpapi.Path):
		mcpapi.WriteRefusal(w, status, jsonrpc.CodeInvalidRequest, msg)
	default:
		httpguard.WriteError(w, status, msg)
	}
}

// under reports whether path is base or below it.
func under(path, base string) bool {
	return path == base || strings.HasPrefix(path, base+"/")
}
