package host_test

import (
	"context"
	"testing"

	"go.opentelemetry.io/otel"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/opentool-host/opentool-host/host"
	"github.com/opentool-host/opentool-host/internal/testutil"
)

// BenchmarkCallTracing measures what tracing adds to one call through the
// host to a real plugin (the echo test plugin), same run: "off" is the
// default (no provider: no-op spans; an incoming trace context still
// crosses), "on" samples every call into an SDK provider whose exporter
// keeps nothing (span creation, attributes, the traceparent in the gRPC
// metadata and its extraction in the plugin). make bench runs it.
func BenchmarkCallTracing(b *testing.B) {
	dir := b.TempDir()
	testutil.InstallPlugin(b, dir, "echo", "./internal/testplugins/echo")
	h, err := host.New(host.Config{Dir: dir, StateDir: b.TempDir()})
	if err != nil {
		b.Fatal(err)
	}
	if err := h.Start(context.Background()); err != nil {
		b.Fatal(err)
	}
	defer h.Close(context.Background())
	args := []byte(`{"data":"hello"}`)
	for _, mode := range []string{"off", "on"} {
		b.Run("tracing="+mode, func(b *testing.B) {
			if mode == "on" {
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
