package client

import (
	"encoding/json"
	"fmt"
	"net/http"
)

// The exceptions of client/server protocol 1.0.0, section 6, as Go error
// types. The client returns them as pointers: match them with errors.As,
//
//	var ce *client.CallError
//	if errors.As(err, &ce) { ... ce.Code, ce.Message ... }
//
// and each encodes to JSON as {"code": CODE, "message": MESSAGE}, like the
// reference SDKs' toJson().

// The fixed messages of section 6.
const (
	// MessageResponseNull is ResponseNullError's message.
	MessageResponseNull = "Response is null"
	// MessageErrorNull is ErrorNullError's message.
	MessageErrorNull = "Error is null"
	// MessageUnauthorized is UnauthorizedError's message.
	MessageUnauthorized = "Please check API Key is VALID or NOT"
	// MessageNoAccess is NoAccessError's message.
	MessageNoAccess = "Please check OpenTool Server is RUNNING or NOT"
)

// ResponseNullError (section 6 ResponseNullException) reports a response
// without a JSON-RPC response object: an empty body or JSON null.
type ResponseNullError struct {
	// Code is the HTTP status of the response.
	Code int
}

// Error implements error.
func (e *ResponseNullError) Error() string {
	return fmt.Sprintf("opentool client: %s (HTTP %d)", MessageResponseNull, e.Code)
}

// MarshalJSON encodes {"code":CODE,"message":"Response is null"}.
func (e ResponseNullError) MarshalJSON() ([]byte, error) {
	return codeMessage(e.Code, MessageResponseNull)
}

// ErrorNullError (section 6 ErrorNullException) reports a JSON-RPC
// response that has neither a result nor an error (both missing or null).
type ErrorNullError struct {
	// Code is the HTTP status of the response.
	Code int
}

// Error implements error.
func (e *ErrorNullError) Error() string {
	return fmt.Sprintf("opentool client: %s: the response has neither a result nor an error (HTTP %d)", MessageErrorNull, e.Code)
}

// MarshalJSON encodes {"code":CODE,"message":"Error is null"}.
func (e ErrorNullError) MarshalJSON() ([]byte, error) { return codeMessage(e.Code, MessageErrorNull) }

// UnauthorizedError (section 6 OpenToolServerUnauthorizedException): the
// server answered HTTP 401, the API key (WithAPIKey) is missing or wrong.
// Its code is always 401.
type UnauthorizedError struct{}

// Error implements error.
func (e *UnauthorizedError) Error() string {
	return "opentool client: unauthorized (HTTP 401): " + MessageUnauthorized
}

// MarshalJSON encodes {"code":401,"message":"Please check API Key is VALID or NOT"}.
func (e UnauthorizedError) MarshalJSON() ([]byte, error) {
	return codeMessage(http.StatusUnauthorized, MessageUnauthorized)
}

// NoAccessError (section 6 OpenToolServerNoAccessException): the server
// answered HTTP 404 (wrong base URL) or could not be reached at all. Its
// code is always 404.
type NoAccessError struct {
	// Status is the HTTP status (404), or 0 when no response came.
	Status int
	// Err is the transport error when no response came (connection
	// refused, DNS failure, ...), else nil.
	Err error
}

// Error implements error.
func (e *NoAccessError) Error() string {
	if e.Err != nil {
		return "opentool client: " + MessageNoAccess + ": " + e.Err.Error()
	}
	return fmt.Sprintf("opentool client: %s (HTTP %d)", MessageNoAccess, e.Status)
}

// Unwrap returns the transport error.
func (e *NoAccessError) Unwrap() error { return e.Err }

// MarshalJSON encodes {"code":404,"message":"Please check OpenTool Server is RUNNING or NOT"}.
func (e NoAccessError) MarshalJSON() ([]byte, error) {
	return codeMessage(http.StatusNotFound, MessageNoAccess)
}

// CallError (section 6 OpenToolServerCallException) reports a failed
// call: the JSON-RPC "error" member of the response (HTTP 200 for a tool's
// own failure, e.g. code 500; HTTP 400 for -32700/-32600), or any other
// HTTP status than 200, 401 and 404.
type CallError struct {
	// Code is error.code: the tool's code (400, 500, ...) or a JSON-RPC
	// code (-32700 ... -32603). When the response had no JSON-RPC error,
	// the HTTP status.
	Code int `json:"code"`
	// Message is error.message, or the HTTP status text and the start of
	// the body when the response had no JSON-RPC error.
	Message string `json:"message"`
	// Data is error.data when the server sent one (the host sends the
	// plugin's name and last stderr lines for plugin failures).
	Data any `json:"data,omitempty"`
	// Status is the HTTP status of the response.
	Status int `json:"-"`
}

// Error implements error: "opentool call failed (code CODE): MESSAGE".
func (e *CallError) Error() string {
	return fmt.Sprintf("opentool call failed (code %d): %s", e.Code, e.Message)
}

func codeMessage(code int, message string) ([]byte, error) {
	return json.Marshal(struct {
		Code    int    `json:"code"`
		Message string `json:"message"`
	}{code, message})
}
