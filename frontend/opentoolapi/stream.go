package opentoolapi

import (
	"bytes"
	"encoding/json"
	"errors"
	"net/http"
	"time"

	"github.com/opentool-host/opentool-host/frontend/sse"
	"github.com/opentool-host/opentool-host/host"
	"github.com/opentool-host/opentool-host/host/core"
	"github.com/opentool-host/opentool-host/protocol/jsonrpc"
	"github.com/opentool-host/opentool-host/protocol/mcpmethod"
	"github.com/opentool-host/opentool-host/protocol/opentool"
)

// SSE event names of POST /opentool/streamCall.
const (
	// EventStart opens a stream: data {"start":"NAME"}.
	EventStart = "start"
	// EventData carries one item: data {"jsonrpc":"2.0","result":ITEM,"id":ID}.
	EventData = "data"
	// EventError ends a failed stream: data is a JSON-RPC error response
	// {"jsonrpc":"2.0","result":{},"error":{"code","message"},"id":ID}.
	EventError = "error"
	// EventDone ends a successful stream: data {"done":"NAME"}.
	EventDone = "done"
	// EventProgress reports the function's progress (a plugin of protocol
	// 3 that sent notifications/progress, MCP "Utilities: Progress"):
	// data {"progress":N[,"total":T][,"message":M]}, between data frames.
	EventProgress = "progress"
)

// StreamContentType is the Content-Type of a streamCall response.
const StreamContentType = sse.ContentType

// functionFinder is implemented by backends that can look a function up
// before calling it (*host.Host does). handleStreamCall uses it to open the
// stream at once instead of at the first item.
type functionFinder interface {
	Function(fn string) *opentool.Function
}

var _ functionFinder = (*host.Host)(nil)

// handleStreamCall serves POST /opentool/streamCall: the request body is
// the JSON-RPC request of POST /opentool/call; the response is a
// server-sent event stream (Content-Type: text/event-stream) of frames
// "event:NAME\ndata:JSON\n\n", each written and flushed in one Write:
//
//	event:start     data:{"start":"FN"}
//	event:data      data:{"jsonrpc":"2.0","result":ITEM,"id":ID}   (one per item)
//	event:progress  data:{"progress":N,"total":T,"message":M}   (when the plugin reports it)
//	event:done      data:{"done":"FN"}
//
// A failure after the request was decoded (the function does not stream
// (core.ErrWrongKind, code -32600), the tool's own error (its code), a
// plugin failure or timeout (-32603)) is sent as start, then one
// event:error frame whose data is the JSON-RPC error response, and the
// stream ends without done.
//
// Errors found before anything is streamed get the plain JSON-RPC error
// response of POST /opentool/call, with the same HTTP statuses: -32700 and
// -32600 (HTTP 400) for a bad body, 413 for a body over MaxBodyBytes, 415
// for a non-JSON Content-Type, and -32601 (HTTP 200) for an unknown
// function.
//
// The stream opens (HTTP 200 and the start frame are flushed) before the
// call when the Backend can look the function up (*host.Host can);
// otherwise at the first item or at the end of the call. When the client
// disconnects, the request context is cancelled and with it the plugin's
// stream; nothing more is written.
func (s *Server) handleStreamCall(w http.ResponseWriter, r *http.Request) {
	bp := getBuf()
	defer putBuf(bp)

	req, ok := s.decodeCall(w, r, bp)
	if !ok {
		return
	}

	fp := getBuf()
	defer putBuf(fp)
	sw := &sseWriter{w: w, rc: http.NewResponseController(w), fn: req.Method, id: req.ID, buf: (*fp)[:0], timeout: s.cfg.WriteTimeout}
	defer func() { *fp = sw.buf }()

	if ff, ok := s.b.(functionFinder); ok && ff.Function(req.Method) != nil && s.visible(r.Context(), req.Method) {
		sw.begin()
	}
	// A progress token asks the plugin for progress, as an MCP client's
	// does (pluginsdk.Progress sends none without one).
	err := s.b.StreamCall(callContext(r, req), &core.Exchange{Meta: streamMeta, Notify: sw.notify}, req.Method, req.Params, sw.item)
	if sw.werr != nil || r.Context().Err() != nil {
		return // the client went away
	}
	if err != nil {
		je := s.rpcError(r.Context(), req.Method, err)
		if je == nil {
			return
		}
		if !sw.started && errors.Is(err, core.ErrFunctionNotFound) {
			s.writeRPC(w, http.StatusOK, jsonrpc.AppendError((*bp)[len(*bp):], je, req.ID))
			return
		}
		sw.begin()
		sw.buf = jsonrpc.AppendError(sw.head(EventError), je, req.ID)
		sw.flushFrame()
		return
	}
	sw.begin()
	sw.nameFrame(EventDone)
}

// sseWriter writes the frames of one stream. Not safe for concurrent use:
// Backend.StreamCall calls item from the handler's goroutine.
type sseWriter struct {
	w       http.ResponseWriter
	rc      *http.ResponseController
	fn      string // function name, for start and done
	id      []byte // raw JSON id of the request
	buf     []byte // the frame being built
	started bool
	werr    error         // first write error: the client is gone
	timeout time.Duration // for the client to take each frame
}

// begin writes the headers and the start frame, once.
func (sw *sseWriter) begin() {
	if sw.started {
		return
	}
	sw.started = true
	sse.Open(sw.w)
	sw.nameFrame(EventStart)
}

// item is the Backend.StreamCall callback: one event:data frame per item.
func (sw *sseWriter) item(item []byte) error {
	sw.begin()
	if sw.werr != nil {
		return sw.werr
	}
	if bytes.ContainsAny(item, "\r\n") { // an SSE data line cannot hold a newline
		var c bytes.Buffer
		if err := json.Compact(&c, item); err == nil {
			item = c.Bytes()
		}
	}
	sw.buf = jsonrpc.AppendResult(sw.head(EventData), item, sw.id)
	sw.flushFrame()
	return sw.werr
}

// notify is the call's core.Exchange.Notify: a plugin's
// notifications/progress becomes one event:progress frame (its
// progress, total and message; the token is MCP's and left out); other
// notifications are dropped. The host calls it from the goroutine that
// calls item.
func (sw *sseWriter) notify(method string, params []byte) {
	if method != mcpmethod.Progress {
		return
	}
	var p struct {
		Progress float64 `json:"progress"`
		Total    float64 `json:"total,omitempty"`
		Message  string  `json:"message,omitempty"`
	}
	if json.Unmarshal(params, &p) != nil {
		return
	}
	b, err := json.Marshal(p)
	if err != nil {
		return
	}
	sw.begin()
	sw.buf = append(sw.head(EventProgress), b...)
	sw.flushFrame()
}

// nameFrame writes event:start or event:done: data {"EVENT":"FN"}.
func (sw *sseWriter) nameFrame(event string) {
	b := append(sw.head(event), `{"`...)
	b = append(b, event...)
	b = append(b, `":`...)
	name, _ := json.Marshal(sw.fn) // a string always encodes
	b = append(b, name...)
	sw.buf = append(b, '}')
	sw.flushFrame()
}

// head starts a frame in sw.buf: "event:EVENT\ndata:" (sse.Head).
func (sw *sseWriter) head(event string) []byte { return sse.Head(sw.buf[:0], event) }

// flushFrame ends the frame in sw.buf with "\n\n", writes it in one Write
// (the reference Dart client loses frames split across reads) and flushes,
// giving the client sw.timeout to take it.
func (sw *sseWriter) flushFrame() {
	if sw.werr != nil {
		return
	}
	sw.buf = sse.End(sw.buf)
	sw.werr = sse.Send(sw.w, sw.rc, sw.buf, sw.timeout)
}

// streamMeta is the _meta a streamCall hands plugins of protocol 3.
var streamMeta = []byte(`{"progressToken":"opentool/streamCall"}`)
