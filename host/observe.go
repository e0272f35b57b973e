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
	"github.com/opentool-host/opentool-host/host/core"
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
// gen_ai.tool.call.id, error.type), has r's results counted
// (request.Emit), and returns ctx carrying the span (the plugin gets its
// trace context, internal/wire) and the observation whose done ends the
// span and hands the finished call to Config.OnCall. It allocates
// nothing of its own: the observation, r.obs, holds the span, the record
// and what done needs.
func (h *Host) observe(ctx context.Context, r *request) (context.Context, *observation) {
	caller := core.CallerFrom(ctx)
	if g := access.GrantFrom(ctx); g != nil && caller.Key == "" {
		caller.Key = g.Name()
	}
	o := &r.obs
	*o = observation{r: r, traced: tracing(), onCall: h.cfg.OnCall}
	if o.traced {
		ctx, o.span = tracer.Start(ctx, "execute_tool "+r.fn, trace.WithSpanKind(trace.SpanKindInternal),
			trace.WithAttributes(attribute.String("gen_ai.operation.name", "execute_tool"), attribute.String("gen_ai.tool.name", r.fn),
				attribute.String("gen_ai.tool.type", "function")))
		if caller.CallID != "" {
			o.span.SetAttributes(attribute.String("gen_ai.tool.call.id", caller.CallID))
		}
	}
	o.ctx = ctx
	if o.onCall != nil {
		o.rec = core.CallRecord{Function: r.fn, Caller: caller, Stream: r.stream, Start: time.Now(), ArgBytes: len(r.args)}
		r.counted = &o.rec
	}
	return ctx, o
}

// observation is one call observed (observe): its span, when traced, and
// its record, when Config.OnCall wants it.
type observation struct {
	r      *request
	ctx    context.Context
	traced bool
	span   trace.Span
	onCall func(ctx context.Context, rec core.CallRecord)
	rec    core.CallRecord
}

// done ends the span with err and hands the finished call to
// Config.OnCall.
func (o *observation) done(err error) {
	o.end(o.r.plugin, err)
	if o.onCall == nil {
		return
	}
	rec := o.rec
	rec.Duration = time.Since(rec.Start)
	rec.Plugin = o.r.plugin
	if err != nil {
		// errors.AsType, not errors.As: no *core.Error kept on the heap
		// for every call, the ones without an error included.
		if he, ok := errors.AsType[*core.Error](err); ok {
			rec.Kind = he.Kind
			if rec.Plugin == "" {
				rec.Plugin = he.Plugin
			}
		} else {
			rec.Kind = core.KindCanceled // the caller's own emit failed: it went away
		}
	}
	o.onCall(o.ctx, rec)
}

// end ends the span, when traced, naming plugin and err's kind.
func (o *observation) end(plugin string, err error) {
	if !o.traced {
		return
	}
	if plugin != "" {
		o.span.SetAttributes(attribute.String("opentool.plugin", plugin))
	}
	if err != nil {
		kind := string(core.KindCanceled)
		var he *core.Error
		if errors.As(err, &he) {
			kind = string(he.Kind)
		}
		o.span.SetAttributes(attribute.String("error.type", kind))
		o.span.SetStatus(codes.Error, err.Error())
	}
	o.span.End()
}
