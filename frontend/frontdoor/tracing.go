package frontdoor

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"strings"

	"go.opentelemetry.io/contrib/instrumentation/net/http/otelhttp"
	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracegrpc"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	semconv "go.opentelemetry.io/otel/semconv/v1.26.0"

	"github.com/opentool-host/opentool-host/internal/version"
)

// tracingEnabled reports whether the standard OpenTelemetry environment
// asks for traces: an OTLP endpoint (OTEL_EXPORTER_OTLP_ENDPOINT or
// OTEL_EXPORTER_OTLP_TRACES_ENDPOINT) or OTEL_TRACES_EXPORTER=otlp, and
// not OTEL_TRACES_EXPORTER=none or OTEL_SDK_DISABLED=true. Off otherwise.
func tracingEnabled() bool {
	if strings.EqualFold(os.Getenv("OTEL_SDK_DISABLED"), "true") {
		return false
	}
	switch strings.ToLower(os.Getenv("OTEL_TRACES_EXPORTER")) {
	case "none":
		return false
	case "otlp":
		return true
	}
	return os.Getenv("OTEL_EXPORTER_OTLP_ENDPOINT") != "" || os.Getenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT") != ""
}

// setupTracing installs the global tracer provider and the W3C propagator
// when tracingEnabled: an OTLP exporter over HTTP/protobuf, or gRPC with
// OTEL_EXPORTER_OTLP_PROTOCOL=grpc (endpoint, headers, timeout from the
// standard OTEL_EXPORTER_OTLP_* variables), batched; service.name
// "opentool-host" unless OTEL_SERVICE_NAME says otherwise. It returns the
// function that flushes and stops it (a no-op when tracing is off).
// Errors: the exporter could not be made from the environment.
func setupTracing(ctx context.Context) (shutdown func(context.Context) error, err error) {
	otel.SetTextMapPropagator(propagation.NewCompositeTextMapPropagator(propagation.TraceContext{}, propagation.Baggage{}))
	if !tracingEnabled() {
		return func(context.Context) error { return nil }, nil
	}
	var exp sdktrace.SpanExporter
	if strings.EqualFold(os.Getenv("OTEL_EXPORTER_OTLP_PROTOCOL"), "grpc") {
		exp, err = otlptracegrpc.New(ctx)
	} else {
		exp, err = otlptracehttp.New(ctx)
	}
	if err != nil {
		return nil, fmt.Errorf("tracing: %w", err)
	}
	res, err := resource.Merge(resource.Default(), resource.NewSchemaless(semconv.ServiceVersion(version.Version)))
	if err != nil {
		res = resource.Default()
	}
	if os.Getenv("OTEL_SERVICE_NAME") == "" {
		res, _ = resource.Merge(res, resource.NewSchemaless(semconv.ServiceName("opentool-host")))
	}
	tp := sdktrace.NewTracerProvider(sdktrace.WithBatcher(exp), sdktrace.WithResource(res))
	otel.SetTracerProvider(tp)
	return tp.Shutdown, nil
}

// traced is the chain's tracing step (Chain.Trace). With tracing on (tracingEnabled)
// every request gets a server span (otelhttp) that continues the caller's
// trace (W3C traceparent); the host's execute_tool spans are its
// children. With tracing off no span is made (otelhttp costs about 50
// allocations a request even with a no-op provider): the caller's
// traceparent alone is taken into the request's context, so that it still
// reaches the plugin.
func traced() func(h http.Handler, spanName func(*http.Request) string) http.Handler {
	if tracingEnabled() {
		return func(h http.Handler, spanName func(*http.Request) string) http.Handler {
			return otelhttp.NewHandler(h, "opentool-host", otelhttp.WithSpanNameFormatter(func(_ string, r *http.Request) string {
				return spanName(r)
			}))
		}
	}
	return func(h http.Handler, _ func(*http.Request) string) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if _, ok := r.Header["Traceparent"]; ok {
				r = r.WithContext(otel.GetTextMapPropagator().Extract(r.Context(), propagation.HeaderCarrier(r.Header)))
			}
			h.ServeHTTP(w, r)
		})
	}
}
