package harness

import (
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// TestHeapMeter: over a real /metrics with the Go collector (the host's
// registry has it, frontend/metrics), the meter counts what a handler
// between its start and its end allocated, less the scrapes' own
// allocations: a million bytes asked for per call give about a million,
// and nothing asked for gives about nothing. (The Go collector's counts
// lag by what each P's caches hold, some thousand objects and a few
// hundred kB: spread over the 1000 calls of nothing, as over a bench
// run's thousands, a few objects per call.)
func TestHeapMeter(t *testing.T) {
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector())
	mux := http.NewServeMux()
	mux.Handle("/metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
	var sink [][]byte
	mux.HandleFunc("/alloc", func(http.ResponseWriter, *http.Request) {
		sink = sink[:0]
		for range 1000 {
			sink = append(sink, make([]byte, 1000))
		}
	})
	srv := httptest.NewServer(mux)
	defer srv.Close()
	c := srv.Client()
	for _, c2 := range []struct {
		alloc            bool
		minObj, maxObj   float64 // objects per call
		minByte, maxByte float64 // bytes per call
	}{{false, -20, 20, -20e3, 20e3}, {true, 1000, 1200, 0.95e6, 1.1e6}} {
		m, err := StartHeapMeter(c, srv.URL)
		if err != nil {
			t.Fatal(err)
		}
		calls := 1000 // none: a count's lag spread over a bench run's many calls
		if c2.alloc {
			calls = 50
		}
		for range calls {
			if !c2.alloc {
				break
			}
			resp, err := c.Get(srv.URL + "/alloc")
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
		}
		got, err := m.PerCall(calls)
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("alloc %v: %.0f objects, %.0f bytes per call; one scrape %.0f objects", c2.alloc, got.Mallocs, got.Bytes, m.perScrape.Mallocs)
		if got.Mallocs < c2.minObj || got.Mallocs > c2.maxObj || got.Bytes < c2.minByte || got.Bytes > c2.maxByte {
			t.Errorf("alloc %v: %.0f objects and %.0f bytes per call counted, want %.0f to %.0f and %.0f to %.0f", c2.alloc, got.Mallocs, got.Bytes, c2.minObj, c2.maxObj, c2.minByte, c2.maxByte)
		}
	}
	if _, err := ScrapeHeap(c, srv.URL+"/nothing"); err == nil {
		t.Error("ScrapeHeap of a URL without the metrics: no error")
	}
	_ = sink
}
