// Package envelope checks the JSON-RPC envelope of a POST to /mcp
// before the MCP Go SDK decodes it with encoding/json (which lets the
// last of two members win and matches names ignoring case), and reads
// what the front end routes by: the one message's method, id, the
// requestId of notifications/cancelled and the protocol version its
// _meta names (Message), the ids of the requests a body carries, each
// charged to the rate limit (RequestIDs), and the body read once and put
// back for the SDK (Buffer). It knows the request and the standard
// library's JSON only (internal/strictjson).
package envelope

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"

	"github.com/opentool-host/opentool-host/internal/strictjson"
	"github.com/opentool-host/opentool-host/protocol/jsonrpc"
	"github.com/opentool-host/opentool-host/protocol/mcpmethod"
)

// firstRevisionWithoutBatches is the first MCP revision that removed
// JSON-RPC batches (2025-06-18, "Changelog": "Remove support for JSON-RPC
// batching"); a client that negotiated it or a later one must not send
// one.
const firstRevisionWithoutBatches = "2025-06-18"

// Error is why Check refused a POST: the HTTP status and the JSON-RPC
// error (code, message) to answer with.
type Error struct {
	Status  int
	Code    int
	Message string
}

// Message is what the front end reads of a POST's one JSON-RPC message
// (not a batch), for its cancel registry, its response writer and its
// choice of handler: its Method, its ID and, for notifications/cancelled,
// the RequestID it names, each as raw JSON (nil when absent; an id null
// is none); and the protocol Version its _meta names (MCP 2026-07-28,
// SEP-2575: MetaProtocolVersion; "" when none, or not a string). JSONRPC
// and Params are its members jsonrpc and params, Meta and Task params'
// _meta and task, as raw JSON (nil when absent or, for Meta and Task,
// when params is not an object): what strictjson.Member reads of the
// body, kept by the scan that checked it.
type Message struct {
	Method    string
	ID        []byte
	RequestID []byte
	Version   string
	JSONRPC   []byte
	Params    []byte
	Meta      []byte
	Task      []byte
}

// MetaProtocolVersion is the _meta member of a request of MCP 2026-07-28
// and later that names its protocol version (SEP-2575).
const MetaProtocolVersion = "io.modelcontextprotocol/protocolVersion"

// Call reports whether m is a request that expects a response (a method
// and an id); false for nil.
func (m *Message) Call() bool { return m != nil && m.Method != "" && len(m.ID) > 0 }

// Check reads the body of an MCP POST (at most maxBody bytes;
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
func Check(r *http.Request, maxBody int64, maxBatch int) (*Message, *Error) {
	if r.Method != http.MethodPost || r.Body == nil {
		return nil, nil
	}
	body, complete := Buffer(r, maxBody)
	if !complete {
		return nil, nil
	}
	if e := CheckBatch(r, body, maxBatch); e != nil {
		return nil, e // before decoding: a huge batch costs no memory
	}
	if sm, ok := strictjson.CleanMessage(body); ok {
		return keep(r, messageOf(body, &sm)), nil
	}
	tree, err := strictjson.Decode(body)
	if err != nil {
		var dup *strictjson.DuplicateError
		if errors.As(err, &dup) {
			return nil, memberError(dup.Path, err)
		}
		return nil, &Error{http.StatusBadRequest, jsonrpc.CodeParseError, "parse error: " + err.Error()}
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
	return keep(r, messageOfTree(tree, body)), nil
}

// keep records m as the message of r's body (Checked) and returns it.
func keep(r *http.Request, m *Message) *Message {
	if br, ok := r.Body.(*bodyReader); ok {
		br.msg = m
	}
	return m
}

// Checked returns the message Check returned for r's body (nil when
// Check has not passed it, or it is not one message): what a handler
// after the front end reads of the POST without scanning it again.
func Checked(r *http.Request) *Message {
	if br, ok := r.Body.(*bodyReader); ok {
		return br.msg
	}
	return nil
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

// Buffer reads r's body (at most maxBody bytes) and puts it back on
// r for the SDK: whole when complete (then also what it returns), else
// what was read followed by the rest, which the SDK refuses. A body
// already read (a *bodyReader: Meter read it first) is not read again.
func Buffer(r *http.Request, maxBody int64) (body []byte, complete bool) {
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

// RequestIDs returns the ids of the requests body carries (messages with
// a method that is not a notification; a request without an id is one
// with id null) and whether it is a batch. A body that is not JSON, or a
// batch of more than maxBatch messages, gives none (Check
// refuses it).
func RequestIDs(body []byte, maxBatch int) (ids [][]byte, batch bool) {
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

// bodyReader is a request body read whole (b), put back for the SDK,
// and the message Check found in it (msg, nil before Check or for none).
type bodyReader struct {
	bytes.Reader
	b   []byte
	msg *Message
}

// Close implements io.Closer.
func (*bodyReader) Close() error { return nil }

// messageOf returns the message of body when it is one object that
// strictjson.CleanMessage passed (names without escapes; sm, what its
// scan kept), else nil.
func messageOf(body []byte, sm *strictjson.Message) *Message {
	trimmed := bytes.TrimLeft(body, " \t\r\n")
	if len(trimmed) == 0 || trimmed[0] != '{' {
		return nil
	}
	m := &Message{ID: sm.ID, Method: JSONString(sm.Method), JSONRPC: sm.JSONRPC, Params: sm.Params, Meta: sm.Meta, Task: sm.Task}
	if sm.Meta != nil {
		m.Version = JSONString(strictjson.Member(sm.Meta, MetaProtocolVersion))
	}
	if m.Method == mcpmethod.Cancelled {
		m.RequestID = sm.RequestID
	}
	if string(m.ID) == "null" {
		m.ID = nil
	}
	return m
}

// messageOfTree returns the message of body, decoded as tree, when it is
// one object, else nil; its raw members are strictjson.Member's.
func messageOfTree(tree any, body []byte) *Message {
	obj, ok := tree.(map[string]any)
	if !ok {
		return nil
	}
	m := &Message{JSONRPC: strictjson.Member(body, "jsonrpc"), Params: strictjson.Member(body, "params")}
	m.Meta, m.Task = strictjson.Member(m.Params, "_meta"), strictjson.Member(m.Params, "task")
	m.Method, _ = obj["method"].(string)
	if id, ok := obj["id"]; ok && id != nil {
		m.ID, _ = json.Marshal(id)
	}
	params, _ := obj["params"].(map[string]any)
	if rid, ok := params["requestId"]; ok && rid != nil && m.Method == mcpmethod.Cancelled {
		m.RequestID, _ = json.Marshal(rid)
	}
	if meta, ok := params["_meta"].(map[string]any); ok {
		m.Version, _ = meta[MetaProtocolVersion].(string)
	}
	return m
}

// JSONString returns the string raw (a JSON value that strictjson.Clean
// passed) holds, "" when raw is not a string; a method name of the MCP
// table (mcpmethod.Name) is the table's string, not a copy.
func JSONString(raw []byte) string {
	if len(raw) < 2 || raw[0] != '"' {
		return ""
	}
	if bytes.IndexByte(raw, '\\') < 0 {
		if name, ok := mcpmethod.Name(raw[1 : len(raw)-1]); ok {
			return name
		}
		return string(raw[1 : len(raw)-1])
	}
	var s string
	_ = json.Unmarshal(raw, &s)
	return s
}

// CheckBatch refuses a batch from a client of a revision without batches,
// and one of more than maxBatch messages, reading no further than the
// message after the limit.
func CheckBatch(r *http.Request, body []byte, maxBatch int) *Error {
	trimmed := bytes.TrimLeft(body, " \t\r\n")
	if len(trimmed) == 0 || trimmed[0] != '[' {
		return nil
	}
	if v := r.Header.Get("Mcp-Protocol-Version"); v >= firstRevisionWithoutBatches {
		return &Error{http.StatusBadRequest, jsonrpc.CodeInvalidRequest,
			fmt.Sprintf("invalid request: MCP %s has no JSON-RPC batches (removed in %s): send one message per request", v, firstRevisionWithoutBatches)}
	}
	dec := json.NewDecoder(bytes.NewReader(trimmed))
	if _, err := dec.Token(); err != nil {
		return nil // not JSON: Decode says why
	}
	for n := 0; dec.More(); n++ {
		if n == maxBatch {
			return &Error{http.StatusBadRequest, jsonrpc.CodeInvalidRequest,
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
func memberError(path string, err error) *Error {
	if path == "params" || strings.HasPrefix(path, "params.") || strings.HasPrefix(path, "[") && strings.Contains(path, "].params") {
		return &Error{http.StatusBadRequest, jsonrpc.CodeInvalidParams, "invalid params: " + err.Error()}
	}
	return &Error{http.StatusBadRequest, jsonrpc.CodeInvalidRequest, "invalid request: " + err.Error()}
}
