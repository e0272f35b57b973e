package mcpapi

import (
	"context"
	"net/http"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/opentool-host/opentool-host/frontend/httpguard"
	"github.com/opentool-host/opentool-host/frontend/mcpapi/envelope"
	"github.com/opentool-host/opentool-host/frontend/mcpapi/respond"
	"github.com/opentool-host/opentool-host/frontend/mcpapi/tasklayer"
	"github.com/opentool-host/opentool-host/frontend/route"
	"github.com/opentool-host/opentool-host/host/access"
	"github.com/opentool-host/opentool-host/internal/mcpsession"
	"github.com/opentool-host/opentool-host/protocol/jsonrpc"
	"github.com/opentool-host/opentool-host/protocol/mcpmethod"
)

// Path is where the streamable HTTP endpoint is mounted, next to
// /opentool and /otc.
const Path = "/mcp"

// HTTPOptions tunes Handler.
type HTTPOptions struct {
	// Sessions keeps MCP sessions (MCP 2025-06-18 "Transports", session
	// management: Mcp-Session-Id, a GET stream for server messages,
	// DELETE) for clients of protocol revisions before 2026-07-28 that
	// want notifications/tools/list_changed pushed. Sessions live in
	// this process, so every request of a session must reach it.
	// Requests of 2026-07-28 and later, which has no sessions
	// (SEP-2575), are answered statelessly all the same (sessionless).
	//
	// Off (the default), the endpoint is stateless: every POST is
	// answered on its own, so any replica behind a load balancer can
	// answer any request; GET and DELETE get 405. Clients of 2026-07-28
	// and later still get list_changed, over subscriptions/listen; older
	// clients are answered request by request and re-list when they
	// choose.
	Sessions bool
	// MaxBodyBytes caps a request body, in bytes; a larger one is
	// answered 413. Default the SDK's (4 MiB, as --max-body).
	MaxBodyBytes int64
	// MaxSessions caps the sessions held at once (with Sessions): an
	// initialize beyond it is answered 503 with a JSON-RPC error (and
	// Retry-After: 1), so that clients cannot fill the host's memory with
	// sessions. Default DefaultMaxSessions.
	MaxSessions int
	// MaxSessionsPerKey caps the sessions one API key holds at once (with
	// Sessions and API keys; every key, a key that sees everything too):
	// its initialize beyond it is answered 429 with a JSON-RPC error (and
	// Retry-After: 1), so that one key cannot take every session of
	// MaxSessions from the others. Default DefaultMaxSessionsPerKey.
	MaxSessionsPerKey int
	// SessionIdle closes a session that has had no request for this long
	// (--mcp-session-idle). Default DefaultSessionIdle.
	SessionIdle time.Duration
	// MaxBatch is the most messages one POST may carry as a JSON-RPC
	// batch (envelope.Check); clients of revision 2025-06-18 and later may
	// send none. Default DefaultMaxBatch.
	MaxBatch int
	// WriteTimeout is how long a client has to take each response or
	// stream frame before it is cut off (httpguard.SetWriteDeadline, as
	// for /opentool and /otc). Default httpguard.DefaultWriteTimeout.
	WriteTimeout time.Duration
}

// Handler returns the MCP streamable HTTP endpoint (MCP "Transports",
// Streamable HTTP) of s. POST bodies must be application/json and
// clients must accept application/json and text/event-stream (the SDK
// answers 415 and 400 otherwise).
//
// A call ends, and the host cancels it in the plugin, when the client
// sends notifications/cancelled on a session; without sessions, when a
// notifications/cancelled from the same API key names it and reaches this
// host (cancel.go), or when the POST that carries the call ends (its
// answer can no longer be delivered). Authentication is the caller's: wrap the handler with
// access.Guard.Middleware (or httpguard.RequireAPIKey), as run does; the
// grant it puts on each request limits what that request sees and calls
// (access.go).
func (s *Server) Handler(o HTTPOptions) *HTTPHandler {
	if o.WriteTimeout <= 0 {
		o.WriteTimeout = httpguard.DefaultWriteTimeout
	}
	if o.MaxBatch <= 0 {
		o.MaxBatch = DefaultMaxBatch
	}
	if o.MaxSessions <= 0 {
		o.MaxSessions = DefaultMaxSessions
	}
	if o.MaxSessionsPerKey <= 0 {
		o.MaxSessionsPerKey = DefaultMaxSessionsPerKey
	}
	if o.SessionIdle <= 0 {
		o.SessionIdle = DefaultSessionIdle
	}
	if o.MaxBodyBytes <= 0 {
		o.MaxBodyBytes = httpguard.DefaultMaxBodyBytes
	}
	sdk := func(stateless bool) *mcp.StreamableHTTPHandler {
		return mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s.srv }, &mcp.StreamableHTTPOptions{
			Stateless:                    stateless,
			PropagateRequestCancellation: true,
			MaxRequestBodyBytes:          o.MaxBodyBytes,
			// The host's request guard (httpguard.RequestGuard, before every
			// route) checks Host and Origin, with --allowed-host and
			// --allowed-origin; the SDK's own loopback-only check would refuse
			// what the operator allowed.
			DisableLocalhostProtection: true,
			SessionTimeout:             o.SessionIdle,
		})
	}
	h := &HTTPHandler{s: s, o: o, stateless: withToken(sdk(true))}
	if o.Sessions {
		h.fast = newFastCalls(h, sdk(false))
		h.sessions = withToken(h.fast)
		h.slots = &sessionSlots{max: o.MaxSessions, perKey: o.MaxSessionsPerKey, idle: o.SessionIdle, byKey: map[string]int{}}
	}
	return h
}

// HTTPHandler is the MCP streamable HTTP endpoint (Server.Handler).
type HTTPHandler struct {
	s *Server
	o HTTPOptions
	// stateless answers every request without a session: all of them
	// without HTTPOptions.Sessions, those of the revisions without
	// sessions (2026-07-28 and later, sessionless) with it.
	stateless http.Handler
	// sessions answers the requests of older revisions with
	// HTTPOptions.Sessions (nil without).
	sessions http.Handler
	fast     *fastCalls    // the session calls the host answers itself (fastcall.go), with sessions
	slots    *sessionSlots // the sessions held (sessions.go), with sessions
}

// ServeHTTP implements http.Handler: the envelope checked
// (envelope.Check), the session caps (sessions.go), then the SDK.
func (h *HTTPHandler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	s, o := h.s, h.o
	msg, e := envelope.Check(r, o.MaxBodyBytes, o.MaxBatch)
	if e != nil {
		respond.Refuse(w, e.Status, e.Code, e.Message, nil)
		return
	}
	if e := checkTaskName(r, msg, o.MaxBodyBytes); e != nil {
		respond.Refuse(w, e.Status, e.Code, e.Message, msg.ID)
		return
	}
	if e := coreOnlyHTTP(r, msg); e != nil {
		respond.Refuse(w, e.Status, e.Code, e.Message, msg.ID)
		return
	}
	stateless := !o.Sessions || sessionless(r, msg)
	if !stateless && opensSession(r) {
		g := access.GrantFrom(r.Context())
		if status, msg := h.slots.acquire(g); status != 0 {
			w.Header().Set("Retry-After", "1")
			respond.Refuse(w, status, -32000, msg, nil)
			return
		}
		defer h.hold(w, g) // once the SDK has answered
	}
	if listens(r) {
		ctx, cancel := context.WithCancel(r.Context())
		defer cancel()
		defer context.AfterFunc(s.down, cancel)()
		r = r.WithContext(ctx)
	}
	if stateless {
		var release func()
		r, release = s.inflight.track(r, msg, "")
		defer release()
		r = httpguard.BindRequest(r)
	}
	dw := &respond.Writer{ResponseWriter: w, D: o.WriteTimeout, Call: msg.Call() && !listens(r)}
	defer s.marks.Release(s.marks.Track(r, dw, msg.Call()))
	delete(r.Header, tasklayer.ListenHeader) // the host's own (canonical: Del without canonicalizing)
	markCoreTask(r, msg)
	if listens(r) && msg != nil && msg.Method == methodListen && s.tasks != nil {
		if body, complete := envelope.Buffer(r, o.MaxBodyBytes); complete {
			if tl := s.tasks.OpenListen(w, r, o.WriteTimeout, body); tl != nil {
				dw.Stream = tl
				defer s.tasks.CloseListen(tl)
			}
		}
	}
	asJSON(r)
	jw := &respond.JSONErrors{Writer: dw}
	defer jw.Finish()
	if stateless {
		h.stateless.ServeHTTP(jw, r)
		return
	}
	if r.Method == http.MethodDelete { // the SDK's close waits for the requests it holds
		sid, g := r.Header.Get("Mcp-Session-Id"), access.GrantFrom(r.Context())
		s.endAsks(sid, g)
		s.inflight.endSession(g.Name(), sid) // and those the host answers itself
	}
	if msg != nil && msg.Method == mcpmethod.Cancelled { // a call the host answers itself (fastcall.go)
		s.inflight.track(r, msg, r.Header.Get("Mcp-Session-Id"))
	}
	if st := s.chans.Open(w, r, o.WriteTimeout); st != nil {
		dw.Stream = st
		defer s.chans.Close(r.Header.Get("Mcp-Session-Id"), st)
	}
	h.sessions.ServeHTTP(jw, r)
}

// asJSON gives a POST of Content-Type application/json-rpc (which the
// host's request guard accepts, httpguard.RequestGuard) to the SDK as
// application/json, the one type it reads, its parameters kept.
func asJSON(r *http.Request) {
	ct := httpguard.Header(r.Header, "Content-Type")
	if mt, params, ok := strings.Cut(ct, ";"); strings.EqualFold(strings.TrimSpace(mt), "application/json-rpc") {
		if ok {
			r.Header.Set("Content-Type", "application/json;"+params)
		} else {
			r.Header.Set("Content-Type", "application/json")
		}
	}
}

// coreOnlyHTTP is the refusal of tasklayer.CoreOnlyAsked for r, a POST of one
// request m: HTTP 404 for a request of 2026-07-28 (its -32601), else 200
// (a JSON-RPC error as the SDK answers one); nil for any other request.
func coreOnlyHTTP(r *http.Request, m *envelope.Message) *envelope.Error {
	if !m.Call() {
		return nil
	}
	version := max(httpguard.Header(r.Header, "Mcp-Protocol-Version"), m.Version)
	je := tasklayer.CoreOnlyAsked(m.Method, version, m.Params)
	if je == nil {
		return nil
	}
	status := http.StatusOK
	if version >= mcpsession.SessionlessRevision {
		status = http.StatusNotFound
	}
	return &envelope.Error{Status: status, Code: int(je.Code), Message: je.Message}
}

// sessionless reports whether r, on an endpoint with sessions, is a
// request of a revision without sessions, which the stateless handler
// answers: a POST without Mcp-Session-Id whose MCP-Protocol-Version
// header or _meta "io.modelcontextprotocol/protocolVersion" names
// 2026-07-28 or later (a later or unknown one the SDK then refuses with
// -32022), or a server/discover (the probe of a 2026-07-28 client, which
// with a session would be told that only older revisions are spoken).
// Every other request (an older client's, and anything with
// Mcp-Session-Id, GET and DELETE) goes to the sessions.
func sessionless(r *http.Request, m *envelope.Message) bool {
	if r.Method != http.MethodPost || httpguard.Header(r.Header, "Mcp-Session-Id") != "" {
		return false
	}
	if httpguard.Header(r.Header, "Mcp-Protocol-Version") >= mcpsession.SessionlessRevision {
		return true
	}
	return m != nil && (m.Method == mcpmethod.Discover || m.Version >= mcpsession.SessionlessRevision)
}

// Routes declares the endpoint, Path (every method), to the front door:
// its cost (Meter), its streams (a session's GET stream and a
// subscriptions/listen POST, counted against the host's stream caps) and
// its refusals, a JSON-RPC error response with a null id and code -32600
// (respond.Refuse), for every path under Path.
func (h *HTTPHandler) Routes() []route.Route {
	return []route.Route{{Pattern: Path, Handler: h, Meter: h.Meter, Stream: streams, Refuse: refuse}}
}

// streams reports whether r holds a stream open: a GET (a session's
// stream of server messages) or a subscriptions/listen POST.
func streams(r *http.Request) bool {
	return r.Method == http.MethodGet || r.Method == http.MethodPost && listens(r)
}

// refuse writes a request refused by the front door as an invalid
// request (route.Route.Refuse).
func refuse(w http.ResponseWriter, _ *http.Request, status int, msg string) {
	respond.Refuse(w, status, jsonrpc.CodeInvalidRequest, msg, nil)
}

// Meter is the endpoint's route.Meter (the front door takes the rate
// limit, once for every front end): a POST costs one call per JSON-RPC request
// it carries, each request of a batch its own, initialize and listings
// as calls; notifications and a client's responses cost nothing, nor
// does a body the envelope check refuses (over --max-body, a batch over
// --max-batch or from a revision without batches). A refused POST is
// answered HTTP 200 (MCP clients read a JSON-RPC error only from a
// successful response; the Go SDK's takes a 429 as a transport failure)
// with application/json: for each request, {"jsonrpc":"2.0","id":ID,
// "error":{"code":-32000,"message":"rate limited: too many calls for
// this API key","data":{"retry_after_ms":N}}}, an array of them for a
// batch. The body is read here (at most --max-body) and put back for
// ServeHTTP, which does not read it again.
func (h *HTTPHandler) Meter(r *http.Request) (int, func(http.ResponseWriter, *http.Request, *access.Refusal)) {
	if r.Method != http.MethodPost || r.Body == nil {
		return 0, nil
	}
	body, complete := envelope.Buffer(r, h.o.MaxBodyBytes)
	if !complete || envelope.CheckBatch(r, body, h.o.MaxBatch) != nil {
		return 0, nil
	}
	ids, batch := envelope.RequestIDs(body, h.o.MaxBatch)
	if len(ids) == 0 {
		return 0, nil
	}
	return len(ids), func(w http.ResponseWriter, _ *http.Request, rf *access.Refusal) {
		je := &jsonrpc.Error{Code: access.CodeRateLimited, Message: rf.Message, Data: map[string]any{"retry_after_ms": access.RetryAfterMs(rf.RetryAfter)}}
		var b []byte
		if batch {
			b = append(b, '[')
		}
		for i, id := range ids {
			if i > 0 {
				b = append(b, ',')
			}
			b = jsonrpc.AppendError(b, je, id)
		}
		if batch {
			b = append(b, ']')
		}
		httpguard.Write(w, http.StatusOK, httpguard.JSON, b, h.o.WriteTimeout)
	}
}

// opensSession reports whether r may open a session: a POST without a
// session id (an initialize).
func opensSession(r *http.Request) bool {
	return r.Method == http.MethodPost && httpguard.Header(r.Header, "Mcp-Session-Id") == ""
}

// listens reports whether r opens a stream that only waits for server
// messages: a session's GET stream, or a subscriptions/listen POST (the
// SDK checks that the Mcp-Method header matches the body).
func listens(r *http.Request) bool {
	return r.Method == http.MethodGet || httpguard.Header(r.Header, "Mcp-Method") == mcpmethod.SubscriptionsListen
}

// checkTaskName is tasklayer.CheckTaskName of r, a POST of one message
// m, as an HTTP 400 refusal; nil when it passes.
func checkTaskName(r *http.Request, m *envelope.Message, maxBody int64) *envelope.Error {
	if m == nil {
		return nil
	}
	je := tasklayer.CheckTaskName(m.Method, httpguard.Header(r.Header, "Mcp-Protocol-Version"), httpguard.Header(r.Header, "Mcp-Name"),
		func() ([]byte, bool) { return envelope.Buffer(r, maxBody) })
	if je == nil {
		return nil
	}
	return &envelope.Error{Status: http.StatusBadRequest, Code: int(je.Code), Message: je.Message}
}

// markCoreTask sets tasklayer.CoreTaskHeader on r, a single tools/call
// POST, when its params.task is an object; it removes a client's own
// first.
func markCoreTask(r *http.Request, m *envelope.Message) {
	delete(r.Header, tasklayer.CoreTaskHeader) // canonical: Del without canonicalizing
	if m != nil && m.Method == mcpmethod.ToolsCall && tasklayer.IsTask(m.Task) {
		r.Header.Set(tasklayer.CoreTaskHeader, "1")
	}
}

// DefaultMaxBatch is HTTPOptions.MaxBatch's default (--max-batch): the
// most JSON-RPC messages one POST may carry as a batch.
const DefaultMaxBatch = 16
