// Package otc serves a Host's functions over the Open Tool Calling (OTC)
// standard (https://github.com/ArcadeAI/OpenToolCalling), mounted under /otc:
//
//	GET  /otc/health  → 200 {"status":"ok"}                  (RFC 5.1)
//	GET  /otc/tools   → 200 {"$schema", "tools": [ToolDefinition]} (RFC 5.2, 4.1)
//	POST /otc/call    → 200 CallResponse                      (RFC 5.2 "Tool Execution", 4.2, 4.3)
//
// Every served OpenTool function is one tool. Its id is
// "Toolkit.Tool@Version": Toolkit is the info.title of the serving
// plugin's own document made an identifier ("CRUD API for mock" →
// "CRUDAPIForMock"), Tool the function name ("-" written "_"), Version the
// document's info.version. A call may name a tool without version or with
// "@latest": both mean the version served now (RFC 4.2 "Tool Version
// Resolution").
//
// One call travels: call.go (decode the request, resolve tool_id) →
// Backend.Call (the host validates the input against the parameters and
// runs the plugin) → call.go (CallResponse, host errors mapped to
// output.error with can_retry).
//
// Authentication is not done here: the caller wraps the handler (the
// command mounts it behind the same API keys as the OpenTool API).
package otc

import (
	"context"
	"encoding/json"
	"net/http"
	"sync/atomic"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/opentool-host/opentool-host/frontend/httpguard"
	"github.com/opentool-host/opentool-host/frontend/keyview"
	"github.com/opentool-host/opentool-host/frontend/route"
	"github.com/opentool-host/opentool-host/host"
	"github.com/opentool-host/opentool-host/host/core"
)

// SchemaURL is the "$schema" of every response: the OTC HTTP 1.0
// specification (RFC section 7, "Versioning").
const SchemaURL = "https://github.com/ArcadeAI/OpenToolCalling/tree/main/specification/http/1.0/openapi.json"

// BasePath is where the OTC API is mounted.
const BasePath = "/otc"

// DefaultMaxBodyBytes is the default request body limit (4 MiB).
const DefaultMaxBodyBytes = httpguard.DefaultMaxBodyBytes

// DefaultMaxResultBytes is the default limit of a streaming tool's
// collected items: the host's own result cap (16 MiB).
const DefaultMaxResultBytes = core.DefaultMaxResultBytes

// Backend is what the OTC API needs from a host. *host.Host implements it.
type Backend interface {
	// Call runs a function; see host.Host.Call.
	Call(ctx context.Context, fn string, args []byte) ([]byte, error)
	// StreamCall runs a streaming function; see host.Host.StreamCall.
	StreamCall(ctx context.Context, x *core.Exchange, fn string, args []byte, onItem func([]byte) error) error
	// Source lists the served functions with their plugin's document
	// info (host.Host.Functions), and tells what each key finds in
	// GET /otc/tools (package catalog).
	keyview.Source
}

var _ Backend = (*host.Host)(nil)

// Config configures the OTC API. Zero fields take the defaults listed.
type Config struct {
	// MaxBodyBytes caps a request body, in bytes; larger bodies get HTTP
	// 413. Default DefaultMaxBodyBytes.
	MaxBodyBytes int64
	// MaxResultBytes caps the items of a streaming tool collected into
	// one value, in bytes. Default DefaultMaxResultBytes.
	MaxResultBytes int64
	// Logger logs failed calls and tools that cannot be listed. Default:
	// a null logger.
	Logger hclog.Logger
	// WriteTimeout is how long a client has to take one response; a
	// client that does not read is cut off then. Default
	// httpguard.DefaultWriteTimeout (30 s).
	WriteTimeout time.Duration
}

// Server is the OTC front end: a codec between the RFC's wire format and
// the Backend, whose routes (Routes) the front door serves.
type Server struct {
	b     Backend
	cfg   Config
	index atomic.Pointer[index] // tools of the last route table seen
}

// New returns the OTC front end of b; Routes declares its routes.
func New(b Backend, cfg Config) *Server {
	if cfg.MaxBodyBytes <= 0 {
		cfg.MaxBodyBytes = DefaultMaxBodyBytes
	}
	if cfg.MaxResultBytes <= 0 {
		cfg.MaxResultBytes = DefaultMaxResultBytes
	}
	if cfg.Logger == nil {
		cfg.Logger = hclog.NewNullLogger()
	}
	if cfg.WriteTimeout <= 0 {
		cfg.WriteTimeout = httpguard.DefaultWriteTimeout
	}
	return &Server{b: b, cfg: cfg}
}

// Routes declares the routes of the RFC (section 5): GET
// BasePath/health, GET BasePath/tools, POST BasePath/call. The front door
// takes the rate limit (once for every front end, before the tool is
// resolved, so that the answer does not depend on which tools the key
// may call): a call and a listing cost 1, a refused call is answered as
// a CallResponse (refuseCall), a refused listing with the front door's
// JSON 429. A call's result stays charged against the host's result
// memory until written. Every path under BasePath is refused as a
// CallResponse (WriteRefusal).
func (h *Server) Routes() []route.Route {
	call := route.OneRefusedBy(h.refuseCall)
	return []route.Route{
		{Pattern: "GET " + BasePath + "/health", Handler: http.HandlerFunc(h.handleHealth), Refuse: refuse},
		{Pattern: "GET " + BasePath + "/tools", Handler: http.HandlerFunc(h.handleTools), Meter: route.One, Refuse: refuse},
		{Pattern: "POST " + BasePath + "/call", Handler: http.HandlerFunc(h.handleCall), Meter: call, HoldsResults: true, Refuse: refuse},
	}
}

// refuse writes a request refused by the front door as WriteRefusal
// does (route.Route.Refuse).
func refuse(w http.ResponseWriter, _ *http.Request, status int, msg string) {
	WriteRefusal(w, status, msg)
}

// handleHealth serves GET /otc/health (RFC 5.1): 200 while the server
// accepts requests. Plugin states are on the host's own GET /health.
func (h *Server) handleHealth(w http.ResponseWriter, _ *http.Request) {
	h.writeBody(w, http.StatusOK, []byte(`{"status":"ok"}`))
}

// handleTools serves GET /otc/tools (RFC 5.2 "Tool Discovery"): the
// tools listed to the request's API key (keyview.View.Listed: those it may
// call, the host's tool search functions included, the threshold
// applied); run_code's description (--code-mode) is the caller's, with
// TypeScript declarations of the tools it may call
// (keyview.CodeDescription).
func (h *Server) handleTools(w http.ResponseWriter, r *http.Request) {
	ix := h.tools()
	body := ix.body
	var desc *string
	if t := ix.code(); t != nil {
		if d, ok := keyview.CodeDescription(r.Context(), h.b, t.fn.Name); ok {
			desc = &d
		}
	}
	if l := keyview.Of(r.Context(), h.b).Listed(); !l.All() {
		body = ix.list(l.Has, desc)
	} else if desc != nil {
		body = ix.list(nil, desc)
	}
	h.writeBody(w, http.StatusOK, body)
}

// writeBody writes a JSON response under the write deadline.
func (h *Server) writeBody(w http.ResponseWriter, status int, body []byte) {
	httpguard.Write(w, status, httpguard.JSON, body, h.cfg.WriteTimeout)
}

// WriteRefusal writes a request the front door refused before the OTC
// handler read it (RequestGuard: 403, 415) as a CallResponse with success
// false and output.error.message "Invalid request: MSG" (RFC 4.3).
func WriteRefusal(w http.ResponseWriter, status int, msg string) {
	b, _ := json.Marshal(&CallResponse{Schema: SchemaURL, Output: &CallOutput{Error: &ToolError{Message: "Invalid request: " + msg}}})
	httpguard.Write(w, status, httpguard.JSON, b, httpguard.DefaultWriteTimeout)
}
