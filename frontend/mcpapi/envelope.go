package mcpapi

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"

	"github.com/opentool-host/opentool-host/frontend/mcpapi/tasklayer"
	"github.com/opentool-host/opentool-host/internal/strictjson"
	"github.com/opentool-host/opentool-host/protocol/jsonrpc"
	"github.com/opentool-host/opentool-host/protocol/mcpmethod"
)

// DefaultMaxBatch is HTTPOptions.MaxBatch's default (--max-batch): the
// most JSON-RPC messages one POST may carry as a batch.
const DefaultMaxBatch = 16

// firstRevisionWithoutBatches is the first MCP revision that removed
// JSON-RPC batches (2025-06-18, "Changelog": "Remove support for JSON-RPC
// batching"); a client that negotiated it or a later one must not send
// one.
const firstRevisionWithoutBatches = "2025-06-18"

// envelopeError is why checkEnvelope refused a POST: the HTTP status and
// the JSON-RPC error to answer with.
type envelopeError struct {
	status int
	code   int
	msg    string
}

// message is what Handler reads of a POST's one JSON-RPC message (not a
// batch) for the cancel registry (cancel.go) and the response writer
// (respWriter) and for the choice of handler (sessionless): its method,
// its id and, for notifications/cancelled, the requestId it names, each
// as raw JSON ("" when absent); and the protocol version its _meta names
// (MCP 2026-07-28, SEP-2575: "io.modelcontextprotocol/protocolVersion";
// "" when none, or not a string).
type message struct {
	method    string
	id        []byte
	requestID []byte
	version   string
}

// metaProtocolVersion is the _meta member of a request of MCP 2026-07-28
// and later that names its protocol version (SEP-2575).
const metaProtocolVersion = "io.modelcontextprotocol/protocolVersion"

// methodDiscover is the request of a 2026-07-28 client that asks which
// revisions and capabilities the server has (SEP-2575).
const methodDiscover = mcpmethod.Discover

// call reports whether m is a request that expects a response (a method
// and an id).
func (m *message) call() bool { return m != nil && m.method != "" && len(m.id) > 0 }

// checkEnvelope reads the body of an MCP POST (at most maxBody bytes;
// the SDK answers a larger one) and refuses, before the SDK decodes it
// with encoding/json (which lets the last of two members win, and matches
// names ignoring case):
//   - a body that is not one JSON value: -32700;
//   - a member given twice at any depth, or two members of a message or
//     of its "params" whose names differ only in case ("method" and
//     "METHOD", "name" and "Name"): -32600 (-32602 inside params);
//   - a batch (a JSON array) of more than maxBatch messages, or any batch
//     from a client of revision 2025-06-18 or later (MCP-Protocol-Version),
//     which has no batches: -32600.
//
// The body is put back on r for the SDK. Bodies it cannot read whole
// (over maxBody) are left to the SDK, which refuses them. For a body that
// is one message (an object), it returns what message holds; else nil.
//
// A well-formed body is checked by one scan that builds nothing
// (strictjson.Clean); only a body that scan cannot pass is decoded
// (strictjson.Decode and CheckFolded), for the error or for the rare
// message whose names it cannot compare without decoding.
func checkEnvelope(r *http.Request, maxBody int64, maxBatch int) (*message, *envelopeError) {
	if r.Method != http.MethodPost || r.Body == nil {
		return nil, nil
	}
	body, complete := bufferBody(r, maxBody)
	if !complete {
		return nil, nil
	}
	if e := checkBatch(r, body, maxBatch); e != nil {
		return nil, e // before decoding: a huge batch costs no memory
	}
	if strictjson.Clean(body, "params") {
		return messageOf(body), nil
	}
	tree, err := strictjson.Decode(body)
	if err != nil {
		var dup *strictjson.DuplicateError
		if errors.As(err, &dup) {
			return nil, memberError(dup.Path, err)
		}
		return nil, &envelopeError{http.StatusBadRequest, jsonrpc.CodeParseError, "parse error: " + err.Error()}
	}
	msgs := []any{tree}
	if batch, ok := tree.([]any); ok {
		msgs = batch
	}
	for _, m := range msgs {
		if err := strictjson.CheckFolded(m, "params"); err != nil {
			var fe *strictjson.FoldedDuplicateError
			errors.As(err, &fe)
			return nil, memberError(fe.Path, err)
		}
	}
	return messageOfTree(tree), nil
}

// readBody reads r up to maxBody+1 bytes, in one buffer of the declared
// length when there is one (size, -1 when unknown). complete reports
// that r ended (nothing is left to read).
func readBody(r io.Reader, maxBody, size int64) (body []byte, complete bool, err error) {
	n := int64(512)
	if size >= 0 && size <= maxBody {
		n = size + 1 // room to see the end without growing
	}
	body = make([]byte, 0, n)
	lr := io.LimitReader(r, maxBody+1)
	for {
		if len(body) == cap(body) {
			body = append(body, 0)[:len(body)]
		}
		m, err := lr.Read(body[len(body):cap(body)])
		body = body[:len(body)+m]
		if err == io.EOF {
			return body, int64(len(body)) <= maxBody, nil
		}
		if err != nil {
			return body, false, err
		}
	}
}

// bufferBody reads r's body (at most maxBody bytes) and puts it back on
// r for the SDK: whole when complete (then also what it returns), else
// what was read followed by the rest, which the SDK refuses. A body
// already read (a *bodyReader: Meter read it first) is not read again.
func bufferBody(r *http.Request, maxBody int64) (body []byte, complete bool) {
	if br, ok := r.Body.(*bodyReader); ok {
		return br.b, true
	}
	body, complete, err := readBody(r.Body, maxBody, r.ContentLength)
	if complete && err == nil {
		br := &bodyReader{b: body}
		br.Reset(body)
		r.Body = br
		return body, true
	}
	r.Body = io.NopCloser(io.MultiReader(bytes.NewReader(body), r.Body))
	return nil, false
}

// requestIDs returns the ids of the requests body carries (messages with
// a method that is not a notification; a request without an id is one
// with id null) and whether it is a batch. A body that is not JSON, or a
// batch of more than maxBatch messages, gives none (checkEnvelope
// refuses it).
func requestIDs(body []byte, maxBatch int) (ids [][]byte, batch bool) {
	trimmed := bytes.TrimLeft(body, " \t\r\n")
	if len(trimmed) == 0 {
		return nil, false
	}
	if trimmed[0] != '[' {
		if id, ok := requestID(trimmed); ok {
			ids = append(ids, id)
		}
		return ids, false
	}
	dec := json.NewDecoder(bytes.NewReader(trimmed))
	if _, err := dec.Token(); err != nil {
		return nil, true
	}
	for n := 0; dec.More(); n++ {
		var item json.RawMessage
		if n == maxBatch || dec.Decode(&item) != nil {
			return nil, true
		}
		if id, ok := requestID(item); ok {
			ids = append(ids, id)
		}
	}
	return ids, true
}

// requestID returns the id of msg, a JSON-RPC message, when it is a
// request (its method is not a notification's): "null" for none or one
// that is not a string or a number.
func requestID(msg []byte) ([]byte, bool) {
	method := strictjson.Member(msg, "method")
	if len(method) < 2 || method[0] != '"' || bytes.HasPrefix(method, []byte(`"notifications/`)) {
		return nil, false
	}
	id := strictjson.Member(msg, "id")
	if len(id) == 0 || id[0] != '"' && id[0] != '-' && (id[0] < '0' || id[0] > '9') {
		id = []byte("null")
	}
	return id, true
}

// bodyReader is a request body read whole (b), put back for the SDK.
type bodyReader struct {
	bytes.Reader
	b []byte
}

// Close implements io.Closer.
func (*bodyReader) Close() error { return nil }

// messageOf returns the message of body when it is one object that
// strictjson.Clean passed (names without escapes), else nil.
func messageOf(body []byte) *message {
	trimmed := bytes.TrimLeft(body, " \t\r\n")
	if len(trimmed) == 0 || trimmed[0] != '{' {
		return nil
	}
	m := &message{id: strictjson.Member(body, "id")}
	m.method = jsonString(strictjson.Member(body, "method"))
	m.version = jsonString(strictjson.Member(body, "params", "_meta", metaProtocolVersion))
	if m.method == methodCancelled {
		m.requestID = strictjson.Member(body, "params", "requestId")
	}
	if string(m.id) == "null" {
		m.id = nil
	}
	return m
}

// messageOfTree returns the message of a decoded body when it is one
// object, else nil.
func messageOfTree(tree any) *message {
	obj, ok := tree.(map[string]any)
	if !ok {
		return nil
	}
	m := &message{}
	m.method, _ = obj["method"].(string)
	if id, ok := obj["id"]; ok && id != nil {
		m.id, _ = json.Marshal(id)
	}
	params, _ := obj["params"].(map[string]any)
	if rid, ok := params["requestId"]; ok && rid != nil && m.method == methodCancelled {
		m.requestID, _ = json.Marshal(rid)
	}
	if meta, ok := params["_meta"].(map[string]any); ok {
		m.version, _ = meta[metaProtocolVersion].(string)
	}
	return m
}

// jsonString returns the string raw (a JSON value that strictjson.Clean
// passed) holds, "" when raw is not a string.
func jsonString(raw []byte) string {
	if len(raw) < 2 || raw[0] != '"' {
		return ""
	}
	if bytes.IndexByte(raw, '\\') < 0 {
		return string(raw[1 : len(raw)-1])
	}
	var s string
	_ = json.Unmarshal(raw, &s)
	return s
}

// methodCancelled is the method of the cancellation notification.
const methodCancelled = mcpmethod.Cancelled

// checkBatch refuses a batch from a client of a revision without batches,
// and one of more than maxBatch messages, reading no further than the
// message after the limit.
func checkBatch(r *http.Request, body []byte, maxBatch int) *envelopeError {
	trimmed := bytes.TrimLeft(body, " \t\r\n")
	if len(trimmed) == 0 || trimmed[0] != '[' {
		return nil
	}
	if v := r.Header.Get("Mcp-Protocol-Version"); v >= firstRevisionWithoutBatches {
		return &envelopeError{http.StatusBadRequest, jsonrpc.CodeInvalidRequest,
			fmt.Sprintf("invalid request: MCP %s has no JSON-RPC batches (removed in %s): send one message per request", v, firstRevisionWithoutBatches)}
	}
	dec := json.NewDecoder(bytes.NewReader(trimmed))
	if _, err := dec.Token(); err != nil {
		return nil // not JSON: Decode says why
	}
	for n := 0; dec.More(); n++ {
		if n == maxBatch {
			return &envelopeError{http.StatusBadRequest, jsonrpc.CodeInvalidRequest,
				fmt.Sprintf("invalid request: a batch of more than %d messages (--max-batch)", maxBatch)}
		}
		var skip json.RawMessage
		if err := dec.Decode(&skip); err != nil {
			return nil
		}
	}
	return nil
}

// memberError is the refusal of a member named twice in the object at
// path: -32602 inside params, -32600 elsewhere.
func memberError(path string, err error) *envelopeError {
	if path == "params" || strings.HasPrefix(path, "params.") || strings.HasPrefix(path, "[") && strings.Contains(path, "].params") {
		return &envelopeError{http.StatusBadRequest, jsonrpc.CodeInvalidParams, "invalid params: " + err.Error()}
	}
	return &envelopeError{http.StatusBadRequest, jsonrpc.CodeInvalidRequest, "invalid request: " + err.Error()}
}

// checkTaskName is tasklayer.CheckTaskName of r, a POST of one message
// m, as an HTTP 400 refusal; nil when it passes.
func checkTaskName(r *http.Request, m *message, maxBody int64) *envelopeError {
	if m == nil {
		return nil
	}
	je := tasklayer.CheckTaskName(m.method, r.Header.Get("MCP-Protocol-Version"), r.Header.Get("Mcp-Name"),
		func() ([]byte, bool) { return bufferBody(r, maxBody) })
	if je == nil {
		return nil
	}
	return &envelopeError{http.StatusBadRequest, int(je.Code), je.Message}
}

// markCoreTask sets tasklayer.CoreTaskHeader on r, a single tools/call
// POST, when its params.task is an object; it removes a client's own
// first.
func markCoreTask(r *http.Request, m *message, maxBody int64) {
	r.Header.Del(tasklayer.CoreTaskHeader)
	if m == nil || m.method != mcpmethod.ToolsCall {
		return
	}
	body, complete := bufferBody(r, maxBody)
	if complete && tasklayer.AsksCoreTask(strictjson.Member(body, "params")) {
		r.Header.Set(tasklayer.CoreTaskHeader, "1")
	}
}
