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
		if emit == nil { // kept (request.Emit)
			r.result = item
			return nil
		}
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
