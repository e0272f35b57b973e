package core

import (
	"context"
	"time"
)

// Caller says who made a call: the front end it came through and the
// name of the API key that authenticated it. Front ends put it on the
// call's context (WithCaller); the host hands it to Config.OnCall.
type Caller struct {
	// FrontEnd is "opentool" (the OpenTool HTTP API), "otc", "mcp",
	// "cli", or "" when unknown.
	FrontEnd string
	// Key is the API key's name: set by WithCaller, else the name of the
	// access.Grant on the context ("" without auth).
	Key string
	// CallID is the caller's id for the call (the JSON-RPC id, the MCP
	// request id), for traces ("" when none).
	CallID string
	// Run is the id of the run_code program ("run-" and 16 hex digits,
	// host/codemode.go) the call is, or was made by: run_code's own
	// record and those of its inner calls share it ("" otherwise).
	Run string
}

type callerKey struct{}

// WithCaller returns ctx carrying c. A later WithCaller replaces fields
// that are set: a front end sets FrontEnd, the auth middleware Key.
func WithCaller(ctx context.Context, c Caller) context.Context {
	old := CallerFrom(ctx)
	if c.FrontEnd == "" {
		c.FrontEnd = old.FrontEnd
	}
	if c.Key == "" {
		c.Key = old.Key
	}
	if c.CallID == "" {
		c.CallID = old.CallID
	}
	if c.Run == "" {
		c.Run = old.Run
	}
	return context.WithValue(ctx, callerKey{}, c)
}

// CallerFrom returns the Caller on ctx (zero when none).
func CallerFrom(ctx context.Context) Caller {
	c, _ := ctx.Value(callerKey{}).(Caller)
	return c
}

// CallRecord is one finished call, as Config.OnCall receives it: for
// metrics, traces and the audit log. It holds sizes, never argument or
// result values.
type CallRecord struct {
	// Function is the name the caller used; Plugin the serving plugin
	// ("" when no plugin serves the name).
	Function, Plugin string
	// Caller is who called (WithCaller).
	Caller Caller
	// Stream is true for StreamCall.
	Stream bool
	// Start is when the host received the call; Duration how long it
	// took until the last result or the error.
	Start    time.Time
	Duration time.Duration
	// Kind is "" for a success, else the *Error's kind (KindTool for the
	// tool's own error, ...).
	Kind Kind
	// ArgBytes is the size of the arguments (JSON), bytes; ResultBytes
	// the total size of the results sent, bytes; Items how many.
	ArgBytes    int
	ResultBytes int64
	Items       int
}
