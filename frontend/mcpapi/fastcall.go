package mcpapi

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"sync/atomic"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/opentool-host/opentool-host/frontend/httpguard"
	"github.com/opentool-host/opentool-host/frontend/mcpapi/envelope"
	"github.com/opentool-host/opentool-host/frontend/mcpapi/respond"
	"github.com/opentool-host/opentool-host/internal/mcpsession"
	"github.com/opentool-host/opentool-host/internal/strictjson"
	"github.com/opentool-host/opentool-host/protocol/mcpmethod"
)

// A session's tools/call whose answer can need nothing but its response
// is answered by the host itself (fastCalls): the one JSON-RPC request
// read, handled on the session by the SDK's own request handling
// (mcp.ServerSession.HandleRequest: the initialization gate, the params,
// every receiving middleware, the tool's handler, the response encoded as
// the SDK encodes it) and written as one application/json response. The
// SDK's streamable transport (its event stream, its stream registry, its
// connection's in-flight requests and hand-offs) is left out of the
// path. Everything else goes to the SDK: see fastCalls.eligible.

// sessionHolder is the SDK's streamable handler with sessions as the fast
// path uses it (mcp.StreamableHTTPHandler.HoldSession: the SDK's patch
// 0011); an SDK as released has no such method, and every call then goes
// to the SDK.
type sessionHolder interface {
	HoldSession(r *http.Request, sessionID string) (ss *mcp.ServerSession, release func(), status int)
}

// requestHandler is a session as the fast path calls it
// (mcp.ServerSession.HandleRequest, patch 0011 too).
type requestHandler interface {
	HandleRequest(ctx context.Context, req *jsonrpc.Request) ([]byte, error)
}

// fastCalls is the handler with sessions (HTTPOptions.Sessions): a
// session's eligible tools/call answered by serve, every other request by
// sdk. Taken counts the calls the host answered itself.
type fastCalls struct {
	h      *HTTPHandler
	sdk    http.Handler
	holder sessionHolder // nil: the SDK has no HoldSession
	taken  atomic.Int64
}

// newFastCalls returns the fast path over sdk, the SDK's handler with
// sessions.
func newFastCalls(h *HTTPHandler, sdk *mcp.StreamableHTTPHandler) *fastCalls {
	f := &fastCalls{h: h, sdk: sdk}
	f.holder, _ = any(sdk).(sessionHolder)
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
	body, complete := envelope.Buffer(r, f.h.o.MaxBodyBytes)
	if !complete || len(body) == 0 || body[0] != '{' {
		return false
	}
	msg, err := jsonrpc.DecodeMessage(body)
	if err != nil {
		return false
	}
	jreq, ok := msg.(*jsonrpc.Request)
	if !ok || !jreq.IsCall() || jreq.Method != mcpmethod.ToolsCall || !quietParams(jreq.Params) {
		return false
	}
	sid := r.Header.Get("Mcp-Session-Id")
	ss, release, status := f.holder.HoldSession(r, sid)
	if status != 0 {
		return false // the SDK answers it (404, 403)
	}
	defer release()
	rh, ok := any(ss).(requestHandler)
	if !ok || !f.eligibleSession(ss, r.Header.Get("Mcp-Protocol-Version")) {
		return false
	}
	// As on the SDK's session, the call does not end with its POST: a
	// notifications/cancelled naming it (inflight), the session's DELETE
	// (inflight.endSession) or the host's shutdown ends it.
	id := strictjson.Member(body, "id") // as envelope.Check keys it (Message.ID)
	r = r.WithContext(context.WithoutCancel(r.Context()))
	r, done := f.h.s.inflight.track(r, &envelope.Message{Method: mcpmethod.ToolsCall, ID: id}, sid)
	defer done()
	ctx := r.Context()
	defer context.AfterFunc(f.h.s.down, done)()
	jreq.Extra = &mcp.RequestExtra{
		TokenInfo:      auth.TokenInfoFromContext(r.Context()),
		Header:         r.Header,
		CloseSSEStream: func(mcp.CloseSSEStreamArgs) {}, // no stream to close
	}
	f.taken.Add(1)
	resp, err := rh.HandleRequest(ctx, jreq)
	if err != nil { // the call ran: answered, not handed to the SDK
		respond.Refuse(w, http.StatusOK, jsonrpc.CodeInternalError, err.Error(), id)
		return true
	}
	h := w.Header()
	h.Set("Cache-Control", "no-cache, no-transform")
	h.Set("Mcp-Session-Id", sid)
	httpguard.Write(w, http.StatusOK, httpguard.JSON, resp, f.h.o.WriteTimeout)
	return true
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
	if r.Method != http.MethodPost || r.Header.Get("Mcp-Session-Id") == "" || len(r.Header.Values("Last-Event-ID")) > 0 {
		return false
	}
	v := r.Header.Get("Mcp-Protocol-Version")
	if v == "" || v >= mcpsession.SessionlessRevision {
		return false
	}
	if mt, _, _ := strings.Cut(r.Header.Get("Content-Type"), ";"); !strings.EqualFold(strings.TrimSpace(mt), "application/json") {
		return false
	}
	jsonOK, streamOK := false, false
	for _, value := range r.Header.Values("Accept") {
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
	for k := range r.Header {
		if k == "Mcp-Method" || k == "Mcp-Name" || strings.HasPrefix(k, "Mcp-Param-") {
			return false
		}
	}
	return true
}

// eligibleSession reports whether a call on ss can need nothing on its
// stream but its response: ss initialized in revision version (the
// request's MCP-Protocol-Version), its client without roots, sampling,
// elicitation or any extension (a call could ask it, or be answered in
// the extension's terms), and without a log level set (a call's log
// messages go on its stream).
func (f *fastCalls) eligibleSession(ss *mcp.ServerSession, version string) bool {
	ip := ss.InitializeParams()
	if ip == nil || ip.ProtocolVersion != version || f.h.s.logs.asked(ss) {
		return false
	}
	c := ip.Capabilities
	return c == nil || c.Sampling == nil && c.Elicitation == nil && c.RootsV2 == nil && !c.Roots.ListChanged &&
		len(c.Extensions) == 0 && len(c.Experimental) == 0
}

// quietParams reports whether a tools/call's params ask for nothing on
// the call's stream: no task (params.task) and a _meta, if any, of trace
// context only (traceparent, tracestate; a progressToken, or anything
// else, goes to the SDK).
func quietParams(params json.RawMessage) bool {
	if len(params) == 0 || strictjson.Member(params, "task") != nil {
		return false
	}
	meta := strictjson.Member(params, "_meta")
	if meta == nil {
		return true
	}
	var m map[string]json.RawMessage
	if json.Unmarshal(meta, &m) != nil {
		return false
	}
	for k := range m {
		if k != "traceparent" && k != "tracestate" {
			return false
		}
	}
	return true
}
