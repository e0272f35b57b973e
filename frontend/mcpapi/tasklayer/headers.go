package tasklayer

import (
	"encoding/json"
	"fmt"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"

	"github.com/opentool-host/opentool-host/host/tasks/mcptasks"
	"github.com/opentool-host/opentool-host/internal/mcpsession"
	"github.com/opentool-host/opentool-host/internal/strictjson"
)

// CodeHeaderMismatch is the JSON-RPC error of a request whose standard
// MCP headers disagree with its body (MCP 2026-07-28, SEP-2243).
const CodeHeaderMismatch = -32020

// CheckTaskName returns the error (CodeHeaderMismatch) refusing a
// tasks/get, tasks/update or tasks/cancel (method) of MCP 2026-07-28 or
// later (version: its MCP-Protocol-Version header) whose Mcp-Name header
// (name) names another task than its params.taskId: a proxy or load
// balancer routes by the header, so a request whose header and body
// disagree could be served for one task and routed as another (SEP-2663).
// The transport answers it with HTTP 400 and the request's id. The SDK
// checks the header of tools/call, resources/read and prompts/get; the
// tasks methods are the host's. body returns the request's body (one
// JSON-RPC message) and whether it was read whole; it is called only for
// a request the check is for. A request without the header, of an older
// revision, or whose body was not read whole gets nil.
func CheckTaskName(method, version, name string, body func() ([]byte, bool)) *jsonrpc.Error {
	if version < mcpsession.SessionlessRevision || name == "" {
		return nil
	}
	switch method {
	case mcptasks.MethodGet, mcptasks.MethodUpdate, mcptasks.MethodCancel:
	default:
		return nil
	}
	b, complete := body()
	if !complete {
		return nil
	}
	var id string
	raw := strictjson.Member(b, "params", "taskId")
	if raw != nil && json.Unmarshal(raw, &id) == nil && id == name {
		return nil
	}
	if raw == nil {
		raw = []byte("(none)")
	}
	return &jsonrpc.Error{Code: CodeHeaderMismatch,
		Message: fmt.Sprintf("header mismatch: Mcp-Name header value %q does not match params.taskId %s", name, raw)}
}
