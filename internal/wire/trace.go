package wire

import (
	"context"

	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"
	"google.golang.org/grpc/metadata"
)

// Trace context crosses the plugin boundary as W3C Trace Context
// (traceparent, tracestate) in the Invoke stream's gRPC metadata, so a
// plugin's own spans join the caller's trace. The host injects it when
// the call's context has a valid span (InjectTrace, in Client.Invoke);
// the plugin side extracts it (ExtractTrace, in pluginsdk). The format is
// fixed here, whatever propagators the host's OpenTelemetry setup uses,
// so plugins in any language read the same two keys.
var traceFormat = propagation.TraceContext{}

// mdCarrier adapts gRPC metadata to propagation.TextMapCarrier (keys are
// lower case in gRPC metadata, as in traceparent).
type mdCarrier metadata.MD

func (c mdCarrier) Get(key string) string {
	if v := metadata.MD(c).Get(key); len(v) > 0 {
		return v[0]
	}
	return ""
}

func (c mdCarrier) Set(key, value string) { metadata.MD(c).Set(key, value) }

func (c mdCarrier) Keys() []string {
	out := make([]string, 0, len(c))
	for k := range c {
		out = append(out, k)
	}
	return out
}

// InjectTrace returns ctx with its span's trace context added to the
// outgoing gRPC metadata; ctx itself when it has no valid span.
func InjectTrace(ctx context.Context) context.Context {
	if !trace.SpanContextFromContext(ctx).IsValid() {
		return ctx
	}
	md := metadata.MD{}
	traceFormat.Inject(ctx, mdCarrier(md))
	kv := make([]string, 0, 2*len(md))
	for k, vs := range md {
		for _, v := range vs {
			kv = append(kv, k, v)
		}
	}
	return metadata.AppendToOutgoingContext(ctx, kv...)
}

// ExtractTrace returns ctx carrying the remote span context found in its
// incoming gRPC metadata (the host's execute_tool span), or ctx as is.
// trace.SpanContextFromContext then gives the caller's trace id, and spans
// a plugin starts from ctx are its children.
func ExtractTrace(ctx context.Context) context.Context {
	md, ok := metadata.FromIncomingContext(ctx)
	if !ok {
		return ctx
	}
	return traceFormat.Extract(ctx, mdCarrier(md))
}

// traceFields returns the W3C traceparent and tracestate of ctx's span
// for a data-channel call frame; empty strings when it has no valid span.
func traceFields(ctx context.Context) (traceparent, tracestate string) {
	if !trace.SpanContextFromContext(ctx).IsValid() {
		return "", ""
	}
	c := propagation.MapCarrier{}
	traceFormat.Inject(ctx, c)
	return c["traceparent"], c["tracestate"]
}

// WithTraceFields returns ctx carrying the remote span context of a
// data-channel call frame's traceparent and tracestate (the plugin-side
// twin of ExtractTrace); ctx as is when traceparent is empty or invalid.
func WithTraceFields(ctx context.Context, traceparent, tracestate string) context.Context {
	if traceparent == "" {
		return ctx
	}
	return traceFormat.Extract(ctx, propagation.MapCarrier{"traceparent": traceparent, "tracestate": tracestate})
}
