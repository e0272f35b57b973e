package mcpapi

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"strconv"
	"strings"
	"sync/atomic"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/opentool-host/opentool-host/frontend/httpguard"
	"github.com/opentool-host/opentool-host/frontend/mcpapi/envelope"
	"github.com/opentool-host/opentool-host/frontend/mcpapi/respond"
	"github.com/opentool-host/opentool-host/internal/mcpsession"
	"github.com/opentool-host/opentool-host/protocol/mcpmethod"
)

// A session's tools/call is answered by the host itself (fastCalls): the
// one JSON-RPC request read, handled on the session by the SDK's own
// request handling (mcp.ServerSession.HandleRequestRelated: the
// initialization gate, the params, every receiving middleware, the tool's
// handler, the response encoded as the SDK encodes it). A call that sends
// nothing related to it is answered with one application/json response.
// The first message the call sends related to it (a progress or log
// notification, a roots/list, sampling or elicitation request to the
// client) switches its POST's response to an event stream, as the SDK's
// streamable transport answers every call: the headers then, each message
// as one event, the response as the last (callStream). The client's answer
// to such a request comes in a POST of its own, which the SDK delivers to
// the waiting request. The SDK's streamable transport (its stream registry,
// its connection's in-flight requests and hand-offs) is left out of the
// path. Everything else goes to the SDK: see eligibleRequest,
// eligibleSession and quietParams.

// sessionHolder is the SDK's streamable handler with sessions as the fast
// path uses it (mcp.StreamableHTTPHandler.HoldSession: the SDK's patch
// 0011); an SDK as released has no such method, and every call then goes
// to the SDK.
type sessionHolder interface {
	HoldSession(r *http.Request, sessionID string) (ss *mcp.ServerSession, release func(), status int)
}

// requestHandler is a session as the fast path calls it
// (mcp.ServerSession.HandleRequestRelated, patch 0012): the request
// handled with ctx, each message its handler sends related to it given to
// related (encoded, one at a time, until it returns), and the response
// encoded.
type requestHandler interface {
	HandleRequestRelated(ctx context.Context, req *jsonrpc.Request, related func(data []byte) error) ([]byte, error)
}

// fastCalls is the handler with sessions (HTTPOptions.Sessions): a
// session's eligible tools/call answered by serve, every other request by
// sdk. Taken counts the calls the host answered itself.
type fastCalls struct {
	h      *HTTPHandler
	sdk    http.Handler
	holder sessionHolder // nil: the SDK has no HoldSession or no HandleRequestRelated
	taken  atomic.Int64
}

// newFastCalls returns the fast path over sdk, the SDK's handler with
// sessions.
func newFastCalls(h *HTTPHandler, sdk *mcp.StreamableHTTPHandler) *fastCalls {
	f := &fastCalls{h: h, sdk: sdk}
	if _, ok := any((*mcp.ServerSession)(nil)).(requestHandler); ok {
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
	body, complete := envelope.Buffer(r, f.h.o.MaxBodyBytes) // read already: not again
	if !complete || len(body) == 0 || body[0] != '{' {
		return false
	}
	jreq, ok := callRequest(body, msg)
	if !ok || !jreq.IsCall() || jreq.Method != mcpmethod.ToolsCall || !quietParams(msg) {
		return false
	}
	sid := httpguard.Header(r.Header, "Mcp-Session-Id")
	ss, release, status := f.holder.HoldSession(r, sid)
	if status != 0 {
		return false // the SDK answers it (404, 403)
	}
	defer release()
	rh, ok := any(ss).(requestHandler)
	if !ok || !f.eligibleSession(ss, httpguard.Header(r.Header, "Mcp-Protocol-Version")) {
		return false
	}
	// As on the SDK's session, the call does not end with its POST: a
	// notifications/cancelled naming it (inflight), the session's DELETE
	// (inflight.endSession) or the host's shutdown ends it.
	id := msg.ID // a call's: not null
	ctx, done := f.h.s.inflight.call(&fastCallContext{Context: f.h.s.down, post: r.Context()}, id, sid)
	defer done()
	c := &fastCall{
		extra: mcp.RequestExtra{
			TokenInfo:      auth.TokenInfoFromContext(r.Context()),
			Header:         r.Header,
			CloseSSEStream: func(mcp.CloseSSEStreamArgs) {}, // no stream to close
		},
		stream: callStream{w: w},
	}
	jreq.Extra = &c.extra
	f.taken.Add(1)
	resp, err := rh.HandleRequestRelated(ctx, jreq, c.stream.event)
	if err != nil { // the call ran: answered, not handed to the SDK
		resp = respond.ErrorResponse(id, jsonrpc.CodeInternalError, err.Error())
	}
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

// noCacheNoTransform is the Cache-Control of the SDK's responses to calls
// (shared: never modified).
var noCacheNoTransform = []string{"no-cache, no-transform"}

// fastCall is what the SDK keeps of one call the host answers itself, in
// one allocation: the request's extra (mcp.RequestExtra) and its stream.
type fastCall struct {
	extra  mcp.RequestExtra
	stream callStream
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
}

// Value implements context.Context.
func (c *fastCallContext) Value(key any) any {
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

// callRequest returns the request body holds, as jsonrpc.DecodeMessage
// decodes it; ok is false when body is not one request. body has passed
// envelope.Check (valid JSON, no duplicate member), which read msg of it.
// A plain tools/call (no backslash anywhere, so no escaped name or
// string; "jsonrpc" "2.0", "method" "tools/call", an id of at most 15
// digits or a string of printable ASCII, params an object) is made of
// msg's members, without decoding body again.
func callRequest(body []byte, msg *envelope.Message) (*jsonrpc.Request, bool) {
	if msg.Method == mcpmethod.ToolsCall && string(msg.JSONRPC) == `"2.0"` && bytes.IndexByte(body, '\\') < 0 {
		if id, ok := plainID(msg.ID); ok && len(msg.Params) > 0 && msg.Params[0] == '{' {
			return &jsonrpc.Request{ID: id, Method: mcpmethod.ToolsCall, Params: msg.Params}, true
		}
	}
	decoded, err := jsonrpc.DecodeMessage(body)
	if err != nil {
		return nil, false
	}
	jreq, ok := decoded.(*jsonrpc.Request)
	return jreq, ok
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

// quietParams reports whether a tools/call's params (msg's) are the
// host's to answer: no task (params.task, answered in the
// task's terms) and a _meta, if any, of a progress token and trace
// context only (progressToken, traceparent, tracestate; anything else
// goes to the SDK).
func quietParams(msg *envelope.Message) bool {
	if len(msg.Params) == 0 || msg.Task != nil {
		return false
	}
	meta := msg.Meta
	if meta == nil {
		return true
	}
	var m map[string]json.RawMessage
	if json.Unmarshal(meta, &m) != nil {
		return false
	}
	for k := range m {
		if k != "progressToken" && k != "traceparent" && k != "tracestate" {
			return false
		}
	}
	return true
}
