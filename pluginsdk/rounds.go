package pluginsdk

import (
	"context"
	"encoding/json"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/opentool-host/opentool-host/internal/wire"
)

// Multi-round-trip requests (MCP 2026-07-28, SEP-2322), the plugin's own
// (docs/writing-plugins.md): instead of asking its client during the call
// (Elicit, CreateMessage, ListRoots), a function made with ResultFunc
// returns InputRequired: the requests to the client under keys it names,
// several at once, and a requestState of its own. The host answers an
// MCP client of 2026-07-28 with that round as written; for a client of
// an earlier revision with a session it sends each request to the client
// itself. Either way the function is called again with the same
// arguments and the client's answers: InputResponses and RequestState
// read them from its context. The host never reads requestState: a
// function that keeps anything in it signs it (and refuses a changed one
// with RefuseRetry).
//
// A prompts/get of a Cataloger does the same in its own terms: its params
// (mcp.GetPromptParams) carry InputResponses and RequestState, and an
// *mcp.GetPromptResult with InputRequests (and no Messages) is its round.

// InputRequired returns the input_required result of a round: requests
// by the keys the function names (*mcp.ElicitParams for
// elicitation/create, *mcp.CreateMessageParams or
// *mcp.CreateMessageWithToolsParams for sampling/createMessage,
// *mcp.ListRootsParams for roots/list) and state, the requestState the
// client sends back with its answers ("" for none; at most what fits in
// a request, opaque to the host). An empty requests asks nothing: MCP's
// "retry later". Callers that are not MCP clients (OpenTool, Open Tool
// Calling) get a tool error instead.
func InputRequired(requests mcp.InputRequestMap, state string) *mcp.CallToolResult {
	if requests == nil {
		requests = mcp.InputRequestMap{}
	}
	return &mcp.CallToolResult{InputRequests: requests, RequestState: state}
}

// InputResponses returns the client's answers to the function's last
// round, by the keys of its inputRequests (*mcp.ElicitResult,
// *mcp.CreateMessageResult or *mcp.ListRootsResult, as the answer's
// members say), when the call ctx belongs to is a retry; nil when it is
// not (a first call, a caller that is not an MCP client, a host of
// protocol 2). A key the function did not ask for may be there (ignore
// it), one it asked for may be missing (ask again); an answer that does
// not decode is an error (code 400: the client's fault).
func InputResponses(ctx context.Context) (mcp.InputResponseMap, error) {
	raw := metaMember(ctx, wire.MetaInputResponses)
	if raw == nil {
		return nil, nil
	}
	var m mcp.InputResponseMap
	if err := json.Unmarshal(raw, &m); err != nil {
		return nil, InvalidArguments("inputResponses: %v", err)
	}
	if m == nil {
		m = mcp.InputResponseMap{}
	}
	return m, nil
}

// RequestState returns the requestState of the retry the call ctx
// belongs to, as the client sent it back ("" for none): the function's
// own from its last round, or whatever a client made of it.
func RequestState(ctx context.Context) string {
	var s string
	if raw := metaMember(ctx, wire.MetaRequestState); raw != nil {
		_ = json.Unmarshal(raw, &s) // the host writes a JSON string
	}
	return s
}

// RefuseRetry returns the error of a function that refuses a retry (a
// requestState it did not write, or one that expired): the MCP client
// gets JSON-RPC error -32602 (invalid params) with the formatted message
// instead of a result. Returned from a call that is not a retry it is an
// ordinary tool error with that code.
func RefuseRetry(format string, args ...any) *Error {
	return Errorf(CodeRefusedRetry, format, args...)
}

// CodeRefusedRetry is RefuseRetry's code, JSON-RPC's invalid params.
const CodeRefusedRetry = -32602

// metaMember returns member name of the call's meta (CallerMeta) as JSON,
// nil when absent.
func metaMember(ctx context.Context, name string) json.RawMessage {
	b := peerOf(ctx).Meta()
	if len(b) == 0 {
		return nil
	}
	var m map[string]json.RawMessage
	if json.Unmarshal(b, &m) != nil {
		return nil
	}
	return m[name]
}
