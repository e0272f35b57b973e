package mcpapi

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"strconv"
	"strings"
	"sync/atomic"
	"unicode/utf8"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/opentool-host/opentool-host/frontend/httpguard"
	"github.com/opentool-host/opentool-host/frontend/mcpapi/envelope"
	"github.com/opentool-host/opentool-host/frontend/mcpapi/respond"
	"github.com/opentool-host/opentool-host/internal/mcpsession"
	"github.com/opentool-host/opentool-host/internal/strictjson"
	"github.com/opentool-host/opentool-host/protocol/mcpmethod"
	"github.com/opentool-host/opentool-host/protocol/opentool"
)

// A session's tools/call is answered by the host itself (fastCalls): the
// one JSON-RPC request read and its params decoded by the host (ownCall:
// as the SDK decodes them, where the host can tell it does), the work of
// the host's receiving middleware for a tools/call done as functions
// (answerCall: the grant, the client's view, the response's mark), and the
// call handled on the session by the SDK (mcp.ServerSession.HandleCallTool:
// the initialization gate, the tool's handler by name, the result
// completed as the SDK completes it), the response encoded as the SDK
// encodes it. A call that sends nothing related to it is answered with
// one application/json response.
// The first message the call sends related to it (a progress or log
// notification, a roots/list, sampling or elicitation request to the
// client) switches its POST's response to an event stream, as the SDK's
// streamable transport answers every call: the headers then, each message
// as one event, the response as the last (callStream). The client's answer
// to such a request comes in a POST of its own, which the SDK delivers to
// the waiting request. The SDK's streamable transport (its stream registry,
// its connection's in-flight requests and hand-offs) is left out of the
// path. Everything else goes to the SDK: see eligibleRequest,
// eligibleSession, ownCall and ownsTool.

// sessionHolder is the SDK's streamable handler with sessions as the fast
// path uses it (mcp.StreamableHTTPHandler.HoldSession: the SDK's patch
// 0011); an SDK as released has no such method, and every call then goes
// to the SDK.
type sessionHolder interface {
	HoldSession(r *http.Request, sessionID string) (ss *mcp.ServerSession, release func(), status int)
}

// callHandler is a session as the fast path calls it
// (mcp.ServerSession.HandleCallTool, patch 0014): the call handled with
// ctx and without the server's receiving middleware, each message its
// handler sends related to it given to related (encoded, one at a time,
// until it returns).
type callHandler interface {
	HandleCallTool(ctx context.Context, id jsonrpc.ID, params *mcp.CallToolParamsRaw, extra *mcp.RequestExtra, related func(data []byte) error) (*mcp.CallToolResult, error)
}

// fastCalls is the handler with sessions (HTTPOptions.Sessions): a
// session's eligible tools/call answered by serve, every other request by
// sdk. Taken counts the calls the host answered itself.
type fastCalls struct {
	h      *HTTPHandler
	sdk    http.Handler
	holder sessionHolder // nil: the SDK has no HoldSession or no HandleCallTool
	taken  atomic.Int64
}

// newFastCalls returns the fast path over sdk, the SDK's handler with
// sessions.
func newFastCalls(h *HTTPHandler, sdk *mcp.StreamableHTTPHandler) *fastCalls {
	f := &fastCalls{h: h, sdk: sdk}
	if _, ok := any((*mcp.ServerSession)(nil)).(callHandler); ok {
		f.holder, _ = any(sdk).(sessionHolder)
	}
	return f
}

// ServeHTTP implements http.Handler: serve, else the SDK.
func (f *fastCalls) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if !f.serve(w, r) {
		f.sdk.ServeHTTP(w, r)
	}
}

// serve answers r itself when it is an eligible tools/call on a session,
// reporting whether it did; when it reports false it has written nothing
// and r goes to the SDK as it came.
func (f *fastCalls) serve(w http.ResponseWriter, r *http.Request) bool {
	if f.holder == nil || !f.eligibleRequest(r) {
		return false
	}
	msg := envelope.Checked(r) // the body checked, one message
	if msg == nil || msg.Method != mcpmethod.ToolsCall {
		return false
	}
	jid, params, ok := ownCall(msg)
	if !ok || !f.h.s.ownsTool(params.Name) {
		return false
	}
	sid := httpguard.Header(r.Header, "Mcp-Session-Id")
	ss, release, status := f.holder.HoldSession(r, sid)
	if status != 0 {
		return false // the SDK answers it (404, 403)
	}
	defer release()
	ch, ok := any(ss).(callHandler)
	if !ok || !f.eligibleSession(ss, httpguard.Header(r.Header, "Mcp-Protocol-Version")) {
		return false
	}
	// As on the SDK's session, the call does not end with its POST: a
	// notifications/cancelled naming it (inflight), the session's DELETE
	// (inflight.endSession) or the host's shutdown ends it.
	id := msg.ID // a call's: not null
	c := &fastCall{
		ctx: fastCallContext{Context: f.h.s.down, post: r.Context(), pass: passResult{id: id}},
		extra: mcp.RequestExtra{
			TokenInfo:      auth.TokenInfoFromContext(r.Context()),
			Header:         r.Header,
			CloseSSEStream: func(mcp.CloseSSEStreamArgs) {}, // no stream to close
		},
		stream: callStream{w: w},
	}
	ctx, done := f.h.s.inflight.call(&c.ctx, id, sid)
	defer done()
	f.taken.Add(1)
	resp := f.h.s.answerCall(ctx, ch, ss, jid, params, &c.extra, c.stream.event, &c.ctx.pass)
	if c.stream.open {
		_ = c.stream.event(resp) // a client gone: nothing more to tell it
		return true
	}
	h := w.Header()
	h["Cache-Control"] = noCacheNoTransform
	if v := r.Header["Mcp-Session-Id"]; len(v) == 1 {
		h["Mcp-Session-Id"] = v // the request's: sid
	} else {
		h.Set("Mcp-Session-Id", sid)
	}
	httpguard.WriteTimed(w, http.StatusOK, httpguard.JSON, resp) // w, HTTPHandler's respond.Writer, sets the write deadline
	return true
}

// answerCall handles tools/call id with params on ss (ch, the same
// session) and returns its JSON-RPC response, encoded as the SDK's
// session encodes it: the work the host's receiving middleware does for
// a tools/call of a session of an earlier revision than 2026-07-28 done
// in the middleware's order (accessMiddleware's grant and key on ctx,
// clientview's view of the client; tasks and rounds have nothing to do
// for such a call: ownsTool), the call handled by the SDK without the
// middleware (HandleCallTool), the POST's response marked
// (respond.Marks.Mark), as Marks.Middleware marks it once the handler
// returned. Messages the call sends related to it go to related. pass,
// ctx's own (passOf), may take the call's result as its JSON.
func (s *Server) answerCall(ctx context.Context, ch callHandler, ss *mcp.ServerSession, id jsonrpc.ID, params *mcp.CallToolParamsRaw, extra *mcp.RequestExtra, related func([]byte) error, pass *passResult) []byte {
	ctx = withGrant(ctx, grantIn(extra))
	ctx = s.shown.CallContext(ctx, ss)
	res, err := ch.HandleCallTool(ctx, id, params, extra, related)
	s.marks.Mark(extra.Header)
	return encodeResponse(id, res, err, pass)
}

// encodeResponse is the JSON-RPC response to request id of result res or
// error err, as the SDK's session encodes it (ServerSession.HandleRequest):
// the result's own encoding (CallToolResult.MarshalJSON), or the JSON pass
// took when res is pass's placeholder (passResult.take), written with the
// request's id as it came (passResult.response), or the error
// with its code (a *jsonrpc.Error's, or one it wraps); a nil result without
// an error, or one that does not encode, an internal error. pass may be
// nil.
func encodeResponse(id jsonrpc.ID, res *mcp.CallToolResult, err error, pass *passResult) []byte {
	resp := &jsonrpc.Response{ID: id, Error: err}
	switch {
	case err != nil:
	case pass != nil && res == &pass.res: // take was called: pass.json is set
		return pass.response()
	case res == nil:
		resp.Error = &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: `internal error: a nil result and nil error for "tools/call"`}
	default:
		if resp.Result, err = res.MarshalJSON(); err != nil {
			resp.Result, resp.Error = nil, &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: `internal error: a malformed result for "tools/call": ` + err.Error()}
		}
	}
	data, err := jsonrpc.EncodeMessage(resp)
	if err != nil { // an error's message always encodes: never here
		return respond.ErrorResponse(nil, jsonrpc.CodeInternalError, err.Error())
	}
	return data
}

// ownsTool reports whether the host answers a session's plain tools/call
// of tool name itself: every tool but one whose function requires a task
// when tasks are served (the task middleware answers a call of it without
// a task with its error).
func (s *Server) ownsTool(name string) bool {
	return s.tasks == nil || s.taskSupport(name) != opentool.TaskSupportRequired
}

// noCacheNoTransform is the Cache-Control of the SDK's responses to calls
// (shared: never modified).
var noCacheNoTransform = []string{"no-cache, no-transform"}

// fastCall is what one call the host answers itself keeps, in one
// allocation: its context, the request's extra (mcp.RequestExtra) and its
// stream.
type fastCall struct {
	ctx    fastCallContext
	extra  mcp.RequestExtra
	stream callStream
}

// passResult is where a call the host answers itself takes a plugin's
// plain MCP result (mcpresult.Plain) as its JSON, so that it is written
// as it is, neither decoded nor encoded again: take keeps the JSON and
// returns res, a placeholder handed to the SDK in the result's place,
// which encodeResponse knows by its address. The SDK's HandleCallTool
// returns it as it is: its content is not null (callTool would copy it to
// set []), it has no input requests, and the session is of a revision
// before multi-round-trip (eligibleSession: the SDK sets no resultType).
// A result that is not plain is decoded and encoded as ever.
type passResult struct {
	res  mcp.CallToolResult
	json []byte
	// id is the request's id as written, one ownCall read (plainID: an
	// integer, or a string of printable ASCII without an escape).
	id []byte
}

// response is the JSON-RPC response of the call's id with the JSON taken
// as its result, written as it is: the same value as jsonrpc.EncodeMessage
// gives (which writes the same members in the same order, and would only
// compact the result and escape an id's <, > and &), in one line (a plain
// result has no line break, mcpresult.Plain).
func (p *passResult) response() []byte {
	b := make([]byte, 0, len(`{"jsonrpc":"2.0","id":,"result":}`)+len(p.id)+len(p.json))
	b = append(append(append(b, `{"jsonrpc":"2.0","id":`...), p.id...), `,"result":`...)
	return append(append(b, p.json...), '}')
}

// take keeps b, a plain MCP result, as the call's result, and returns the
// placeholder that stands for it.
func (p *passResult) take(b []byte) *mcp.CallToolResult {
	p.json = b
	p.res = mcp.CallToolResult{Content: []mcp.Content{}}
	return &p.res
}

// passKey is the context key of a call's *passResult (fastCallContext).
type passKey struct{}

// passOf returns the *passResult of ctx, a call the host answers itself,
// or nil (the SDK's own handling of a call).
func passOf(ctx context.Context) *passResult {
	p, _ := ctx.Value(passKey{}).(*passResult)
	return p
}

// fastCallContext is the context of a call the host answers itself: the
// values of its POST's context (post: the grant, the token, the trace)
// and the cancellation of Context, the host's down (Server.down), not of
// the POST. down, a context.WithCancel of context.Background, has no value
// but its own cancellation, which Value gives first: a context derived
// from a fastCallContext is then cancelled with down as a child of down's,
// without a goroutine or an AfterFunc of its own.
type fastCallContext struct {
	context.Context // Server.down
	post            context.Context
	pass            passResult // passKey's value
}

// Value implements context.Context.
func (c *fastCallContext) Value(key any) any {
	if _, ok := key.(passKey); ok {
		return &c.pass
	}
	if v := c.Context.Value(key); v != nil {
		return v
	}
	return c.post.Value(key)
}

// callStream is the response of a call the host answers itself once the
// call has sent a message related to it: an event stream as the SDK's
// streamable transport writes one (its headers, then each message as
// "event: message\ndata: MESSAGE\n\n", flushed), opened by the first
// such message; w is the host's writer of the POST (deadlineWriter, which
// gives the client the write timeout for each event and leaves the last,
// the response, to go out with the end of the response).
type callStream struct {
	w    http.ResponseWriter
	open bool
}

// event writes data, one JSON-RPC message, as the stream's next event,
// opening the stream first. Errors: the client is gone or too slow.
func (c *callStream) event(data []byte) error {
	if !c.open {
		c.open = true
		h := c.w.Header()
		h["Cache-Control"] = noCacheNoTransform
		h.Set("Content-Type", "text/event-stream")
		h.Set("Connection", "keep-alive")
		c.w.WriteHeader(http.StatusOK)
	}
	b := make([]byte, 0, len(data)+len("event: message\ndata: \n\n"))
	b = append(append(append(b, "event: message\ndata: "...), data...), "\n\n"...)
	if _, err := c.w.Write(b); err != nil {
		return err
	}
	return http.NewResponseController(c.w).Flush()
}

// ownCall returns the id and the params of tools/call msg (a body
// envelope.Check passed, one message), as jsonrpc.DecodeMessage and the
// SDK's decoding of the params give them, when the host can tell they
// are what the SDK would give: "jsonrpc" "2.0", an id of at most 15
// digits or a string of printable ASCII without escapes (plainID), and
// params read by ownParams. ok is false for any other message, which the
// SDK reads.
func ownCall(msg *envelope.Message) (id jsonrpc.ID, params *mcp.CallToolParamsRaw, ok bool) {
	if msg.Method != mcpmethod.ToolsCall || string(msg.JSONRPC) != `"2.0"` || bytes.IndexByte(msg.ID, '\\') >= 0 {
		return id, nil, false
	}
	if id, ok = plainID(msg.ID); !ok {
		return id, nil, false
	}
	params, ok = ownParams(msg)
	return id, params, ok
}

// ownParams returns the params of a tools/call (msg's) as the SDK decodes
// them (mcp.CallToolParamsRaw, its names matched exactly), when they are
// the host's to answer and it can read them without a decoder: an object
// of at most "name" (a string of valid UTF-8 without escapes), "arguments"
// (an object, kept as written) and "_meta" (an object of a progress token
// and trace context only: progressToken, traceparent, tracestate),
// decoded as the SDK decodes it. A task (params.task, answered in the
// task's terms), any other member or _meta member, or another shape:
// ok is false, and the SDK reads them.
func ownParams(msg *envelope.Message) (*mcp.CallToolParamsRaw, bool) {
	if len(msg.Params) == 0 || msg.Params[0] != '{' || msg.Task != nil {
		return nil, false
	}
	p := new(mcp.CallToolParamsRaw)
	ok := strictjson.Members(msg.Params, func(name, v []byte) bool {
		switch string(name) {
		case "name":
			if len(v) < 2 || v[0] != '"' || bytes.IndexByte(v, '\\') >= 0 || !utf8.Valid(v) {
				return false
			}
			p.Name = string(v[1 : len(v)-1])
		case "arguments":
			if v[0] != '{' {
				return false
			}
			p.Arguments = json.RawMessage(v) // the body's, never written again
		case "_meta":
			return v[0] == '{' && quietMeta(v, &p.Meta)
		default:
			return false
		}
		return true
	})
	return p, ok
}

// quietMeta decodes raw, a tools/call's params._meta, into meta when it
// holds a progress token and trace context only (progressToken,
// traceparent, tracestate; anything else goes to the SDK), and reports
// whether it did.
func quietMeta(raw []byte, meta *mcp.Meta) bool {
	var m map[string]any
	if json.Unmarshal(raw, &m) != nil {
		return false
	}
	for k := range m {
		if k != "progressToken" && k != "traceparent" && k != "tracestate" {
			return false
		}
	}
	*meta = m
	return true
}

// plainID is the id of raw, a JSON value without a backslash, as
// jsonrpc.DecodeMessage makes it, when raw is an integer of at most 15
// digits (exact as the float64 the SDK decodes it to) or a string of
// printable ASCII; ok is false for any other.
func plainID(raw []byte) (id jsonrpc.ID, ok bool) {
	if len(raw) >= 2 && raw[0] == '"' && raw[len(raw)-1] == '"' {
		for _, c := range raw[1 : len(raw)-1] {
			if c < 0x20 || c > 0x7e {
				return id, false
			}
		}
		id, err := jsonrpc.MakeID(string(raw[1 : len(raw)-1]))
		return id, err == nil
	}
	digits := raw
	if len(digits) > 0 && digits[0] == '-' {
		digits = digits[1:]
	}
	if len(digits) == 0 || len(digits) > 15 || len(digits) > 1 && digits[0] == '0' {
		return id, false
	}
	for _, c := range digits {
		if c < '0' || c > '9' {
			return id, false
		}
	}
	n, err := strconv.ParseInt(string(raw), 10, 64)
	if err != nil {
		return id, false
	}
	id, err = jsonrpc.MakeID(float64(n)) // as the SDK decodes a number
	return id, err == nil
}

// eligibleRequest reports whether r's headers let the host answer it
// itself, each as the SDK's streamable handler would accept them: a POST
// to a session (Mcp-Session-Id), no Last-Event-ID, Content-Type
// application/json, an Accept of both application/json and
// text/event-stream, an MCP-Protocol-Version before 2026-07-28 (the
// session's own is checked by eligibleSession), and none of the standard
// headers the SDK checks against the body (Mcp-Method, Mcp-Name,
// Mcp-Param-*).
func (f *fastCalls) eligibleRequest(r *http.Request) bool {
	h := r.Header // each key canonical: no key made per request
	if r.Method != http.MethodPost || httpguard.Header(h, "Mcp-Session-Id") == "" || len(h["Last-Event-Id"]) > 0 {
		return false
	}
	v := httpguard.Header(h, "Mcp-Protocol-Version")
	if v == "" || v >= mcpsession.SessionlessRevision {
		return false
	}
	if mt, _, _ := strings.Cut(httpguard.Header(h, "Content-Type"), ";"); !strings.EqualFold(strings.TrimSpace(mt), "application/json") {
		return false
	}
	jsonOK, streamOK := false, false
	for _, value := range h["Accept"] {
		for raw := range strings.SplitSeq(value, ",") {
			base, _, _ := strings.Cut(raw, ";")
			switch strings.ToLower(strings.TrimSpace(base)) {
			case "application/json":
				jsonOK = true
			case "text/event-stream":
				streamOK = true
			}
		}
	}
	if !jsonOK || !streamOK {
		return false
	}
	for k := range h {
		if k == "Mcp-Method" || k == "Mcp-Name" || strings.HasPrefix(k, "Mcp-Param-") {
			return false
		}
	}
	return true
}

// eligibleSession reports whether the host answers a call on ss as the
// SDK would: ss initialized in revision version (the request's
// MCP-Protocol-Version) and its client without any extension or
// experimental capability (a call could be answered in the extension's
// terms). Roots, sampling, elicitation and a log level are the SDK's
// session's own: what a call sends related to them goes on its stream
// (callStream).
func (f *fastCalls) eligibleSession(ss *mcp.ServerSession, version string) bool {
	ip := ss.InitializeParams()
	if ip == nil || ip.ProtocolVersion != version {
		return false
	}
	c := ip.Capabilities
	return c == nil || len(c.Extensions) == 0 && len(c.Experimental) == 0
}
