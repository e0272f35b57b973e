package e2e_test

import (
	"encoding/hex"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	coltrace "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	"google.golang.org/protobuf/proto"

	"github.com/opentool-host/opentool-host/testkit"
)

// otlpSink is an OTLP/HTTP trace receiver on 127.0.0.1 that keeps the
// spans it gets: name -> hex trace id.
type otlpSink struct {
	mu    sync.Mutex
	spans map[string]string
}

func (s *otlpSink) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	b, _ := io.ReadAll(r.Body)
	var req coltrace.ExportTraceServiceRequest
	if err := proto.Unmarshal(b, &req); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	s.mu.Lock()
	for _, rs := range req.ResourceSpans {
		for _, ss := range rs.ScopeSpans {
			for _, sp := range ss.Spans {
				s.spans[sp.Name] = hex.EncodeToString(sp.TraceId)
			}
		}
	}
	s.mu.Unlock()
	w.Header().Set("Content-Type", "application/x-protobuf")
	_, _ = w.Write(nil)
}

func (s *otlpSink) trace(name string) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.spans[name]
}

// TestTraceparentReachesThePluginAndTheCollector: a real host configured
// by the standard OTEL_* variables continues the trace of an incoming
// traceparent header: the plugin's call context has that trace id, and
// the request and execute_tool spans reach the OTLP collector with it.
func TestTraceparentReachesThePluginAndTheCollector(t *testing.T) {
	sink := &otlpSink{spans: map[string]string{}}
	collector := httptest.NewServer(sink)
	defer collector.Close()
	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", collector.URL)
	t.Setenv("OTEL_BSP_SCHEDULE_DELAY", "100")
	dir := t.TempDir()
	testkit.InstallPlugin(t, dir, "faulty", "./testkit/plugins/faulty")
	hp := startHostProc(t, dir)

	const traceID = "4bf92f3577b34da6a3ce929d0e0e4736"
	callTrace(t, hp.url, "00-"+traceID+"-00f067aa0ba902b7-01", traceID)
	testkit.Eventually(t, 10*time.Second, "the spans reach the collector", func() bool {
		return sink.trace("execute_tool trace") == traceID && sink.trace("POST /opentool/call") == traceID
	})
}

// TestTraceparentReachesThePluginWithTracingOff: with no OTEL_* exporter
// (no spans are made on the call path), an incoming traceparent still
// reaches the plugin, over the data channel and over gRPC.
func TestTraceparentReachesThePluginWithTracingOff(t *testing.T) {
	for _, transport := range []string{"auto", "grpc"} {
		t.Run(transport, func(t *testing.T) {
			t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", "")
			t.Setenv("OTEL_TRACES_EXPORTER", "")
			t.Setenv("OPENTOOL_PLUGIN_TRANSPORT", transport)
			dir := t.TempDir()
			testkit.InstallPlugin(t, dir, "faulty", "./testkit/plugins/faulty")
			hp := startHostProc(t, dir)
			const traceID = "0af7651916cd43dd8448eb211c80319c"
			callTrace(t, hp.url, "00-"+traceID+"-b7ad6b7169203331-01", traceID)
		})
	}
}

// callTrace calls the faulty plugin's "trace" function through the host
// at url with the traceparent header and fails t unless the plugin saw
// trace id want.
func callTrace(t *testing.T, url, traceparent, want string) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, url+"/opentool/call", strings.NewReader(`{"jsonrpc":"2.0","method":"trace","id":"t1"}`))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("traceparent", traceparent)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	var body struct {
		Result struct {
			TraceID string `json:"trace_id"`
		}
	}
	err = json.NewDecoder(resp.Body).Decode(&body)
	resp.Body.Close()
	if err != nil || body.Result.TraceID != want {
		t.Fatalf("the plugin saw trace %q (%v), want %s", body.Result.TraceID, err, want)
	}
}
