// Package respond writes the answer of one request to /mcp around the
// MCP Go SDK's streamable transport, knowing only the stream a request
// holds (Stream) and its own mark of a response (Marks):
//
//	writer                  what it does
//	Writer                  each write and flush under the write deadline;
//	                        a call's response event held for the end of
//	                        the response; a listen or GET stream's writes
//	                        through its Stream
//	Marks                   the receiving middleware that marks a POST's
//	                        Writer once the SDK's handler has returned the
//	                        response (nothing is read of the SDK's bytes)
//	JSONErrors              the SDK's plain-text refusals (http.Error) as
//	                        JSON-RPC error responses (Refuse)
package respond

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/opentool-host/opentool-host/frontend/httpguard"
	"github.com/opentool-host/opentool-host/protocol/jsonrpc"
)

// Stream is what a request that holds a stream open writes through: a
// subscriptions/listen naming task ids (tasklayer.Listen) or a session's
// standalone GET stream, which write the host's own notifications
// between the SDK's under their own mutex. Write's response reports that
// p is (or follows) the mark of the request's response (Marks). A Stream
// that also has WriteHeader(int) is given the SDK's status.
type Stream interface {
	Write(p []byte, response bool) (int, error)
	Flush() error
}

// Writer gives the client D to take each write and each flush.
//
// With Call (a POST carrying one request, which the SDK answers on an
// event stream that ends with the response), it does not flush the
// response's event: the SDK writes it from the goroutine that ran the
// call and flushes at once, and then the POST's handler returns and
// net/http writes the end of the response, a second write on the
// connection. Left unflushed, the event goes out with the end of the
// response in one write (and a response that fits net/http's buffer gets
// a Content-Length instead of chunks). The response is known by the
// Writer's mark (Marks.Middleware, set once the handler returned, before
// the SDK writes it); every write before it (progress, log messages,
// requests to the client during the call) is flushed as the SDK asks. A
// write after the mark that is not the response (a notification the SDK
// wrote late) goes out with it.
//
// With Stream, every write and flush goes through it.
type Writer struct {
	http.ResponseWriter
	D      time.Duration // the write deadline of each write and flush
	Call   bool          // the POST carries one request: its response ends the stream
	Stream Stream        // the stream the request holds; nil for none

	marked atomic.Bool // the handler returned the response (Marks)
	final  bool        // a write after the mark happened: flushes wait for the end
	header [1]string   // MarkHeader's value on the request (Marks.Track)
}

// WriteHeader implements http.ResponseWriter.
func (w *Writer) WriteHeader(code int) {
	if hs, ok := w.Stream.(interface{ WriteHeader(int) }); ok {
		hs.WriteHeader(code)
		return
	}
	w.ResponseWriter.WriteHeader(code)
}

// Write implements http.ResponseWriter.
func (w *Writer) Write(p []byte) (int, error) {
	if w.Stream != nil {
		return w.Stream.Write(p, w.marked.Load())
	}
	httpguard.SetWriteDeadline(w.ResponseWriter, w.D)
	if w.Call && !w.final && w.marked.Load() {
		w.final = true
	}
	return w.ResponseWriter.Write(p)
}

// FlushError flushes under the write deadline (http.ResponseController
// calls it), except after the response of a call (see Writer).
func (w *Writer) FlushError() error {
	if w.final {
		return nil
	}
	if w.Stream != nil {
		return w.Stream.Flush()
	}
	httpguard.SetWriteDeadline(w.ResponseWriter, w.D)
	return http.NewResponseController(w.ResponseWriter).Flush()
}

// Flush implements http.Flusher.
func (w *Writer) Flush() { _ = w.FlushError() }

// Unwrap returns the underlying writer (for http.ResponseController).
func (w *Writer) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// MarkHeader is the request header that carries a POST's token from
// Marks.Track to Marks.Middleware, which sees the request's headers
// (mcp.RequestExtra.Header) but not its context. Track removes a
// client's own first.
const MarkHeader = "Opentool-Response-Mark"

// Marks are the Writers of the POSTs in flight that carry one request,
// by token, for the receiving middleware that marks them. The zero
// Marks is ready; it is safe for concurrent use.
type Marks struct {
	next atomic.Uint64
	mu   sync.Mutex
	by   map[string]*Writer
}

// Track removes a client's MarkHeader from r and, when track (r is a
// POST of one request), registers w as r's writer under a token of its
// own in MarkHeader; Release unregisters it once the SDK has answered.
// It returns the token ("" when not tracked).
func (m *Marks) Track(r *http.Request, w *Writer, track bool) (token string) {
	r.Header.Del(MarkHeader)
	if !track {
		return ""
	}
	token = strconv.FormatUint(m.next.Add(1), 36)
	w.header[0] = token
	r.Header[MarkHeader] = w.header[:] // canonical already: no copy
	m.mu.Lock()
	if m.by == nil {
		m.by = map[string]*Writer{}
	}
	m.by[token] = w
	m.mu.Unlock()
	return token
}

// Release unregisters the writer Track registered under token (nothing
// for "").
func (m *Marks) Release(token string) {
	if token == "" {
		return
	}
	m.mu.Lock()
	delete(m.by, token)
	m.mu.Unlock()
}

// Middleware is the SDK server's outermost receiving middleware (add it
// last): once the handler of a request returns, whatever it returns, it
// marks the Writer of the POST that carried the request; the SDK then
// writes the response.
func (m *Marks) Middleware(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		res, err := next(ctx, method, req)
		if extra := req.GetExtra(); extra != nil {
			m.Mark(extra.Header)
		}
		return res, err
	}
}

// Mark marks the Writer of the POST whose request headers are h (its
// MarkHeader's, from Track), as Middleware does once a request's handler
// returned: for a request the front end handles without the SDK's
// middleware. Headers without a tracked token mark nothing.
func (m *Marks) Mark(h http.Header) {
	token := h.Get(MarkHeader)
	if token == "" {
		return
	}
	m.mu.Lock()
	w := m.by[token]
	m.mu.Unlock()
	if w != nil {
		w.marked.Store(true)
	}
}

// maxRefusalText is the most of the SDK's plain-text refusal a
// JSONErrors keeps as its message, in bytes.
const maxRefusalText = 4 << 10

// JSONErrors answers every request the SDK refuses with plain text
// (http.Error: a malformed body or id, an unknown session, a wrong
// Accept, ...) with a JSON-RPC error response in its place: the same
// HTTP status, {"jsonrpc":"2.0","id":null,"error":{"code":-32600,
// "message":TEXT}} (Refuse). Everything else passes through to its
// Writer. Call Finish once the SDK has answered.
type JSONErrors struct {
	*Writer
	status int          // the refusal's, 0 until the SDK refuses
	text   bytes.Buffer // its text, at most maxRefusalText
}

// WriteHeader implements http.ResponseWriter.
func (w *JSONErrors) WriteHeader(code int) {
	if code >= 400 && strings.HasPrefix(w.Header().Get("Content-Type"), "text/plain") {
		w.status = code
		return
	}
	w.Writer.WriteHeader(code)
}

// Write implements http.ResponseWriter.
func (w *JSONErrors) Write(p []byte) (int, error) {
	if w.status == 0 {
		return w.Writer.Write(p)
	}
	w.text.Write(p[:min(len(p), maxRefusalText-w.text.Len())])
	return len(p), nil
}

// Flush implements http.Flusher (nothing of a refusal is flushed).
func (w *JSONErrors) Flush() {
	if w.status == 0 {
		w.Writer.Flush()
	}
}

// FlushError is Flush for http.ResponseController.
func (w *JSONErrors) FlushError() error {
	if w.status == 0 {
		return w.Writer.FlushError()
	}
	return nil
}

// Unwrap returns the underlying writer (for http.ResponseController).
func (w *JSONErrors) Unwrap() http.ResponseWriter { return w.Writer }

// Finish writes the refusal held, if any, as its JSON-RPC error.
func (w *JSONErrors) Finish() {
	if w.status == 0 {
		return
	}
	w.Header().Del("X-Content-Type-Options")
	Refuse(w.Writer, w.status, jsonrpc.CodeInvalidRequest, strings.TrimSpace(w.text.String()), nil)
}

// Refuse writes a request refused before the SDK read it (the front
// door's request guard: 403, 415; a refused envelope) as a JSON-RPC error
// response answering id (nil: null): HTTP status with
// {"jsonrpc":"2.0","id":ID,"error":{"code":CODE,"message":MSG}}.
func Refuse(w http.ResponseWriter, status, code int, msg string, id json.RawMessage) {
	httpguard.Write(w, status, httpguard.JSON, ErrorResponse(id, code, msg), httpguard.DefaultWriteTimeout)
}

// ErrorResponse is the JSON-RPC 2.0 error response (§5.1) to the request
// id (the raw JSON of its id; nil: null) with code and msg:
// {"jsonrpc":"2.0","id":ID,"error":{"code":CODE,"message":MSG}}.
func ErrorResponse(id json.RawMessage, code int, msg string) []byte {
	if id == nil {
		id = json.RawMessage("null")
	}
	b, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": id, "error": map[string]any{"code": code, "message": msg}})
	return b
}
