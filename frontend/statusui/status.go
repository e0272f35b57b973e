package statusui

import (
	"encoding/json"
	"math"
	"net/http"
	"sort"
	"time"

	dto "github.com/prometheus/client_model/go"

	"github.com/opentool-host/opentool-host/declared/oauthlogin"
	"github.com/opentool-host/opentool-host/frontend/httpguard"
	"github.com/opentool-host/opentool-host/frontend/keyview"
	"github.com/opentool-host/opentool-host/host/supervise"
)

// The metric names /status.json reads from Config.Gatherer.
const (
	// CallsMetric counts finished calls, labelled front_end, function,
	// plugin and outcome ("ok" or an error kind).
	CallsMetric = "opentool_calls_total"
	// DurationMetric is the histogram of call durations in seconds,
	// labelled function and plugin.
	DurationMetric = "opentool_call_duration_seconds"
)

// Status is the body of GET /status.json.
type Status struct {
	// Time is when the numbers were read.
	Time time.Time `json:"time"`
	// Version is the host's version.
	Version string `json:"version"`
	// Metrics says whether the per-function numbers come from the host's
	// metrics (false: no Gatherer, or gathering failed; MetricsError then
	// says why).
	Metrics bool `json:"metrics"`
	// MetricsError is why the metrics could not be read, if so.
	MetricsError string `json:"metrics_error,omitempty"`
	// Plugins is every plugin's status (as on /health, without the
	// stderr lines), sorted by name.
	Plugins []supervise.PluginStatus `json:"plugins"`
	// Functions is every served function, in the order of
	// /opentool/load.
	Functions []FunctionStats `json:"functions"`
	// Logins are the logins of the servers declared by URL with the
	// authorization code grant that the caller may use: for a per-user
	// server the caller's own, for a shared one the one every caller
	// uses (Config.Logins; absent without a login step).
	Logins []Login `json:"logins,omitempty"`
}

// Login is one server's login as /status.json shows it to its caller:
// whether a token is held, its expiry and whether it refreshes (never
// the token), and, while none is held, how to log in.
type Login struct {
	oauthlogin.Status
	// Link is the authorization URL of the caller's login begun and
	// waiting for its person (a call's needs_login, or auth login), ""
	// when none waits (the status page begins none) or the caller may
	// not make that login (a shared one needs an unrestricted key).
	Link string `json:"link,omitempty"`
	// Command is the command that begins the login, while no token is
	// held: "opentool-host auth login NAME".
	Command string `json:"command,omitempty"`
}

// FunctionStats is one served function and its numbers since the host
// started. Rates are the page's to compute, from two readings.
type FunctionStats struct {
	// Name is the name the function is served as.
	Name string `json:"name"`
	// Plugin is the serving plugin.
	Plugin string `json:"plugin"`
	// Stream says whether it is a streaming function.
	Stream bool `json:"stream,omitempty"`
	// Calls counts finished calls, every front end and outcome.
	Calls uint64 `json:"calls"`
	// Errors counts the calls whose outcome is not "ok".
	Errors uint64 `json:"errors"`
	// Outcomes counts the calls by outcome ("ok", "timeout", ...).
	Outcomes map[string]uint64 `json:"outcomes,omitempty"`
	// P50MS and P99MS are the median and 99th percentile of the call
	// durations in milliseconds, estimated from the histogram buckets
	// (linear within a bucket); nil without calls.
	P50MS *float64 `json:"p50_ms,omitempty"`
	P99MS *float64 `json:"p99_ms,omitempty"`
	// P50Over and P99Over say that the quantile lies beyond the largest
	// finite bucket, whose bound P50MS or P99MS then is ("at least").
	P50Over bool `json:"p50_over,omitempty"`
	P99Over bool `json:"p99_over,omitempty"`
}

func (s *Server) handleStatus(w http.ResponseWriter, r *http.Request) {
	st := s.status(r)
	b, err := json.Marshal(st)
	if err != nil {
		s.cfg.Logger.Error("encode status", "error", err)
		http.Error(w, "encode status", http.StatusInternalServerError)
		return
	}
	h := w.Header()
	h.Set("Cache-Control", "no-store")
	h.Set("X-Content-Type-Options", "nosniff")
	httpguard.Write(w, http.StatusOK, httpguard.JSON, b, s.cfg.WriteTimeout)
}

// status reads the host and its metrics for r's caller.
func (s *Server) status(r *http.Request) *Status {
	st := &Status{Time: time.Now().UTC(), Version: s.cfg.Version, Plugins: []supervise.PluginStatus{}, Functions: []FunctionStats{}}
	var stats map[fnKey]*FunctionStats
	if s.cfg.Gatherer != nil {
		mfs, err := s.cfg.Gatherer.Gather()
		if err != nil && len(mfs) == 0 {
			st.MetricsError = err.Error()
		} else {
			// Gather may return what it could read with an error for the
			// rest; what it read is still right.
			st.Metrics = true
			stats = readStats(mfs)
		}
	}
	view := keyview.Of(r.Context(), s.src)
	for _, f := range s.src.Functions() {
		if !view.Calls(f.Function.Name) {
			continue
		}
		fs := FunctionStats{Name: f.Function.Name, Plugin: f.Plugin, Stream: f.Function.IsStream()}
		if m := stats[fnKey{f.Plugin, f.Function.Name}]; m != nil {
			fs.Calls, fs.Errors, fs.Outcomes = m.Calls, m.Errors, m.Outcomes
			fs.P50MS, fs.P50Over, fs.P99MS, fs.P99Over = m.P50MS, m.P50Over, m.P99MS, m.P99Over
		}
		st.Functions = append(st.Functions, fs)
	}
	for _, p := range view.Plugins() {
		p.Stderr = nil // the page shows no stderr to anyone
		st.Plugins = append(st.Plugins, p)
	}
	if s.cfg.Logins != nil {
		st.Logins = s.cfg.Logins(r)
	}
	return st
}

// fnKey names one function of one plugin.
type fnKey struct{ plugin, function string }

// readStats sums CallsMetric over front ends and outcomes, and estimates
// the quantiles of DurationMetric, per plugin and function.
func readStats(mfs []*dto.MetricFamily) map[fnKey]*FunctionStats {
	out := map[fnKey]*FunctionStats{}
	get := func(m *dto.Metric) *FunctionStats {
		k := fnKey{label(m, "plugin"), label(m, "function")}
		fs := out[k]
		if fs == nil {
			fs = &FunctionStats{Name: k.function, Plugin: k.plugin}
			out[k] = fs
		}
		return fs
	}
	for _, mf := range mfs {
		switch mf.GetName() {
		case CallsMetric:
			for _, m := range mf.GetMetric() {
				var v float64
				switch {
				case m.GetCounter() != nil:
					v = m.GetCounter().GetValue()
				case m.GetUntyped() != nil:
					v = m.GetUntyped().GetValue()
				default:
					continue
				}
				if v <= 0 || math.IsNaN(v) || math.IsInf(v, 0) {
					continue
				}
				n := uint64(math.Round(v))
				fs := get(m)
				outcome := label(m, "outcome")
				if fs.Outcomes == nil {
					fs.Outcomes = map[string]uint64{}
				}
				fs.Outcomes[outcome] += n
				fs.Calls += n
				if outcome != "ok" {
					fs.Errors += n
				}
			}
		case DurationMetric:
			// One series per plugin and function; should there be more
			// (another label added later), their buckets are merged.
			merged := map[fnKey]*histogram{}
			for _, m := range mf.GetMetric() {
				hg := m.GetHistogram()
				if hg == nil {
					continue
				}
				k := fnKey{label(m, "plugin"), label(m, "function")}
				if merged[k] == nil {
					merged[k] = &histogram{}
				}
				merged[k].add(hg)
			}
			for k, hg := range merged {
				fs := get(&dto.Metric{Label: []*dto.LabelPair{{Name: ptr("plugin"), Value: ptr(k.plugin)}, {Name: ptr("function"), Value: ptr(k.function)}}})
				if v, over, ok := hg.quantile(0.5); ok {
					fs.P50MS, fs.P50Over = ptr(round3(v*1000)), over
				}
				if v, over, ok := hg.quantile(0.99); ok {
					fs.P99MS, fs.P99Over = ptr(round3(v*1000)), over
				}
			}
		}
	}
	return out
}

// histogram is a cumulative histogram: upper bounds (ascending, finite)
// with the count of observations at or below each, and the total count.
type histogram struct {
	bounds []float64
	counts []float64
	total  float64
}

// add merges h's buckets (cumulative, as client_golang writes them).
func (hg *histogram) add(h *dto.Histogram) {
	hg.total += float64(h.GetSampleCount())
	for _, b := range h.GetBucket() {
		ub := b.GetUpperBound()
		if math.IsInf(ub, +1) || math.IsNaN(ub) {
			continue // the +Inf bucket is the total
		}
		i := sort.SearchFloat64s(hg.bounds, ub)
		if i < len(hg.bounds) && hg.bounds[i] == ub {
			hg.counts[i] += float64(b.GetCumulativeCount())
			continue
		}
		hg.bounds = append(hg.bounds, 0)
		hg.counts = append(hg.counts, 0)
		copy(hg.bounds[i+1:], hg.bounds[i:])
		copy(hg.counts[i+1:], hg.counts[i:])
		hg.bounds[i], hg.counts[i] = ub, float64(b.GetCumulativeCount())
	}
}

// quantile estimates the q-quantile as Prometheus's histogram_quantile
// does: find the bucket where the rank q*total falls and interpolate
// linearly within it (the first bucket starts at 0, or at its bound when
// that is negative). When the rank is beyond the largest finite bound,
// it returns that bound and over. ok is false without observations.
func (hg *histogram) quantile(q float64) (v float64, over, ok bool) {
	if hg.total <= 0 {
		return 0, false, false
	}
	rank := q * hg.total
	prevBound, prevCount := 0.0, 0.0
	for i, ub := range hg.bounds {
		if i == 0 && ub < 0 {
			prevBound = ub
		}
		c := hg.counts[i]
		if c >= rank && c > prevCount {
			return prevBound + (ub-prevBound)*(rank-prevCount)/(c-prevCount), false, true
		}
		if c >= rank { // an empty bucket that already holds the rank
			return ub, false, true
		}
		prevBound, prevCount = ub, c
	}
	if len(hg.bounds) == 0 {
		return 0, false, false
	}
	return hg.bounds[len(hg.bounds)-1], true, true
}

// label returns the value of m's label name ("" when absent).
func label(m *dto.Metric, name string) string {
	for _, l := range m.GetLabel() {
		if l.GetName() == name {
			return l.GetValue()
		}
	}
	return ""
}

func ptr[T any](v T) *T { return &v }

// round3 rounds to three decimals (microseconds for a value in ms).
func round3(v float64) float64 { return math.Round(v*1000) / 1000 }
