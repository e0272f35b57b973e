package host

import (
	"errors"
	"fmt"
	"strings"
)

// Sentinel errors returned (wrapped) by Host.Call and Host.StreamCall.
// Inspect them with errors.Is.
var (
	// ErrFunctionNotFound: no served function has the requested name.
	ErrFunctionNotFound = errors.New("function not found")
	// ErrPluginFailed: the owning plugin is in the failed state (crash
	// loop or a broken binary); the error text gives the reason.
	ErrPluginFailed = errors.New("plugin failed")
	// ErrPluginStopped: the owning plugin was removed or the host is
	// shutting down.
	ErrPluginStopped = errors.New("plugin stopped")
	// ErrPluginExited: the plugin process exited while the call was in
	// flight. The error is a *ExitError with the plugin's stderr tail.
	ErrPluginExited = errors.New("plugin exited")
	// ErrBusy: the plugin's concurrency limit stayed full until the call's
	// deadline.
	ErrBusy = errors.New("plugin busy")
	// ErrTimeout: the call's deadline passed (--call-timeout or the
	// caller's own).
	ErrTimeout = errors.New("call timed out")
	// ErrCanceled: the caller went away before the call finished.
	ErrCanceled = errors.New("call canceled")
	// ErrWrongKind: a streaming function was called with Call, or a
	// non-streaming one with StreamCall.
	ErrWrongKind = errors.New("wrong call kind")
	// ErrClosed: the host has been closed.
	ErrClosed = errors.New("host closed")
)

// ExitError reports a plugin process that exited during a call. It
// matches ErrPluginExited with errors.Is.
type ExitError struct {
	// Plugin is the plugin's name (file name without "opentool-plugin-").
	Plugin string
	// PID is the process id that exited.
	PID int
	// Status is the exit status as the OS reported it, e.g.
	// "signal: killed" or "exit status 2".
	Status string
	// Stderr holds the last lines the process wrote to stderr (oldest
	// first, at most 20).
	Stderr []string
}

// Error implements error.
func (e *ExitError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "plugin %q exited (pid %d", e.Plugin, e.PID)
	if e.Status != "" {
		fmt.Fprintf(&b, ", %s", e.Status)
	}
	b.WriteString(") during the call")
	if n := len(e.Stderr); n > 0 {
		fmt.Fprintf(&b, "; last stderr: %s", strings.Join(e.Stderr[max(0, n-5):], " | "))
	}
	return b.String()
}

// Is reports whether target is ErrPluginExited.
func (e *ExitError) Is(target error) bool { return target == ErrPluginExited }

// PluginError wraps an error with the name of the plugin it came from.
type PluginError struct {
	// Plugin is the plugin's name.
	Plugin string
	// Err is the cause.
	Err error
}

// Error implements error: "plugin NAME: CAUSE".
func (e *PluginError) Error() string { return fmt.Sprintf("plugin %q: %v", e.Plugin, e.Err) }

// Unwrap returns the cause.
func (e *PluginError) Unwrap() error { return e.Err }
