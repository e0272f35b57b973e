package host

import (
	"context"
	"errors"
	"time"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"

	"github.com/opentool-host/opentool-host/host/access"
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

// tracer makes the execute_tool spans: the global OpenTelemetry
// provider's, a no-op until the program configures one (its delegate
// follows a provider set later).
var tracer = otel.Tracer("github.com/opentool-host/opentool-host/host")

// unsetProvider is OpenTelemetry's global tracer provider before anyone
// set one: while it is still the global one, no span would be recorded
// (it hands back the parent's span context, which the context already
// carries to the plugin), so observe skips span work on the call path.
var unsetProvider = otel.GetTracerProvider()

// tracing reports whether a tracer provider was set (the CLI sets one
// when OTEL_* configures an exporter).
func tracing() bool { return otel.GetTracerProvider() != unsetProvider }

// observe starts r's execute_tool span (OpenTelemetry GenAI semantic
// conventions: gen_ai.operation.name, gen_ai.tool.name,
// gen_ai.tool.call.id, error.type), wraps r so that its results are
// counted, and returns ctx carrying the span (the plugin gets its trace
// context, internal/wire) and the function that ends the span and hands
// the finished call to Config.OnCall.
func (h *Host) observe(ctx context.Context, r *request) (context.Context, func(err error)) {
	caller := CallerFrom(ctx)
	if g := access.GrantFrom(ctx); g != nil && caller.Key == "" {
		caller.Key = g.Name()
	}
	var span trace.Span
	traced := tracing()
	if traced {
		ctx, span = tracer.Start(ctx, "execute_tool "+r.fn, trace.WithSpanKind(trace.SpanKindInternal),
			trace.WithAttributes(attribute.String("gen_ai.operation.name", "execute_tool"), attribute.String("gen_ai.tool.name", r.fn),
				attribute.String("gen_ai.tool.type", "function")))
		if caller.CallID != "" {
			span.SetAttributes(attribute.String("gen_ai.tool.call.id", caller.CallID))
		}
	}
	end := func(plugin string, err error) {
		if !traced {
			return
		}
		if plugin != "" {
			span.SetAttributes(attribute.String("opentool.plugin", plugin))
		}
		if err != nil {
			kind := string(KindCanceled)
			var he *Error
			if errors.As(err, &he) {
				kind = string(he.Kind)
			}
			span.SetAttributes(attribute.String("error.type", kind))
			span.SetStatus(codes.Error, err.Error())
		}
		span.End()
	}
	onCall := h.cfg.OnCall
	if onCall == nil {
		return ctx, func(err error) { end(r.plugin, err) }
	}
	rec := CallRecord{Function: r.fn, Caller: caller, Stream: r.stream, Start: time.Now(), ArgBytes: len(r.args)}
	emit := r.emit
	r.emit = func(item []byte) error {
		rec.Items++
		rec.ResultBytes += int64(len(item))
		return emit(item)
	}
	return ctx, func(err error) {
		end(r.plugin, err)
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
