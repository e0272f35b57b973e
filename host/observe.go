package host

import (
	"context"
	"errors"
	"time"
)

// Caller says who made a call: the front end it came through and the
// name of the API key that authenticated it. Front ends put it on the
// call's context (WithCaller); the host hands it to Config.OnCall.
type Caller struct {
	// FrontEnd is "opentool" (the OpenTool HTTP API), "otc", "mcp",
	// "cli", or "" when unknown.
	FrontEnd string
	// Key is the API key's name ("" without auth or when unnamed).
	Key string
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

// observe wraps r so that its results are counted, and returns the
// function that hands the finished call to Config.OnCall (a no-op
// without one).
func (h *Host) observe(ctx context.Context, r *request) func(err error) {
	onCall := h.cfg.OnCall
	if onCall == nil {
		return func(error) {}
	}
	rec := CallRecord{Function: r.fn, Caller: CallerFrom(ctx), Stream: r.stream, Start: time.Now(), ArgBytes: len(r.args)}
	emit := r.emit
	r.emit = func(item []byte) error {
		rec.Items++
		rec.ResultBytes += int64(len(item))
		return emit(item)
	}
	return func(err error) {
		rec.Duration = time.Since(rec.Start)
		rec.Plugin = r.plugin
		var he *Error
		switch {
		case errors.As(err, &he):
			rec.Kind = he.Kind
			if rec.Plugin == "" {
				rec.Plugin = he.Plugin
			}
		case err != nil:
			rec.Kind = KindCanceled // the caller's own emit failed: it went away
		}
		onCall(ctx, rec)
	}
}
