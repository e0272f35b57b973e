package host_test

import (
	"context"
	"testing"

	"go.opentelemetry.io/otel"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/opentool-host/opentool-host/frontend/metrics"
	"github.com/opentool-host/opentool-host/host"
	"github.com/opentool-host/opentool-host/host/core"
	"github.com/opentool-host/opentool-host/testkit"
)

// BenchmarkCallObservability measures what observation adds to one call
// through the host to a real plugin (the echo test plugin), same run:
// "off" is the default without metrics (no-op spans; an incoming trace
// context still crosses); "metrics" counts every call into the
// Prometheus registry (core.Config.OnCall); "tracing" samples every call
// into an SDK provider whose exporter keeps nothing (span, attributes,
// the traceparent in the gRPC metadata and its extraction in the plugin).
// make bench runs it.
func BenchmarkCallObservability(b *testing.B) {
	dir := b.TempDir()
	testkit.InstallPlugin(b, dir, "echo", "./testkit/plugins/echo")
	args := []byte(`{"data":"hello"}`)
	for _, mode := range []string{"off", "metrics", "tracing"} {
		b.Run("observe="+mode, func(b *testing.B) {
			var m *metrics.Metrics
			cfg := core.Config{Dir: dir, StateDir: b.TempDir()}
			if mode == "metrics" {
				cfg.OnCall = func(ctx context.Context, r core.CallRecord) { m.Observe(ctx, r) }
			}
			h, err := host.New(cfg)
			if err != nil {
				b.Fatal(err)
			}
			if mode == "metrics" {
				m = metrics.New(h)
				defer m.Close()
			}
			if err := h.Start(context.Background()); err != nil {
				b.Fatal(err)
			}
			defer h.Close(context.Background())
			if mode == "tracing" {
				tp := sdktrace.NewTracerProvider(sdktrace.WithSampler(sdktrace.AlwaysSample()),
					sdktrace.WithSyncer(tracetest.NewNoopExporter()))
				prev := otel.GetTracerProvider()
				otel.SetTracerProvider(tp)
				defer func() { otel.SetTracerProvider(prev); _ = tp.Shutdown(context.Background()) }()
			}
			ctx := context.Background()
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				if _, err := h.Call(ctx, "echo", args); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
