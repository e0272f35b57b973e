package core

import (
	"errors"
	"fmt"
	"strings"

	"github.com/opentool-host/opentool-host/protocol/argcheck"
)

// Kind says what went wrong with a call. Every error of Host.Call and
// Host.StreamCall is an *Error with one Kind; front ends translate the
// kind into their wire format (OpenTool JSON-RPC, Open Tool Calling, ...)
// and never need to look further. A Kind is itself an error, so that
// errors.Is(err, core.ErrTimeout) tests the kind of an *Error.
type Kind string

// The kinds of call errors.
const (
	// KindInvalidParams: the arguments fail the function's parameters
	// (checked by the host before the plugin runs); Error.Faults lists
	// every fault by parameter path.
	KindInvalidParams Kind = "invalid_params"
	// KindNotFound: no served function has the requested name.
	KindNotFound Kind = "not_found"
	// KindWrongKind: a streaming function was called with Call, or a
	// unary one with StreamCall.
	KindWrongKind Kind = "wrong_kind"
	// KindTool: the tool's own error; Error.Code and Error.Message are
	// what the plugin chose (400, 404, 500 or its own code).
	KindTool Kind = "tool_error"
	// KindExited: the plugin process exited during the call;
	// Error.Status is the exit status ("signal: killed").
	KindExited Kind = "plugin_exited"
	// KindFailed: the owning plugin is failed (crash loop or a broken
	// binary) until its file changes.
	KindFailed Kind = "plugin_failed"
	// KindStopped: the owning plugin was removed, or the host is closing.
	KindStopped Kind = "plugin_stopped"
	// KindTransport: the connection to the plugin failed although the
	// process still runs, or a declared MCP server reached by URL cannot
	// be reached (the host reconnects by itself).
	KindTransport Kind = "transport"
	// KindTimeout: the call's deadline passed (Config.CallTimeout or the
	// caller's own).
	KindTimeout Kind = "timeout"
	// KindBusy: the plugin's concurrency limit and queue are full, or no
	// slot freed before the call's deadline.
	KindBusy Kind = "busy"
	// KindCanceled: the caller went away before the call finished.
	KindCanceled Kind = "canceled"
	// KindResultRejected: the plugin's result is not one JSON object, is
	// larger than Config.MaxResultBytes, or a unary function sent more
	// than one result.
	KindResultRejected Kind = "result_rejected"
	// KindNeedsLogin: the function is a declared server's whose
	// credentials are per-user ("credentials": "per-user") and the
	// caller's principal holds no token for it (never logged in, logged
	// out, or its token was refused and could not be refreshed);
	// Error.Login is where it logs in. Retryable once it has.
	KindNeedsLogin Kind = "needs_login"
)

// DidYouMean is "; did you mean \"NAME\"?" for e's Suggestion, "" when e
// is nil or has none.
func (e *Error) DidYouMean() string {
	if e == nil || e.Suggestion == "" {
		return ""
	}
	return fmt.Sprintf("; did you mean %q?", e.Suggestion)
}

// Error implements error: the kind's name, so that a Kind can be the
// target of errors.Is.
func (k Kind) Error() string { return string(k) }

// Retryable reports whether sending the same call again may succeed
// without any change to the call: busy, timed out, canceled, the plugin
// exited or lost its connection (it is being restarted), or the caller
// must log in first (KindNeedsLogin: the same call, once it has).
func (k Kind) Retryable() bool {
	switch k {
	case KindBusy, KindTimeout, KindCanceled, KindExited, KindTransport, KindStopped, KindNeedsLogin:
		return true
	}
	return false
}

// Sentinels for errors.Is, one per kind (kept from the first API).
var (
	ErrFunctionNotFound error = KindNotFound
	ErrWrongKind        error = KindWrongKind
	ErrPluginExited     error = KindExited
	ErrPluginFailed     error = KindFailed
	ErrPluginStopped    error = KindStopped
	ErrTimeout          error = KindTimeout
	ErrBusy             error = KindBusy
	ErrCanceled         error = KindCanceled
	ErrResultRejected   error = KindResultRejected
	ErrInvalidParams    error = KindInvalidParams
)

// ErrClosed: the host has been closed (Rescan after Close).
var ErrClosed = errors.New("host closed")

// Fault is one problem with a call's arguments: a parameter path and a
// readable message (see argcheck.Fault).
type Fault = argcheck.Fault

// Error is the one error type of a call. Message is short and safe to
// show any caller (it never holds a plugin's stderr or the host's paths);
// Err keeps the cause for the host's log.
type Error struct {
	// Kind says what happened.
	Kind Kind
	// Function is the called function's name.
	Function string
	// Plugin is the serving plugin's name ("" when none was involved).
	Plugin string
	// Code is the tool's own error code (KindTool only).
	Code int
	// Message describes the failure for the caller.
	Message string
	// Faults lists every fault of the arguments (KindInvalidParams only).
	Faults []Fault
	// Status is the plugin's exit status, e.g. "signal: killed" or
	// "exit status 2" (KindExited only).
	Status string
	// Suggestion, with KindNotFound, is the served function the caller
	// most likely meant (internal/nearest: case, a prefix, a typo or
	// two), chosen among those the caller's key may call, so that it
	// names nothing the key may not see; "" when none is close. Message
	// ends with it ("; did you mean \"add\"?"); front ends that word
	// their own not-found message add DidYouMean.
	Suggestion string
	// Login, with KindNeedsLogin, is how the caller logs in: the
	// authorization URL to open, or the command to run when the host
	// cannot make one. It is the caller's own: it names no other
	// principal. Message leaves it out (a login URL carries the login's
	// state, which no log line may hold); CallerText adds it.
	Login string
	// Err is the underlying cause, for logs; nil when there is none.
	Err error
}

// Error implements error: `plugin "P": function "F": MESSAGE`, with the
// plugin left out when there is none and the function when MESSAGE
// already names it.
func (e *Error) Error() string {
	var b strings.Builder
	if e.Plugin != "" {
		fmt.Fprintf(&b, "plugin %q: ", e.Plugin)
	}
	if e.Function != "" && !strings.Contains(e.Message, fmt.Sprintf("function %q", e.Function)) {
		fmt.Fprintf(&b, "function %q: ", e.Function) // said once: not when the message names it
	}
	b.WriteString(e.Message)
	return b.String()
}

// CallerText is e's text for the caller it belongs to, and for no one
// else (never a log line): Error(), and, when Login is set, "; log in:
// LOGIN".
func (e *Error) CallerText() string {
	if e.Login == "" {
		return e.Error()
	}
	return e.Error() + "; log in: " + e.Login
}

// Unwrap returns the cause.
func (e *Error) Unwrap() error { return e.Err }

// Is reports whether target is e's Kind.
func (e *Error) Is(target error) bool {
	k, ok := target.(Kind)
	return ok && k == e.Kind
}

// AsError returns the *Error in err's chain, or nil.
func AsError(err error) *Error {
	var e *Error
	if errors.As(err, &e) {
		return e
	}
	return nil
}
