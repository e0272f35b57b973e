// Package httpguard is what every HTTP front end of the host (the
// OpenTool API in opentoolapi, Open Tool Calling in otc, and later MCP) does
// the same way, so that they cannot disagree: API key authentication
// (auth.go), the request body rules (ReadBody: Content-Type and size
// limit) and the response write deadline (Write, SetWriteDeadline).
package httpguard

import (
	"bytes"
	"encoding/json"
	"errors"
	"net/http"
	"strconv"
	"time"
)

// BodyError is why a request body was refused: the HTTP status to answer
// with and a message for the client.
type BodyError struct {
	// Status is 415 (Content-Type), 413 (too large) or 400 (unreadable,
	// e.g. the client was too slow and the read timed out).
	Status int
	// Message says what is wrong, e.g. `Content-Type must be
	// application/json, got "text/html"`.
	Message string
}

// Error implements error.
func (e *BodyError) Error() string { return e.Message }

// ReadBody reads r's body, appended to buf[:0], after checking its
// Content-Type: application/json or application/json-rpc (any
// parameters, such as charset), or absent (RequestGuard refuses that
// before); text/plain and form types get 415. Bodies over
// max bytes are refused with 413 without reading further.
func ReadBody(w http.ResponseWriter, r *http.Request, max int64, buf []byte) ([]byte, *BodyError) {
	if err := checkContentType(r.Header.Get("Content-Type")); err != nil {
		return buf[:0], err
	}
	if n := r.ContentLength; n > 0 && n <= max && int64(cap(buf)) < n+bytes.MinRead {
		// One allocation of the announced size instead of doubling from
		// buf's (ReadFrom wants MinRead spare bytes to see the end).
		buf = make([]byte, 0, n+bytes.MinRead)
	}
	bb := bytes.NewBuffer(buf[:0])
	_, err := bb.ReadFrom(http.MaxBytesReader(w, r.Body, max))
	if err == nil {
		return bb.Bytes(), nil
	}
	var mbe *http.MaxBytesError
	if errors.As(err, &mbe) {
		return bb.Bytes(), &BodyError{Status: http.StatusRequestEntityTooLarge,
			Message: "body larger than the limit of " + strconv.FormatInt(mbe.Limit, 10) + " bytes"}
	}
	return bb.Bytes(), &BodyError{Status: http.StatusBadRequest, Message: "reading body: " + err.Error()}
}

// checkContentType applies the Content-Type rule of ReadBody: the
// request guard's (jsonContentType), but for an absent Content-Type,
// which RequestGuard refuses before a front end reads a body.
func checkContentType(ct string) *BodyError {
	if ct == "" {
		return nil
	}
	if msg := jsonContentType(ct); msg != "" {
		return &BodyError{Status: http.StatusUnsupportedMediaType, Message: msg}
	}
	return nil
}

// DefaultMaxBodyBytes is the default request body limit of every front
// end (4 MiB).
const DefaultMaxBodyBytes = 4 << 20

// DefaultWriteTimeout is the default time a client has to take one
// response (or one stream frame), 30 s.
const DefaultWriteTimeout = 30 * time.Second

// SetWriteDeadline gives the client d from now to take what is written
// next; a client that does not read is cut off then and its buffers are
// freed. Writers without deadline support are left alone.
func SetWriteDeadline(w http.ResponseWriter, d time.Duration) {
	_ = http.NewResponseController(w).SetWriteDeadline(time.Now().Add(d))
}

// Write writes a complete response: status, Content-Type contentType and
// body, with its Content-Length, under a write deadline of d.
func Write(w http.ResponseWriter, status int, contentType []string, body []byte, d time.Duration) {
	SetWriteDeadline(w, d)
	WriteTimed(w, status, contentType, body)
}

// WriteTimed is Write for a writer that sets the write deadline of each
// write itself (the MCP endpoint's respond.Writer): the same response,
// without setting the deadline a second time.
func WriteTimed(w http.ResponseWriter, status int, contentType []string, body []byte) {
	h := w.Header()
	h["Content-Type"] = contentType
	if len(body) > 2048 {
		// net/http sets Content-Length itself only for the bodies it
		// buffers whole (2 KiB); a larger one would go out chunked.
		h["Content-Length"] = []string{strconv.Itoa(len(body))}
	}
	w.WriteHeader(status)
	_, _ = w.Write(body)
}

// JSON is the Content-Type value of JSON responses.
var JSON = []string{"application/json"}

// WriteError writes the plain error body of routes without a protocol of
// their own (the status page's data, /health, /metrics):
// {"error":{"code":STATUS,"message":MSG}}.
func WriteError(w http.ResponseWriter, status int, msg string) {
	b, _ := json.Marshal(map[string]any{"error": map[string]any{"code": status, "message": msg}})
	Write(w, status, JSON, b, DefaultWriteTimeout)
}
