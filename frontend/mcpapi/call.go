package mcpapi

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"github.com/opentool-host/opentool-host/frontend/mcpapi/rounds"
	"net/url"

	"go.opentelemetry.io/otel/propagation"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/opentool-host/opentool-host/frontend/httpguard"
	"github.com/opentool-host/opentool-host/host"
	"github.com/opentool-host/opentool-host/host/core"
	"github.com/opentool-host/opentool-host/internal/mcpsession"
)

// ErrorMetaKey is the _meta key of an isError result that carries the
// host's view of the failure as JSON: {"kind": core.Kind, "plugin",
// "code" (the tool's own code, tool errors only), "status" (the exit
// status, plugin_exited only), "faults" ([{"path","message"}],
// invalid_params only), "login" (where to log in, needs_login only),
// "retryable" (core.Kind.Retryable)}. Models read
// the text block; programs may read this.
const ErrorMetaKey = "opentool-host/error"

// progressMessageMax is the largest item, in bytes, sent whole as the
// message of a progress notification; larger items are summarized.
const progressMessageMax = 4 << 10

// handler returns the tools/call handler of tool name. ctx is the
// request's: the SDK cancels it on notifications/cancelled (and, over
// HTTP, when the request's connection ends: Handler), and the host then
// cancels the call in the plugin. A call refused because the client lacks
// a capability it needs (exchange.go, refusal) is answered with that
// JSON-RPC error (-32021) instead of its result.
func (s *Server) handler(name string) mcp.ToolHandler {
	return func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		ctx, stop := httpguard.WithRequestCancel(ctx)
		defer stop()
		ctx = callContext(ctx, req)
		server := s.FromMCPServer(name) // not call_tool: a round of its own is the host's
		id := s.clientOf(req.Session, server)
		if !server {
			run := func(ctx context.Context) (*mcp.CallToolResult, error) {
				return s.call(ctx, req, name, id, nil)
			}
			return s.rounds.Tool(req, run)(ctx) // a plugin's own rounds (package rounds)
		}
		if r := id.req; r != nil {
			// A retry of the server's own round goes to it as it is (a
			// round of the host's never reaches here: rounds.Layer).
			r.InputResponses, r.RequestState = req.Params.InputResponses, req.Params.RequestState
		}
		// The result goes back as it is: a call the host answers itself
		// may take a plain one as its JSON (passOf).
		return s.call(ctx, req, name, id, passOf(ctx))
	}
}

// call runs tools/call req of tool name with ctx and answers it; its
// core.Exchange carries id, the caller's identity to a declared MCP
// server. pass, when not nil, takes a plain MCP result as its JSON
// (mcpResult).
func (s *Server) call(ctx context.Context, req *mcp.CallToolRequest, name string, id clientID, pass *passResult) (*mcp.CallToolResult, error) {
	refused := noRefusal
	if mcpsession.SpeaksSessionless(req.Session) {
		// A 2026-07-28 client without a capability the call needs gets
		// -32021 (exchange); earlier revisions have no such refusal, and
		// their calls spare its allocations.
		ctx, refused = withRefusal(ctx, id.req)
	}
	args := []byte(req.Params.Arguments)
	if f := s.h.Function(name); f != nil && f.IsStream() {
		// Its items are collected into one result, each reported as
		// progress when the client sent a progress token
		// (exchange: Item).
		obj, err := host.CollectItems(ctx, s.exchange(ctx, req, id), s.h.StreamCall, name, args, s.cfg.MaxResultBytes)
		if je := refused(); je != nil {
			return nil, je
		}
		return s.answer(name, obj, err)
	}
	res, err := s.h.CallResult(ctx, s.exchange(ctx, req, id), name, args)
	if je := refused(); je != nil {
		return nil, je
	}
	if je := loginRequired(req.Session, err); je != nil {
		if ask := rounds.HeldAsk(ctx); ask != nil {
			return s.loginRound(ctx, ask, req, name, id, err, je) // a 2026-07-28 client: an input_required round (loginrounds.go)
		}
		return nil, je
	}
	if err == nil && res.MCP {
		return s.mcpResult(name, res, pass)
	}
	return s.answer(name, res.JSON, err)
}

// mcpResult is the tools/call answer of a plugin's MCP result res (plugin
// protocol 3: an MCP server behind the host, or a plugin that returns
// content blocks): the result as the plugin returned it (MCP 2025-11-25
// "Tools", Tool Result), so that the client receives what it would
// receive from the server directly. An in-process plugin's own decoding
// of it (host.Result.Decoded: a declared MCP server's, by the SDK's
// client) is taken as it is; else res.JSON, when pass is not nil and it
// is plain (host.Result.Plain: its plugin checked it), is pass's
// (passResult.take: not decoded, written as it is); else it is decoded,
// and one that does not decode is a result_rejected isError result.
func (s *Server) mcpResult(name string, res host.Result, pass *passResult) (*mcp.CallToolResult, error) {
	r := res.Decoded
	if r == nil && pass != nil && res.Plain {
		return pass.take(res.JSON), nil
	}
	if r == nil {
		r = new(mcp.CallToolResult)
		if err := json.Unmarshal(res.JSON, r); err != nil {
			return s.callError(name, &core.Error{Kind: core.KindResultRejected, Function: name,
				Message: "the plugin's MCP result does not decode: " + err.Error(), Err: err})
		}
	}
	if r.Content == nil && !r.NeedsInput() && r.InputRequests == nil {
		r.Content = []mcp.Content{}
	}
	return r, nil
}

// callContext returns ctx carrying who calls (core.Caller: this front end)
// and the trace context the client put in params._meta (W3C traceparent
// and tracestate, as MCP clients propagate it), so the host's
// execute_tool span continues the client's trace.
func callContext(ctx context.Context, req *mcp.CallToolRequest) context.Context {
	ctx = core.WithCaller(ctx, core.Caller{FrontEnd: "mcp"})
	meta := req.Params.GetMeta()
	if _, ok := meta["traceparent"].(string); !ok {
		return ctx // no trace to continue (a tracestate alone is ignored)
	}
	carrier := propagation.MapCarrier{}
	for _, k := range []string{"traceparent", "tracestate"} {
		if v, ok := meta[k].(string); ok {
			carrier[k] = v
		}
	}
	return propagation.TraceContext{}.Extract(ctx, carrier)
}

// progressMessage is the message of the progress notification of the
// n-th item.
func progressMessage(n int, item []byte) string {
	if len(item) <= progressMessageMax {
		return string(item)
	}
	return fmt.Sprintf("item %d (%d bytes)", n, len(item))
}

// answer is the tools/call answer of a call of name that returned the
// JSON result object obj or failed with err: structuredContent plus a
// text block with the same JSON (MCP 2025-06-18 "Tools", "Structured
// Content"), or what callError makes of err.
func (s *Server) answer(name string, obj []byte, err error) (*mcp.CallToolResult, error) {
	if err != nil {
		return s.callError(name, err)
	}
	if len(obj) == 0 {
		obj = []byte("{}")
	}
	a := &structuredAnswer{text: mcp.TextContent{Text: string(obj)}}
	a.content[0] = &a.text
	a.res.Content = a.content[:]
	a.res.StructuredContent = json.RawMessage(obj)
	return &a.res, nil
}

// structuredAnswer is answer's result with its one text block, in one
// allocation instead of three (the result, the block, the slice of
// blocks): answer runs for every successful call.
type structuredAnswer struct {
	res     mcp.CallToolResult
	text    mcp.TextContent
	content [1]mcp.Content
}

// callError translates a call's error; it is the one place that does.
// An unknown tool is the JSON-RPC error -32602 "unknown tool" that the
// SDK gives for tools it does not know (MCP "Tools", "Error Handling":
// protocol errors), naming the tool call_tool named for a call through it
// (the answer of calling it by name); so is a tool's own error whose code
// is a JSON-RPC reserved code (protocolError: pluginsdk.ProtocolError),
// with the tool's code and message. Every other failure is a result with isError, so
// that the model sees it and can react (tool execution errors):
//   - KindTool: the tool's own message;
//   - KindInvalidParams: "invalid params: PATH: FAULT; ..." (the SDK's
//     own typed handlers answer invalid arguments the same way, and the
//     2025-11-25 revision asks for it, SEP-1303);
//   - every host-side failure (plugin exited, failed, stopped, busy,
//     timed out, canceled, result rejected, transport): the host's
//     message, naming the plugin and the function.
//
// The result's _meta[ErrorMetaKey] carries the details.
func (s *Server) callError(name string, err error) (*mcp.CallToolResult, error) {
	e := core.AsError(err)
	if e == nil {
		e = &core.Error{Kind: core.KindTransport, Function: name, Message: "the call failed", Err: err}
	}
	if e.Kind == core.KindNotFound {
		if e.Function != "" {
			name = e.Function // the function call_tool named
		}
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: fmt.Sprintf("unknown tool %q", name) + e.DidYouMean()}
	}
	if je := protocolError(e); je != nil {
		s.cfg.Logger.Debug("MCP call failed with a protocol error", "tool", name, "code", e.Code, "error", e)
		return nil, je
	}
	text := e.Error()
	switch e.Kind {
	case core.KindTool, core.KindInvalidParams:
		text = e.Message
		s.cfg.Logger.Debug("MCP call failed", "tool", name, "kind", e.Kind, "error", e)
	case core.KindCanceled: // the client cancelled or went away
		s.cfg.Logger.Debug("MCP call canceled", "tool", name, "error", e)
	default:
		s.cfg.Logger.Warn("MCP call failed", "tool", name, "kind", e.Kind, "error", e, "cause", e.Err)
	}
	if e.Kind == core.KindNeedsLogin {
		text = e.CallerText() // the caller's own link, logged nowhere
	}
	return &mcp.CallToolResult{
		IsError: true,
		Content: []mcp.Content{&mcp.TextContent{Text: text}},
		Meta:    mcp.Meta{ErrorMetaKey: errorMeta(e)},
	}, nil
}

// loginRequired is the answer to a call that failed with err when its
// caller must log in first (core.KindNeedsLogin) and the client ss
// declared URL-mode elicitation (capabilities.elicitation.url, MCP
// 2025-11-25 "Elicitation", URL mode): the JSON-RPC error -32042
// (URLElicitationRequiredError) with one URL elicitation, the login
// link, whose id is the link's own; nil for any other error or client,
// which callError answers (an isError result whose text and
// _meta[ErrorMetaKey].login carry the link).
func loginRequired(ss *mcp.ServerSession, err error) error {
	if err == nil {
		return nil // without core.AsError, whose errors.As target escapes: an allocation every call
	}
	e := core.AsError(err)
	if e == nil || e.Kind != core.KindNeedsLogin || ss == nil || !isURL(e.Login) {
		return nil
	}
	ip := ss.InitializeParams()
	if ip == nil || ip.Capabilities == nil || ip.Capabilities.Elicitation == nil || ip.Capabilities.Elicitation.URL == nil {
		return nil
	}
	return mcp.URLElicitationRequiredError([]*mcp.ElicitParams{loginElicitation(e)})
}

// loginElicitation is the URL-mode elicitation (MCP 2025-11-25
// "Elicitation", URL mode) of needs_login error e: its login link, whose
// id is the link's own.
func loginElicitation(e *core.Error) *mcp.ElicitParams {
	sum := sha256.Sum256([]byte(e.Login))
	return &mcp.ElicitParams{
		Mode: "url", URL: e.Login, ElicitationID: "login-" + hex.EncodeToString(sum[:8]),
		Message: fmt.Sprintf("Log in to %s to use %s: open the link, then call again.", e.Plugin, e.Function),
	}
}

// isURL reports whether s is an http or https URL (a login link, not a
// command to run).
func isURL(s string) bool {
	u, err := url.Parse(s)
	return err == nil && (u.Scheme == "https" || u.Scheme == "http") && u.Host != ""
}

// errorMeta is the value of _meta[ErrorMetaKey] for e.
func errorMeta(e *core.Error) map[string]any {
	m := map[string]any{"kind": e.Kind, "retryable": e.Kind.Retryable()}
	if e.Plugin != "" {
		m["plugin"] = e.Plugin
	}
	if e.Kind == core.KindTool {
		m["code"] = e.Code
	}
	if e.Status != "" {
		m["status"] = e.Status
	}
	if e.Login != "" {
		m["login"] = e.Login
	}
	if len(e.Faults) > 0 {
		m["faults"] = e.Faults
	}
	return m
}

// sessionlessRequest returns a new mcpsession.Request when the client of
// ss speaks 2026-07-28 or later (its revision, and its identity as its
// request's _meta declares it: Init), so that a declared MCP server may be
// spoken to in the client's revision, and list its tools to it as to a
// client like it (declared/mcpadapter); else nil.
func sessionlessRequest(ss *mcp.ServerSession) *mcpsession.Request {
	if ss == nil || !mcpsession.SpeaksSessionless(ss) {
		return nil
	}
	ip := ss.InitializeParams()
	return &mcpsession.Request{Revision: ip.ProtocolVersion, Init: ip}
}

// protocolError is the JSON-RPC error of e when it is a tool's own error
// with a JSON-RPC reserved code (-32768 to -32000, pluginsdk.ProtocolError),
// else nil.
func protocolError(e *core.Error) *jsonrpc.Error {
	if e == nil || e.Kind != core.KindTool || e.Code < -32768 || e.Code > -32000 {
		return nil
	}
	return &jsonrpc.Error{Code: int64(e.Code), Message: e.Message}
}
