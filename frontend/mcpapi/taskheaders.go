package mcpapi

import (
	"encoding/json"
	"fmt"
	"net/http"

	"github.com/opentool-host/opentool-host/host/tasks/mcptasks"
	"github.com/opentool-host/opentool-host/internal/strictjson"
)

// codeHeaderMismatch is the JSON-RPC error of a request whose standard
// MCP headers disagree with its body (MCP 2026-07-28, SEP-2243).
const codeHeaderMismatch = -32020

// checkTaskName refuses, with HTTP 400 and -32020, a tasks/get,
// tasks/update or tasks/cancel of MCP 2026-07-28 or later
// (MCP-Protocol-Version) whose Mcp-Name header names another task than
// its params.taskId: a proxy or load balancer routes by the header, so a
// request whose header and body disagree could be served for one task and
// routed as another (SEP-2663). The SDK checks the header of tools/call,
// resources/read and prompts/get; the tasks methods are the host's. The
// refusal answers the request's id. A request without the header, or of
// an older revision, passes.
func checkTaskName(r *http.Request, m *message, maxBody int64) *envelopeError {
	if m == nil || r.Header.Get("MCP-Protocol-Version") < firstSessionlessRevision {
		return nil
	}
	switch m.method {
	case mcptasks.MethodGet, mcptasks.MethodUpdate, mcptasks.MethodCancel:
	default:
		return nil
	}
	name := r.Header.Get("Mcp-Name")
	if name == "" {
		return nil
	}
	body, complete := bufferBody(r, maxBody)
	if !complete {
		return nil
	}
	var id string
	raw := strictjson.Member(body, "params", "taskId")
	if raw != nil && json.Unmarshal(raw, &id) == nil && id == name {
		return nil
	}
	if raw == nil {
		raw = []byte("(none)")
	}
	return &envelopeError{http.StatusBadRequest, codeHeaderMismatch,
		fmt.Sprintf("header mismatch: Mcp-Name header value %q does not match params.taskId %s", name, raw)}
}
