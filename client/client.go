// Package client is the Go client SDK of an OpenTool server (client/server
// protocol 1.0.0, section 4): Version, Call, StreamCall and Load over HTTP
// and JSON-RPC 2.0, wire compatible with the reference OpenTool SDKs (Dart,
// TypeScript, Java, C#) and with opentool-host.
//
//	c := client.New(client.WithBaseURL("http://127.0.0.1:9627/opentool"), client.WithAPIKey(key))
//	ret, err := c.Call(ctx, client.FunctionCall{Name: "count"})
//
// CallTask calls with a task allowed: a long call is answered with a Task
// that Task.Wait polls until it ends (tasks.go, opentool-host's task
// extension).
//
// Errors are the section 6 exceptions as Go types (errors.go):
// *UnauthorizedError for HTTP 401, *NoAccessError for HTTP 404 or an
// unreachable server, *CallError for a failed call (error.code and
// error.message kept), *ResponseNullError and *ErrorNullError for empty
// responses. Deadlines and cancellation come from the context; an ended
// context gives an error matching ctx.Err() with errors.Is.
package client

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"

	"github.com/opentool-host/opentool-host/protocol/jsonrpc"
	"github.com/opentool-host/opentool-host/protocol/opentool"
)

// DefaultBaseURL is the reference SDKs' default server: port 9627 on
// loopback, base path /opentool.
const DefaultBaseURL = "http://127.0.0.1:9627/opentool"

// MaxResponseBytes caps a response body the client reads, and one line of
// a stream, in bytes (64 MiB).
const MaxResponseBytes = 64 << 20

// Client talks to one OpenTool server. Create it with New; it is safe for
// concurrent use.
type Client struct {
	baseURL string
	apiKey  string
	hc      *http.Client
}

// Option configures a Client in New.
type Option func(*Client)

// WithBaseURL sets the server's OpenTool base URL, e.g.
// "https://tools.example.com:9627/opentool" (a trailing "/" is dropped).
// Default DefaultBaseURL.
func WithBaseURL(u string) Option {
	return func(c *Client) { c.baseURL = strings.TrimRight(u, "/") }
}

// WithAPIKey sends "Authorization: Bearer KEY" with every request. Empty:
// no Authorization header.
func WithAPIKey(key string) Option {
	return func(c *Client) { c.apiKey = key }
}

// WithHTTPClient sets the HTTP client (transport, TLS, proxies). Default
// http.DefaultClient. Use contexts, not http.Client.Timeout, to bound
// calls: a Timeout also cuts long streams.
func WithHTTPClient(hc *http.Client) Option {
	return func(c *Client) {
		if hc != nil {
			c.hc = hc
		}
	}
}

// New returns a client of the server at DefaultBaseURL, changed by opts.
// It does not contact the server.
func New(opts ...Option) *Client {
	c := &Client{baseURL: DefaultBaseURL, hc: http.DefaultClient}
	for _, o := range opts {
		o(c)
	}
	return c
}

// BaseURL returns the server's OpenTool base URL the client uses.
func (c *Client) BaseURL() string { return c.baseURL }

// Version calls GET {base}/version (section 1) and returns the server's
// version. Errors: *UnauthorizedError, *NoAccessError, *CallError for other
// HTTP statuses, *ResponseNullError for an empty body, the context's error.
func (c *Client) Version(ctx context.Context) (Version, error) {
	resp, err := c.do(ctx, http.MethodGet, "/version", nil, "application/json")
	if err != nil {
		return Version{}, err
	}
	body, err := readBody(resp)
	if err != nil {
		return Version{}, err
	}
	if isNull(body) {
		return Version{}, &ResponseNullError{Code: resp.StatusCode}
	}
	var v Version
	if err := json.Unmarshal(body, &v); err != nil {
		return Version{}, fmt.Errorf("opentool client: GET /version: decode %s: %w", snippet(body), err)
	}
	return v, nil
}

// Call calls function fc.Name with fc.Arguments through POST {base}/call
// (section 2) and returns its result; ToolReturn.ID is fc.ID, generated
// when empty.
//
// Errors: *CallError when the call failed (the tool's code, e.g. 500, or a
// JSON-RPC code such as -32601 for an unknown function), *UnauthorizedError,
// *NoAccessError, *ResponseNullError, *ErrorNullError, the context's error.
func (c *Client) Call(ctx context.Context, fc FunctionCall) (ToolReturn, error) {
	id, req, err := requestBody(fc)
	if err != nil {
		return ToolReturn{}, err
	}
	resp, err := c.do(ctx, http.MethodPost, "/call", req, "application/json")
	if err != nil {
		return ToolReturn{}, err
	}
	body, err := readBody(resp)
	if err != nil {
		return ToolReturn{}, err
	}
	result, err := decodeResponse(body, resp.StatusCode)
	if err != nil {
		return ToolReturn{}, err
	}
	return ToolReturn{ID: id, Result: result}, nil
}

// Load calls GET {base}/load (section 3) and returns the server's OpenTool
// document, validated with opentool.Parse, or nil when the server has none
// (an empty object, null or an empty body). Errors: as for Version, and the
// *opentool.ValidationError (wrapped) of an invalid document.
func (c *Client) Load(ctx context.Context) (*opentool.OpenTool, error) {
	resp, err := c.do(ctx, http.MethodGet, "/load", nil, "application/json")
	if err != nil {
		return nil, err
	}
	body, err := readBody(resp)
	if err != nil {
		return nil, err
	}
	if isNull(body) || isEmptyObject(body) {
		return nil, nil
	}
	doc, err := opentool.Parse(body)
	if err != nil {
		return nil, fmt.Errorf("opentool client: GET /load: the server's document is invalid: %w", err)
	}
	return doc, nil
}

// do sends one request and returns the response when its status is 200;
// any other status is turned into the matching error and the body closed.
func (c *Client) do(ctx context.Context, method, path string, body []byte, accept string) (*http.Response, error) {
	return c.send(ctx, request{method: method, path: path, body: body, accept: accept})
}

// request is one request of send.
type request struct {
	method, path string
	body         []byte
	accept       string
	// prefer is the Prefer header (CallTask), "" for none.
	prefer string
	// task marks the task routes: 202 is a success, and a 404 with a
	// JSON-RPC error is the task's absence (*TaskNotFoundError), not a
	// wrong base URL.
	task bool
	// taskID is the task of a task route, for *TaskNotFoundError.
	taskID string
}

// send sends rq and returns the response when its status is 200 (or 202
// for rq.task); any other status is turned into the matching error and
// the body closed.
func (c *Client) send(ctx context.Context, rq request) (*http.Response, error) {
	method, path := rq.method, rq.path
	var rd io.Reader
	if rq.body != nil {
		rd = bytes.NewReader(rq.body)
	}
	req, err := http.NewRequestWithContext(ctx, method, c.baseURL+path, rd)
	if err != nil {
		return nil, fmt.Errorf("opentool client: %s %s: %w", method, path, err)
	}
	if rq.body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	req.Header.Set("Accept", rq.accept)
	if rq.prefer != "" {
		req.Header.Set("Prefer", rq.prefer)
	}
	if c.apiKey != "" {
		req.Header.Set("Authorization", "Bearer "+c.apiKey)
	}
	resp, err := c.hc.Do(req)
	if err != nil {
		if ctx.Err() != nil {
			return nil, fmt.Errorf("opentool client: %s %s: %w", method, path, err) // matches ctx.Err()
		}
		return nil, &NoAccessError{Err: err}
	}
	if resp.StatusCode == http.StatusOK || rq.task && resp.StatusCode == http.StatusAccepted {
		return resp, nil
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	var r jsonrpc.Response
	isRPC := json.Unmarshal(b, &r) == nil && r.Error != nil
	switch {
	case resp.StatusCode == http.StatusUnauthorized:
		return nil, &UnauthorizedError{}
	case resp.StatusCode == http.StatusNotFound && rq.task && isRPC:
		return nil, &TaskNotFoundError{ID: rq.taskID, Message: r.Error.Message}
	case resp.StatusCode == http.StatusNotFound:
		return nil, &NoAccessError{Status: http.StatusNotFound}
	case isRPC:
		return nil, callError(r.Error, resp.StatusCode)
	}
	msg := fmt.Sprintf("HTTP %d %s", resp.StatusCode, http.StatusText(resp.StatusCode))
	if s := snippet(b); s != "" {
		msg += ": " + s
	}
	return nil, &CallError{Code: resp.StatusCode, Message: msg, Status: resp.StatusCode}
}

// rpcRequest is the body of POST /call and /streamCall.
type rpcRequest struct {
	JSONRPC string         `json:"jsonrpc"`
	Method  string         `json:"method"`
	Params  map[string]any `json:"params"`
	ID      string         `json:"id"`
}

func callError(e *jsonrpc.Error, status int) *CallError {
	return &CallError{Code: e.Code, Message: e.Message, Data: e.Data, Status: status}
}

// requestBody returns the call id (fc.ID or a new one) and the JSON-RPC
// request for fc.
func requestBody(fc FunctionCall) (string, []byte, error) {
	if fc.Name == "" {
		return "", nil, fmt.Errorf("opentool client: FunctionCall.Name is empty")
	}
	id := fc.ID
	if id == "" {
		id = newID()
	}
	params := fc.Arguments
	if params == nil {
		params = map[string]any{}
	}
	b, err := json.Marshal(rpcRequest{JSONRPC: jsonrpc.Version, Method: fc.Name, Params: params, ID: id})
	if err != nil {
		return "", nil, fmt.Errorf("opentool client: encode arguments of %q: %w", fc.Name, err)
	}
	return id, b, nil
}

// decodeResponse returns the result object of a JSON-RPC response body,
// or its error as a *CallError.
func decodeResponse(body []byte, status int) (map[string]any, error) {
	if isNull(body) {
		return nil, &ResponseNullError{Code: status}
	}
	var r jsonrpc.Response
	if err := json.Unmarshal(body, &r); err != nil {
		return nil, fmt.Errorf("opentool client: decode response %s: %w", snippet(body), err)
	}
	if r.Error != nil {
		return nil, callError(r.Error, status)
	}
	if isNull(r.Result) {
		return nil, &ErrorNullError{Code: status}
	}
	var result map[string]any
	if err := json.Unmarshal(r.Result, &result); err != nil {
		return nil, fmt.Errorf("opentool client: the result %s is not a JSON object: %w", snippet(r.Result), err)
	}
	return result, nil
}

// readBody reads and closes a response body, up to MaxResponseBytes.
func readBody(resp *http.Response) ([]byte, error) {
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, MaxResponseBytes+1))
	if err != nil {
		return nil, fmt.Errorf("opentool client: reading the response: %w", err)
	}
	if len(b) > MaxResponseBytes {
		return nil, fmt.Errorf("opentool client: the response is larger than %d bytes", MaxResponseBytes)
	}
	return b, nil
}

// isNull reports an empty or JSON null value.
func isNull(b []byte) bool {
	b = bytes.TrimSpace(b)
	return len(b) == 0 || string(b) == "null"
}

// isEmptyObject reports a JSON {} (any whitespace inside).
func isEmptyObject(b []byte) bool {
	b = bytes.TrimSpace(b)
	if len(b) < 2 || b[0] != '{' || b[len(b)-1] != '}' {
		return false
	}
	return len(bytes.TrimSpace(b[1:len(b)-1])) == 0
}

// snippet returns the start of b for error messages.
func snippet(b []byte) string {
	s := strings.TrimSpace(string(b))
	if len(s) > 200 {
		s = s[:200] + "..."
	}
	return s
}

// newID returns a random call id of 32 hex digits.
func newID() string {
	var b [16]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read does not fail (Go 1.24+)
	return hex.EncodeToString(b[:])
}
