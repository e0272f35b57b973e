package otc

import (
	"bytes"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"net/http"
	"strings"
	"time"

	"github.com/opentool-host/opentool-host/frontend/httpguard"
	"github.com/opentool-host/opentool-host/host"
	"github.com/opentool-host/opentool-host/host/access"
	"github.com/opentool-host/opentool-host/host/core"
	"github.com/opentool-host/opentool-host/internal/strictjson"
)

// CallRequest is the body of POST /otc/call (RFC 5.2 "Tool Execution").
type CallRequest struct {
	// Schema is the OTC version the client wrote; optional and not
	// checked (the server assumes the latest, RFC 5.2).
	Schema string `json:"$schema,omitempty"`
	// Request is the call (required).
	Request *ToolCallRequest `json:"request"`
}

// ToolCallRequest is RFC 4.2 "Tool Request Schema".
type ToolCallRequest struct {
	// CallID identifies the call; the server makes a random UUID when it
	// is empty (RFC 4.2) and echoes it in the response.
	CallID string `json:"call_id,omitempty"`
	// TraceID is the client's trace id; optional, logged only.
	TraceID string `json:"trace_id,omitempty"`
	// ToolID is "Toolkit.Tool[@Version]" (required).
	ToolID string `json:"tool_id"`
	// Input is the JSON object of arguments; absent or null means {}.
	Input json.RawMessage `json:"input,omitempty"`
	// Inputs is the RFC 4.2 spelling of Input, used when Input is absent.
	Inputs json.RawMessage `json:"inputs,omitempty"`
	// Context (authorization, secrets, user_id, user_info) is accepted
	// but not passed to plugins: OpenTool calls carry only arguments.
	Context json.RawMessage `json:"context,omitempty"`
}

// CallResponse is RFC 4.3 "Tool Response Schema", the body of every
// POST /otc/call answer.
type CallResponse struct {
	// Schema is SchemaURL.
	Schema string `json:"$schema"`
	// CallID echoes the request's call_id (or the one the server made).
	CallID string `json:"call_id"`
	// Duration is how long the call took, in milliseconds; absent when
	// the request was rejected before any tool ran.
	Duration *float64 `json:"duration,omitempty"`
	// Success says whether the tool returned a value.
	Success bool `json:"success"`
	// Output holds the value or the error.
	Output *CallOutput `json:"output,omitempty"`
}

// CallOutput is the "output" of a CallResponse: Value or Error.
type CallOutput struct {
	// Value is the tool's JSON result object; for a streaming tool
	// {"items": [ITEM, ...]}.
	Value json.RawMessage `json:"value,omitempty"`
	// Error says why the call failed.
	Error *ToolError `json:"error,omitempty"`
}

// ToolError is the "error" of a CallOutput (RFC 4.3).
type ToolError struct {
	// Message is for the user or the model: what went wrong.
	Message string `json:"message"`
	// DeveloperMessage is the detailed cause (plugin name, exit status,
	// stderr, error chain), for logs.
	DeveloperMessage string `json:"developer_message,omitempty"`
	// CanRetry says whether sending the same request again may succeed
	// (busy, timed out, plugin restarting or replaced).
	CanRetry bool `json:"can_retry"`
	// AdditionalPromptContent is extra text for a retry prompt; unused.
	AdditionalPromptContent string `json:"additional_prompt_content,omitempty"`
	// RetryAfterMs is the suggested wait before retrying, in
	// milliseconds; absent when there is no suggestion.
	RetryAfterMs int64 `json:"retry_after_ms,omitempty"`
}

// RetryAfter is the retry_after_ms suggested when a plugin is busy,
// restarting or being replaced.
const RetryAfter = time.Second

// handleCall serves POST /otc/call (RFC 5.2 "Tool Execution").
//
// HTTP 200 with a CallResponse for every call that names a tool, whether
// it succeeds or not (unknown tool, wrong version, invalid input, tool
// failure: success false and output.error). HTTP 400 with a CallResponse
// (success false) for a malformed request: not JSON, no "request", no or
// malformed tool_id, input that is not an object; 413 for a body over
// MaxBodyBytes; 415 for a Content-Type other than JSON.
func (h *Server) handleCall(w http.ResponseWriter, r *http.Request) {
	body, berr := httpguard.ReadBody(w, r, h.cfg.MaxBodyBytes, nil)
	if berr != nil {
		h.reject(w, berr.Status, "", berr.Message)
		return
	}
	req, err := decodeCall(body)
	if err != nil {
		h.reject(w, http.StatusBadRequest, "", "the body is not a valid call request: "+err.Error())
		return
	}
	if req.Request == nil {
		h.reject(w, http.StatusBadRequest, "", `the body must have a "request" object`)
		return
	}
	call := req.Request
	if call.CallID == "" {
		call.CallID = newCallID()
	}
	if call.ToolID == "" {
		h.reject(w, http.StatusBadRequest, call.CallID, `"request.tool_id" is required`)
		return
	}
	input := call.Input
	if len(input) == 0 {
		input = call.Inputs
	}
	if input = bytes.TrimSpace(input); len(input) > 0 && input[0] != '{' && string(input) != "null" {
		h.reject(w, http.StatusBadRequest, call.CallID, `"request.input" must be a JSON object`)
		return
	}
	if string(input) == "null" {
		input = nil
	}

	t, err := h.tools().resolve(r.Context(), call.ToolID)
	if errors.Is(err, errBadToolID) {
		h.reject(w, http.StatusBadRequest, call.CallID, err.Error())
		return
	}
	start := time.Now()
	var value []byte
	if err == nil {
		value, err = h.run(r, t, input)
	}
	if r.Context().Err() != nil {
		return // the client went away
	}
	ms := math.Round(float64(time.Since(start).Microseconds())) / 1000
	resp := &CallResponse{Schema: SchemaURL, CallID: call.CallID, Duration: &ms}
	if err != nil {
		te := h.toolError(call.ToolID, t, err)
		resp.Output = &CallOutput{Error: te}
		h.cfg.Logger.Debug("otc call failed", "call_id", call.CallID, "trace_id", call.TraceID, "tool_id", call.ToolID, "error", err)
	} else {
		if len(value) == 0 {
			value = []byte("{}")
		}
		resp.Success = true
		resp.Output = &CallOutput{Value: value}
	}
	h.write(w, http.StatusOK, resp)
}

// run calls tool t with input; a streaming tool's items are collected
// into {"items":[...]}, up to MaxResultBytes.
func (h *Server) run(r *http.Request, t *tool, input []byte) ([]byte, error) {
	ctx := core.WithCaller(r.Context(), core.Caller{FrontEnd: "otc"})
	if !t.fn.IsStream() {
		return h.b.Call(ctx, t.fn.Name, input)
	}
	return host.CollectItems(ctx, nil, h.b.StreamCall, t.fn.Name, input, h.cfg.MaxResultBytes)
}

// toolError translates a resolution error or the host's *core.Error of a
// call of t (nil when the id did not resolve) into the RFC 4.3 error
// object: Message for the user or model, the cause in DeveloperMessage
// (never a plugin's stderr), can_retry from the kind
// (core.Kind.Retryable), with retry_after_ms when the plugin is busy,
// exited or stopped. A function call_tool names that the key may not
// call, or that is not served, is an unknown tool, as an id that does
// not resolve is.
func (h *Server) toolError(toolID string, t *tool, err error) *ToolError {
	e := core.AsError(err)
	if e == nil {
		switch {
		case errors.Is(err, errUnknownTool), errors.Is(err, errWrongVersion):
			return &ToolError{Message: err.Error()}
		}
		h.cfg.Logger.Warn("otc call failed", "tool_id", toolID, "error", err)
		return &ToolError{Message: "The tool failed.", DeveloperMessage: err.Error()}
	}
	te := &ToolError{Message: kindMessages[e.Kind], DeveloperMessage: e.Error(), CanRetry: e.Kind.Retryable()}
	switch e.Kind {
	case core.KindInvalidParams:
		te.Message = "Invalid input: " + strings.TrimPrefix(e.Message, "invalid params: ")
	case core.KindTool:
		te.Message = e.Message
		te.DeveloperMessage = fmt.Sprintf("tool %s failed with code %d: %s", toolID, e.Code, e.Message)
	case core.KindNotFound:
		if t != nil && e.Function != "" && e.Function != t.fn.Name { // through call_tool
			return &ToolError{Message: fmt.Sprintf("%v %q: no served tool has that name", errUnknownTool, e.Function) + e.DidYouMean()}
		}
		te.Message = "Tool " + toolID + " is not served any more."
	case core.KindResultRejected:
		if strings.Contains(e.Message, "more than") {
			te.Message = "The tool's result is too large."
		}
	case core.KindNeedsLogin:
		te.Message = "Log in first, then call again: " + e.Login
	case core.KindBusy, core.KindExited, core.KindStopped:
		te.RetryAfterMs = RetryAfter.Milliseconds()
	}
	if te.Message == "" {
		te.Message = "The tool failed."
	}
	if e.Kind != core.KindInvalidParams && e.Kind != core.KindTool {
		h.cfg.Logger.Warn("otc call failed", "tool_id", toolID, "kind", e.Kind, "error", e, "cause", e.Err)
	}
	return te
}

// kindMessages are the user-facing messages of host error kinds.
var kindMessages = map[core.Kind]string{
	core.KindWrongKind:      "The tool cannot be called this way.",
	core.KindBusy:           "The tool is busy; try again shortly.",
	core.KindTimeout:        "The tool call timed out.",
	core.KindExited:         "The tool stopped unexpectedly during the call; it is being restarted.",
	core.KindStopped:        "The tool is being replaced or stopped.",
	core.KindFailed:         "The tool is unavailable.",
	core.KindTransport:      "The tool could not be reached.",
	core.KindCanceled:       "The call was canceled.",
	core.KindResultRejected: "The tool returned an invalid result.",
}

// refuseCall answers a call refused by its key's rate limit (Routes):
// HTTP 429 with a CallResponse whose error is {"message":"rate limited:
// too many calls for this API key","can_retry":true,"retry_after_ms":N},
// for the body's call_id (a new one when it has none).
func (h *Server) refuseCall(w http.ResponseWriter, r *http.Request, rf *access.Refusal) {
	body, _ := httpguard.ReadBody(w, r, h.cfg.MaxBodyBytes, nil)
	var callID string
	if raw := strictjson.Member(body, "request", "call_id"); json.Unmarshal(raw, &callID) != nil || callID == "" {
		callID = newCallID()
	}
	h.write(w, http.StatusTooManyRequests, &CallResponse{Schema: SchemaURL, CallID: callID, Output: &CallOutput{Error: &ToolError{
		Message: rf.Message, CanRetry: true, RetryAfterMs: access.RetryAfterMs(rf.RetryAfter)}}})
}

// reject answers a request that cannot be run with status and a
// CallResponse whose error is msg.
func (h *Server) reject(w http.ResponseWriter, status int, callID, msg string) {
	h.write(w, status, &CallResponse{Schema: SchemaURL, CallID: callID, Output: &CallOutput{Error: &ToolError{Message: "Invalid request: " + msg}}})
}

func (h *Server) write(w http.ResponseWriter, status int, resp *CallResponse) {
	b, err := json.Marshal(resp)
	if err != nil { // only a plugin result that is not JSON could do this
		h.cfg.Logger.Error("encode otc response", "call_id", resp.CallID, "error", err)
		b, _ = json.Marshal(&CallResponse{Schema: SchemaURL, CallID: resp.CallID, Duration: resp.Duration,
			Output: &CallOutput{Error: &ToolError{Message: "The tool returned a result that is not JSON.", DeveloperMessage: err.Error()}}})
	}
	h.writeBody(w, status, b)
}

// decodeCall decodes a CallRequest exactly: a member given twice (at any
// depth) or two members of the envelope or of "request" whose names
// differ only in case ("tool_id" and "TOOL_ID", which encoding/json would
// take as one, the last winning) are refused, naming the member.
func decodeCall(body []byte) (CallRequest, error) {
	var req CallRequest
	tree, err := strictjson.Decode(body)
	if err != nil {
		return req, err
	}
	if err := strictjson.CheckFolded(tree, "request"); err != nil {
		return req, err
	}
	err = json.Unmarshal(body, &req)
	return req, err
}

// newCallID returns a random (version 4) UUID.
func newCallID() string {
	var u [16]byte
	_, _ = rand.Read(u[:])
	u[6] = u[6]&0x0f | 0x40
	u[8] = u[8]&0x3f | 0x80
	return fmt.Sprintf("%x-%x-%x-%x-%x", u[0:4], u[4:6], u[6:8], u[8:10], u[10:16])
}
