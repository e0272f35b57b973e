package host_test

import (
	"context"
	"testing"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/opentool-host/opentool-host/host/core"
	"github.com/opentool-host/opentool-host/testkit"
)

// TestTraceReachesThePlugin: a call made inside a trace gets an
// execute_tool span (GenAI attributes) whose context reaches the plugin
// over gRPC metadata: the plugin sees the same trace id, with the host's
// span as its parent.
func TestTraceReachesThePlugin(t *testing.T) {
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	prev := otel.GetTracerProvider()
	otel.SetTracerProvider(tp)
	t.Cleanup(func() { otel.SetTracerProvider(prev) })

	dir := t.TempDir()
	testkit.InstallPlugin(t, dir, "faulty", "./testkit/plugins/faulty")
	h := startHost(t, dir, nil)

	ctx, parent := tp.Tracer("test").Start(context.Background(), "request")
	ctx = core.WithCaller(ctx, core.Caller{CallID: "call-7"})
	res, err := h.Call(ctx, "trace", nil)
	parent.End()
	if err != nil {
		t.Fatal(err)
	}
	var span sdktrace.ReadOnlySpan
	for _, s := range rec.Ended() {
		if s.Name() == "execute_tool trace" && s.Parent().SpanID() == parent.SpanContext().SpanID() {
			span = s
		}
	}
	if span == nil {
		t.Fatalf("no execute_tool span under the request span; ended: %d", len(rec.Ended()))
	}
	want := parent.SpanContext().TraceID().String()
	if !containsAll(string(res), []string{`"trace_id":"` + want + `"`, `"span_id":"` + span.SpanContext().SpanID().String() + `"`, `"remote":true`}) {
		t.Errorf("the plugin saw %s, want trace %s under span %s", res, want, span.SpanContext().SpanID())
	}
	attrs := map[attribute.Key]string{}
	for _, a := range span.Attributes() {
		attrs[a.Key] = a.Value.Emit()
	}
	for k, v := range map[attribute.Key]string{"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": "trace", "gen_ai.tool.call.id": "call-7", "opentool.plugin": "faulty"} {
		if attrs[k] != v {
			t.Errorf("span attribute %s = %q, want %q (all: %v)", k, attrs[k], v, attrs)
		}
	}
	_, _ = h.Call(ctx, "nope", nil)
	for _, s := range rec.Ended() {
		if s.Name() == "execute_tool nope" {
			for _, a := range s.Attributes() {
				if a.Key == "error.type" && a.Value.Emit() != "not_found" {
					t.Errorf("error.type = %s", a.Value.Emit())
				}
			}
		}
	}
}
