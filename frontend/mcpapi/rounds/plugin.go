package rounds

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/opentool-host/opentool-host/host"
	"github.com/opentool-host/opentool-host/host/core"
	"github.com/opentool-host/opentool-host/internal/mcpsession"
	"github.com/opentool-host/opentool-host/internal/wire"
	"github.com/opentool-host/opentool-host/protocol/mcpmethod"
)

// A plugin's own multi-round-trip requests (MCP 2026-07-28, SEP-2322;
// pluginsdk.InputRequired): a tools/call or prompts/get whose plugin
// answers with inputRequests under keys of its own and its own
// requestState.
//
//   - A client of 2026-07-28 gets the round as the plugin wrote it (the
//     SDK adds resultType "input_required"); its retry reaches the
//     plugin as it wrote it: a tool's inputResponses and requestState in
//     the call's meta (wire.MetaInputResponses, wire.MetaRequestState,
//     the client's own members of those names dropped), a prompt's in its
//     params. A requestState of the host's own shape (hostShaped) is the
//     host's held call's (held.go), never the plugin's. A round
//     that asks what the client did not declare is refused with -32021,
//     as a plain request is (Client.CanAsk).
//   - A client of an earlier revision with a session (or on stdio) never
//     sees the round: the host sends each request to it on the call's
//     stream, in the order of their keys, and calls the plugin again with
//     the answers and its requestState, for at most maxPluginRounds
//     rounds. A request the client cannot take or fails ends the request
//     with a JSON-RPC error naming its key: the client's own error code,
//     -32603 for a capability it did not declare.
//   - A client without a session (--mcp-stateless, older revision) cannot
//     be asked: -32603.
//
// A tool's retry whose plugin refuses it (pluginsdk.RefuseRetry: its
// requestState changed, expired) is answered with JSON-RPC error -32602
// and the plugin's message.

// maxPluginRounds bounds the rounds the host fulfils for one request of a
// client of an earlier revision.
const maxPluginRounds = 8

// codeRefusedRetry is the tool error code of pluginsdk.RefuseRetry.
const codeRefusedRetry = jsonrpc.CodeInvalidParams

// pluginRetry is a retry of a plugin's round: inputResponses (a JSON
// object; nil: not a retry) and requestState as the plugin wrote it.
type pluginRetry struct {
	responses json.RawMessage
	state     string
}

// retryKey is the context key of a call's *pluginRetry.
type retryKey struct{}

// withRetry returns ctx carrying r for the plugin's call (RetryMeta); ctx
// itself for nil (a first round: nothing to carry, and a call's ctx never
// carries a retry of another call).
func withRetry(ctx context.Context, r *pluginRetry) context.Context {
	if r == nil {
		return ctx
	}
	return context.WithValue(ctx, retryKey{}, r)
}

// RetryMeta returns meta, the client's _meta handed to the plugin (a JSON
// object, nil for none), without the client's members of the host's
// retry names and with the retry ctx carries, if any.
func RetryMeta(ctx context.Context, meta []byte) []byte {
	r, _ := ctx.Value(retryKey{}).(*pluginRetry)
	if r == nil && !strings.Contains(string(meta), "io.opentool-host/") {
		return meta
	}
	m := map[string]json.RawMessage{}
	if len(meta) > 0 && json.Unmarshal(meta, &m) != nil {
		return meta // the SDK decoded it: an object
	}
	delete(m, wire.MetaInputResponses)
	delete(m, wire.MetaRequestState)
	if r != nil && r.responses != nil {
		m[wire.MetaInputResponses] = r.responses
	}
	if r != nil && r.state != "" {
		m[wire.MetaRequestState], _ = json.Marshal(r.state)
	}
	if len(m) == 0 {
		return nil
	}
	b, _ := json.Marshal(m) // decoded JSON: encodes
	return b
}

// hostShaped reports whether state has the shape of a requestState the
// host issues for its held calls (held.go: claims "." signature):
// its claims decode, or its signature has HMAC-SHA256's length. Such a
// state is the host's to verify, never a plugin's.
func (h *heldCalls) hostShaped(state string) bool {
	payload, sig, ok := strings.Cut(state, ".")
	if !ok {
		return false
	}
	if b, err := base64.RawURLEncoding.DecodeString(sig); err == nil && len(b) == len(h.mac("")) {
		return true
	}
	var c stateClaims
	b, err := base64.RawURLEncoding.DecodeString(payload)
	return err == nil && json.Unmarshal(b, &c) == nil && c.Call != ""
}

// toolRetry is the retry of the plugin's round that tools/call req
// carries: nil when it carries neither inputResponses nor a requestState
// of the plugin's (one the host issued is its held call's).
func (l *Layer) toolRetry(req *mcp.CallToolRequest) (*pluginRetry, error) {
	p := req.Params
	if p.InputResponses == nil && (p.RequestState == "" || l.held.hostShaped(p.RequestState)) {
		return nil, nil
	}
	r := &pluginRetry{}
	if !l.held.hostShaped(p.RequestState) {
		r.state = p.RequestState
	}
	if p.InputResponses != nil {
		b, err := json.Marshal(p.InputResponses)
		if err != nil {
			return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: "invalid params: inputResponses: " + err.Error()}
		}
		r.responses = b
	}
	return r, nil
}

// Tool returns run, a tools/call req of a plugin's function, serving the
// plugin's rounds (above): the first call carries the retry req carries
// (RetryMeta); a round goes to a 2026-07-28 client as it is, or is
// fulfilled for an older client with a session. It wraps the front end's
// tools/call handler, not the SDK's: the SDK's own fulfilment of rounds
// for older clients is the innermost middleware, and would take them
// first.
func (l *Layer) Tool(req *mcp.CallToolRequest, run func(context.Context) (*mcp.CallToolResult, error)) func(context.Context) (*mcp.CallToolResult, error) {
	return func(ctx context.Context) (*mcp.CallToolResult, error) {
		retry, err := l.toolRetry(req)
		if err != nil {
			return nil, err
		}
		for n := 1; ; n++ {
			res, err := run(withRetry(ctx, retry))
			if err != nil || res == nil {
				return res, err
			}
			if retry != nil && l.refusedRetry(res) {
				return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: "invalid params: " + errorText(res)}
			}
			if res.InputRequests == nil && !res.NeedsInput() {
				return res, nil
			}
			answers, err := l.answerRound(ctx, req.Session, l.cfg.Client.Stateless(req), res.InputRequests, n)
			if err != nil || answers == nil {
				return res, err
			}
			retry = &pluginRetry{responses: answers, state: res.RequestState}
		}
	}
}

// answerRound serves round n of a plugin's inputRequests reqs for the
// client of ss (stateless: without a session): for a client of 2026-07-28
// nil answers (the round goes to it; -32021 for a request whose
// capability it did not declare); for an older one the client's answers
// as the retry's inputResponses (a JSON object by key). Errors: JSON-RPC
// errors for the client (above).
func (l *Layer) answerRound(ctx context.Context, ss *mcp.ServerSession, stateless bool, reqs mcp.InputRequestMap, n int) (json.RawMessage, error) {
	keys := slices.Sorted(maps.Keys(reqs))
	if ss != nil && mcpsession.SpeaksSessionless(ss) {
		for _, k := range keys {
			if err := l.cfg.Client.CanAsk(ss, inputMethod(reqs[k]), false); err != nil {
				return nil, roundError(k, err)
			}
		}
		return nil, nil
	}
	if n > maxPluginRounds {
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: fmt.Sprintf("the plugin asked its client for input in more than %d rounds", maxPluginRounds)}
	}
	if len(reqs) == 0 {
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: "the plugin is busy (an input_required round without requests): retry later"}
	}
	answers := make(map[string]json.RawMessage, len(reqs))
	for _, k := range keys {
		method := inputMethod(reqs[k])
		if err := l.cfg.Client.CanAsk(ss, method, stateless); err != nil {
			return nil, roundError(k, err)
		}
		params, err := json.Marshal(reqs[k])
		if err != nil {
			return nil, roundError(k, err)
		}
		if answers[k], err = l.cfg.Client.Ask(ctx, ss, method, params); err != nil {
			return nil, roundError(k, err)
		}
	}
	b, err := json.Marshal(answers)
	return b, err
}

// inputMethod is the method of input request ir ("" for a type MCP has
// no request of, which Client.CanAsk refuses).
func inputMethod(ir mcp.InputRequest) string {
	switch ir.(type) {
	case *mcp.ElicitParams:
		return mcpmethod.ElicitationCreate
	case *mcp.CreateMessageParams, *mcp.CreateMessageWithToolsParams:
		return mcpmethod.SamplingCreateMessage
	case *mcp.ListRootsParams:
		return mcpmethod.RootsList
	}
	return ""
}

// roundError is the client's JSON-RPC error for the plugin's input
// request key that failed with err: -32021 for a capability a 2026-07-28
// client did not declare, an *RPCError's code (the client's own), else
// -32603 (also for the host's -32601: no session, a capability an older
// client did not declare).
func roundError(key string, err error) *jsonrpc.Error {
	var missing Refusal
	if errors.As(err, &missing) {
		je := missing.ClientError()
		je.Message = fmt.Sprintf("input request %q: %s", key, je.Message)
		return je
	}
	je := &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: fmt.Sprintf("input request %q: %v", key, err)}
	var re *host.RPCError
	if errors.As(err, &re) {
		je.Message, je.Data = fmt.Sprintf("input request %q: %s", key, re.Message), re.Data
		if re.Code != host.CodeMethodNotFound { // the host's "nobody can answer" is no unknown method of the client's
			je.Code = int64(re.Code)
		}
	}
	return je
}

// refusedRetry reports whether res is the plugin's refusal of a retry
// (pluginsdk.RefuseRetry: a tool error of code -32602).
func (l *Layer) refusedRetry(res *mcp.CallToolResult) bool {
	m, _ := res.Meta[l.cfg.ErrorMetaKey].(map[string]any)
	code, _ := m["code"].(int)
	return res.IsError && m["kind"] == core.KindTool && code == codeRefusedRetry
}

// errorText is the text of isError result res.
func errorText(res *mcp.CallToolResult) string {
	var texts []string
	for _, c := range res.Content {
		if t, ok := c.(*mcp.TextContent); ok {
			texts = append(texts, t.Text)
		}
	}
	return strings.Join(texts, "\n")
}

// Prompt runs prompts/get req with get, serving the plugin's rounds as
// Tool does a tool's: its params carry the retry (the client's, then the
// host's with the client's answers).
func (l *Layer) Prompt(ctx context.Context, req *mcp.GetPromptRequest, get func(*mcp.GetPromptParams) (*mcp.GetPromptResult, error)) (*mcp.GetPromptResult, error) {
	p := req.Params
	for n := 1; ; n++ {
		res, err := get(p)
		if err != nil || res.InputRequests == nil && !res.NeedsInput() {
			return res, err
		}
		answers, err := l.answerRound(ctx, req.Session, l.cfg.Client.Stateless(req), res.InputRequests, n)
		if err != nil || answers == nil {
			return res, err
		}
		next := *p
		if err := json.Unmarshal(answers, &next.InputResponses); err != nil {
			return nil, &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: "the client's answers: " + err.Error()}
		}
		next.RequestState = res.RequestState
		p = &next
	}
}
