// Package sse writes server-sent events (HTML Living Standard, "Server-sent
// events", text/event-stream) for every stream the host's own front ends
// serve: /opentool/streamCall (opentoolapi) and /events (statusui). (/mcp's
// streams are the MCP SDK's; Note and Data frame and read the events the
// host writes between the SDK's.) One frame is built in a caller's buffer and
// written in one Write under the response's write deadline, then flushed:
// the reference Dart client loses frames split across reads, and a client
// that does not read is cut off after the deadline instead of holding the
// host's memory.
package sse

import (
	"bytes"
	"errors"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/opentool-host/opentool-host/frontend/httpguard"
)

// ContentType is the media type of an event stream.
const ContentType = "text/event-stream"

var (
	contentType = []string{ContentType}
	noCache     = []string{"no-cache"}
	noBuffering = []string{"no"}
	noSniff     = []string{"nosniff"}
)

// Open writes the headers of an event stream and HTTP 200: the media
// type, no caching, and no buffering by proxies (X-Accel-Buffering: no).
func Open(w http.ResponseWriter) {
	h := w.Header()
	h["Content-Type"] = contentType
	h["Cache-Control"] = noCache
	h["X-Accel-Buffering"] = noBuffering
	h["X-Content-Type-Options"] = noSniff
	w.WriteHeader(http.StatusOK)
}

// Head appends the start of a frame to b: "event:NAME\ndata:".
// name loses any line break (which would end the field); the caller
// appends the data, which must hold none (JSON escapes them), then calls
// End.
func Head(b []byte, name string) []byte {
	b = append(b, "event:"...)
	b = append(b, strings.Map(func(r rune) rune {
		if r == '\n' || r == '\r' {
			return -1
		}
		return r
	}, name)...)
	return append(b, "\ndata:"...)
}

// End ends the frame in b.
func End(b []byte) []byte { return append(b, "\n\n"...) }

// Comment appends a block holding one comment (": TEXT", a heartbeat)
// to b; a client ignores it.
func Comment(b []byte, text string) []byte {
	return append(comment(b, text), '\n')
}

// Greeting appends the first block of a stream: a comment saying what
// the stream is, and the client's reconnection delay (retry, in ms).
func Greeting(b []byte, text string, retryMs int) []byte {
	b = append(comment(b, text), "retry: "...)
	return append(append(b, strconv.Itoa(retryMs)...), "\n\n"...)
}

// comment appends the line ": TEXT" (line breaks in text become spaces).
func comment(b []byte, text string) []byte {
	b = append(b, ": "...)
	b = append(b, strings.ReplaceAll(strings.ReplaceAll(text, "\r", ""), "\n", " ")...)
	return append(b, '\n')
}

// Send writes b in one Write, giving the client d (from now) to take it,
// and flushes. Errors: the client is gone or too slow.
func Send(w http.ResponseWriter, rc *http.ResponseController, b []byte, d time.Duration) error {
	httpguard.SetWriteDeadline(w, d)
	if _, err := w.Write(b); err != nil {
		return err
	}
	if err := rc.Flush(); err != nil && !errors.Is(err, http.ErrNotSupported) {
		return err
	}
	return nil
}

// Note is the JSON-RPC notification of method (a name of [a-z/]: nothing
// to escape) with params (a JSON object) as one event of MCP's streamable
// HTTP transport (event message), for the notifications the host writes
// between the MCP SDK's own on its streams.
func Note(method string, params []byte) []byte {
	b := Head(make([]byte, 0, len(params)+len(method)+64), "message")
	b = append(b, `{"jsonrpc":"2.0","method":"`...)
	b = append(b, method...)
	b = append(b, `","params":`...)
	b = append(b, params...)
	return End(append(b, '}'))
}

// Data returns the data of p, one event as the MCP SDK writes it (one
// "data: " line, the frame ended by a blank line), or nil when p is not
// one.
func Data(p []byte) []byte {
	i := bytes.Index(p, []byte("data: "))
	if i < 0 || i > 0 && p[i-1] != '\n' || !bytes.HasSuffix(p, []byte("\n\n")) {
		return nil
	}
	return p[i+len("data: ") : len(p)-2]
}
