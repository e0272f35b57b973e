// Package jsonrpc holds the JSON-RPC 2.0 request, response and error shapes
// used by the OpenTool HTTP API (client/server protocol 1.0.0, section 2),
// shared by the host's HTTP server and the Go client SDK.
//
// The reference OpenTool SDKs send "jsonrpc" values other than "2.0" (one
// sends "2.0.0"), so any string is accepted; "params" may be absent and
// "id" is echoed exactly as sent (a string id must be valid UTF-8, without
// escapes of lone UTF-16 surrogates). A request that gives a member twice
// is refused rather than read "last one wins".
package jsonrpc

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/opentool-host/opentool-host/internal/strictjson"
)

// Version is the "jsonrpc" member the host writes in responses.
const Version = "2.0"

// Error codes of JSON-RPC 2.0 section 5.1, plus the tool codes the
// reference OpenTool SDKs use.
const (
	// CodeParseError: the body is not valid JSON (HTTP 400).
	CodeParseError = -32700
	// CodeInvalidRequest: the JSON is not a valid request object (HTTP 400).
	CodeInvalidRequest = -32600
	// CodeMethodNotFound: no served function has that name.
	CodeMethodNotFound = -32601
	// CodeInvalidParams: params do not match the function's parameters.
	CodeInvalidParams = -32602
	// CodeInternalError: the host failed (plugin gone, busy, timed out).
	CodeInternalError = -32603
	// CodeToolInvalidArguments is the reference SDKs' code for a tool
	// rejecting its arguments.
	CodeToolInvalidArguments = 400
	// CodeToolFailure is the reference SDKs' code for a tool failure.
	CodeToolFailure = 500
)

// Request is a JSON-RPC 2.0 request as sent to POST /opentool/call.
// Params and ID are kept as raw JSON: params travel to the plugin
// undecoded and id is echoed byte for byte.
type Request struct {
	// JSONRPC is the protocol version string; any string is accepted.
	JSONRPC string `json:"jsonrpc"`
	// Method is the function name.
	Method string `json:"method"`
	// Params is the JSON object of arguments, or nil when absent.
	Params json.RawMessage `json:"params,omitempty"`
	// ID is the call id as sent (string, number or null); nil when absent.
	ID json.RawMessage `json:"id,omitempty"`
}

// Error is the "error" member of a response.
type Error struct {
	// Code is a JSON-RPC code (-32700 ...) or a tool's code (400, 500 ...).
	Code int `json:"code"`
	// Message says what went wrong.
	Message string `json:"message"`
	// Data is optional extra detail (e.g. a plugin's last stderr lines).
	Data any `json:"data,omitempty"`
}

// Error implements error: "jsonrpc error CODE: MESSAGE".
func (e *Error) Error() string { return fmt.Sprintf("jsonrpc error %d: %s", e.Code, e.Message) }

// Response is a JSON-RPC 2.0 response. Result is always an object ("{}"
// on error), as the reference SDKs expect.
type Response struct {
	// JSONRPC is "2.0".
	JSONRPC string `json:"jsonrpc"`
	// Result is the function's result object.
	Result json.RawMessage `json:"result"`
	// Error is set when the call failed.
	Error *Error `json:"error,omitempty"`
	// ID echoes the request's id (null when it had none).
	ID json.RawMessage `json:"id"`
}

// ErrParse and ErrInvalidRequest are the sentinel causes DecodeRequest
// wraps; its returned *Error carries the matching code.
var (
	ErrParse          = errors.New("parse error")
	ErrInvalidRequest = errors.New("invalid request")
)

// DecodeRequest parses one request body. It returns a *Error with
// CodeParseError when body is not JSON, and CodeInvalidRequest when it is
// JSON but not a request object: not an object, a batch array, a member
// given twice (member names match as encoding/json matches them, ignoring
// case, so "method" and "Method" are the same member: `invalid request:
// duplicate member "method"`), "method" missing or not a string,
// "jsonrpc" not a string, "params" not an object, "id" not a string,
// number or null, or a string id that is not valid UTF-8 or has an escape
// of a lone UTF-16 surrogate ("\ud800"). The returned Request's ID is
// valid even when the error is CodeInvalidRequest, when the body had a
// usable id (not when "id" is the member given twice).
func DecodeRequest(body []byte) (*Request, *Error) {
	trimmed := trimJSONSpace(body)
	if len(trimmed) == 0 {
		return nil, &Error{Code: CodeParseError, Message: "parse error: empty body"}
	}
	if !strictjson.Valid(trimmed) {
		var v any
		err := json.Unmarshal(trimmed, &v)
		return nil, &Error{Code: CodeParseError, Message: fmt.Sprintf("parse error: %v", err)}
	}
	switch trimmed[0] {
	case '{':
	case '[':
		return nil, &Error{Code: CodeInvalidRequest, Message: "invalid request: batch requests are not supported"}
	default:
		return nil, &Error{Code: CodeInvalidRequest, Message: "invalid request: body must be a JSON object"}
	}
	// The body is valid JSON: one structural scan finds the members
	// (no second full decode of a large params object).
	m := scanMembers(trimmed)
	if m.dup == "id" {
		return &Request{}, m.duplicateError(trimmed)
	}
	if p := idProblem(m.id); p != "" {
		return &Request{}, &Error{Code: CodeInvalidRequest, Message: "invalid request: " + p}
	}
	raw := struct{ JSONRPC, Method, Params, ID json.RawMessage }{
		JSONRPC: m.jsonrpc, Method: m.method, Params: bytes.Clone(m.params), ID: bytes.Clone(m.id),
	}
	req := &Request{ID: raw.ID}
	if m.dup != "" {
		return req, m.duplicateError(trimmed)
	}
	if len(raw.JSONRPC) == 0 {
		return req, &Error{Code: CodeInvalidRequest, Message: "invalid request: \"jsonrpc\" is required"}
	}
	if err := json.Unmarshal(raw.JSONRPC, &req.JSONRPC); err != nil || raw.JSONRPC[0] != '"' {
		return req, &Error{Code: CodeInvalidRequest, Message: "invalid request: \"jsonrpc\" must be a string"}
	}
	if len(raw.Method) == 0 || string(raw.Method) == "null" {
		return req, &Error{Code: CodeInvalidRequest, Message: "invalid request: \"method\" is required"}
	}
	if err := json.Unmarshal(raw.Method, &req.Method); err != nil {
		return req, &Error{Code: CodeInvalidRequest, Message: "invalid request: \"method\" must be a string"}
	}
	if req.Method == "" {
		return req, &Error{Code: CodeInvalidRequest, Message: "invalid request: \"method\" must not be empty"}
	}
	switch {
	case len(raw.Params) == 0 || string(raw.Params) == "null":
	case raw.Params[0] == '{':
		req.Params = raw.Params
	default:
		return req, &Error{Code: CodeInvalidRequest, Message: "invalid request: \"params\" must be an object"}
	}
	return req, nil
}

// AppendResult appends the success response
// {"jsonrpc":"2.0","result":RESULT,"id":ID} to dst. result must be a JSON
// object (empty means "{}"); id is raw JSON (empty means null).
func AppendResult(dst []byte, result, id []byte) []byte {
	if len(result) == 0 {
		result = emptyObject
	}
	dst = append(dst, `{"jsonrpc":"2.0","result":`...)
	dst = append(dst, result...)
	dst = append(dst, `,"id":`...)
	return appendID(dst, id)
}

// AppendError appends the error response
// {"jsonrpc":"2.0","result":{},"error":{...},"id":ID} to dst.
func AppendError(dst []byte, e *Error, id []byte) []byte {
	eb, err := json.Marshal(e)
	if err != nil { // Data was not encodable: drop it.
		eb, _ = json.Marshal(&Error{Code: e.Code, Message: e.Message})
	}
	dst = append(dst, `{"jsonrpc":"2.0","result":{},"error":`...)
	dst = append(dst, eb...)
	dst = append(dst, `,"id":`...)
	return appendID(dst, id)
}

var emptyObject = []byte("{}")

// trimJSONSpace trims the whitespace JSON allows around a value (space,
// tab, CR, LF) and nothing else: a body wrapped in other Unicode spaces is
// not JSON.
func trimJSONSpace(b []byte) []byte {
	isSpace := func(c byte) bool { return c == ' ' || c == '\t' || c == '\n' || c == '\r' }
	for len(b) > 0 && isSpace(b[0]) {
		b = b[1:]
	}
	for len(b) > 0 && isSpace(b[len(b)-1]) {
		b = b[:len(b)-1]
	}
	return b
}

func appendID(dst, id []byte) []byte {
	if len(id) == 0 {
		id = []byte("null")
	}
	dst = append(dst, id...)
	return append(dst, '}')
}
