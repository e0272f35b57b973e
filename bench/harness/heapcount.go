package harness

import (
	"context"
	"fmt"
	"net/http"
	"time"

	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// HeapCount is what a Go process has allocated since it started, as its
// /metrics says (the Go collector's go_memstats_mallocs_total, objects,
// and go_memstats_alloc_bytes_total, bytes).
type HeapCount struct {
	Mallocs, Bytes float64
}

// Sub returns c less o, member by member.
func (c HeapCount) Sub(o HeapCount) HeapCount {
	return HeapCount{Mallocs: c.Mallocs - o.Mallocs, Bytes: c.Bytes - o.Bytes}
}

// ScrapeHeap reads the HeapCount of the host at url (its /metrics, in the
// Prometheus text format) with c, within 5 s. The scrape itself allocates
// in the host: HeapMeter takes that off. Errors: the request's, a status
// other than 200, a body the Prometheus text parser refuses, either
// counter missing.
func ScrapeHeap(c *http.Client, url string) (HeapCount, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url+"/metrics", nil)
	if err != nil {
		return HeapCount{}, err
	}
	resp, err := c.Do(req)
	if err != nil {
		return HeapCount{}, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return HeapCount{}, fmt.Errorf("GET %s/metrics: %s", url, resp.Status)
	}
	parser := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := parser.TextToMetricFamilies(resp.Body)
	if err != nil {
		return HeapCount{}, fmt.Errorf("GET %s/metrics: %w", url, err)
	}
	var h HeapCount
	for name, into := range map[string]*float64{"go_memstats_mallocs_total": &h.Mallocs, "go_memstats_alloc_bytes_total": &h.Bytes} {
		f := fams[name]
		if f == nil || len(f.Metric) != 1 || f.Metric[0].Counter == nil {
			return HeapCount{}, fmt.Errorf("GET %s/metrics: no counter %s", url, name)
		}
		*into = f.Metric[0].Counter.GetValue()
	}
	return h, nil
}

// HeapMeter counts a host's allocations over a stretch of calls from its
// /metrics (ScrapeHeap), less what its own scrapes cost the host.
type HeapMeter struct {
	c         *http.Client
	url       string
	start     HeapCount
	perScrape HeapCount
}

// StartHeapMeter scrapes the host at url twice, one after the other:
// the second is the start, the difference what one scrape allocates.
// Errors: ScrapeHeap's.
func StartHeapMeter(c *http.Client, url string) (*HeapMeter, error) {
	a, err := ScrapeHeap(c, url)
	if err != nil {
		return nil, err
	}
	b, err := ScrapeHeap(c, url)
	if err != nil {
		return nil, err
	}
	return &HeapMeter{c: c, url: url, start: b, perScrape: b.Sub(a)}, nil
}

// PerCall returns what the host allocated per call over n calls made
// since the start: the scrape's count less the start and one scrape's
// cost, divided by n. Errors: ScrapeHeap's.
func (m *HeapMeter) PerCall(n int) (HeapCount, error) {
	end, err := ScrapeHeap(m.c, m.url)
	if err != nil {
		return HeapCount{}, err
	}
	d := end.Sub(m.start).Sub(m.perScrape)
	return HeapCount{Mallocs: d.Mallocs / float64(n), Bytes: d.Bytes / float64(n)}, nil
}
