// Package metrics exposes the host's Prometheus metrics (GET /metrics):
// calls counted and timed from core.Config.OnCall, plugin state read from
// host.Host.Plugins at scrape time (no background polling), and lifecycle
// events counted from host.Host.Subscribe.
//
// Label values never come from callers: a call to a function no plugin
// serves is counted with function="" (an attacker sending random names
// cannot create series), and plugins and functions are the host's own.
package metrics

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/opentool-host/opentool-host/frontend/route"
	"github.com/opentool-host/opentool-host/host"
	"github.com/opentool-host/opentool-host/host/access"
	"github.com/opentool-host/opentool-host/host/core"
)

// DurationBuckets are the buckets of opentool_call_duration_seconds, in
// seconds.
var DurationBuckets = []float64{0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60}

// Metrics is the host's metrics registry.
type Metrics struct {
	reg      *prometheus.Registry
	calls    *prometheus.CounterVec
	duration *prometheus.HistogramVec
	argBytes *prometheus.HistogramVec
	resBytes *prometheus.HistogramVec
	events   *prometheus.CounterVec
	// series holds each label tuple's series of the call metrics
	// (seriesKey to *series), looked up once per call instead of four
	// WithLabelValues: as bounded as the vectors themselves, whose label
	// values are the host's own (the package comment).
	series sync.Map
	stop   func()
	done   chan struct{}
}

// New returns the metrics of h: the call metrics (fed by Observe), the
// plugin collector, the Go and process collectors of the host, and
// opentool_plugin_events_total fed from h's lifecycle events until Close.
func New(h *host.Host) *Metrics {
	m := &Metrics{
		reg: prometheus.NewRegistry(),
		calls: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "opentool_calls_total",
			Help: "Calls by front end, function, plugin and outcome (ok or the error kind)."}, []string{"front_end", "function", "plugin", "outcome"}),
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "opentool_call_duration_seconds",
			Help: "Call duration until the last result or the error, seconds.", Buckets: DurationBuckets}, []string{"function", "plugin"}),
		argBytes: prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "opentool_call_argument_bytes",
			Help: "Size of a call's arguments, bytes.", Buckets: prometheus.ExponentialBuckets(16, 4, 10)}, []string{"plugin"}),
		resBytes: prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "opentool_call_result_bytes",
			Help: "Total size of a call's results, bytes.", Buckets: prometheus.ExponentialBuckets(16, 4, 10)}, []string{"plugin"}),
		events: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "opentool_plugin_events_total",
			Help: "Plugin lifecycle events by type (ready, replaced, restarting, failed, held, rejected, changed, removed, collision)."}, []string{"plugin", "type"}),
		done: make(chan struct{}),
	}
	m.reg.MustRegister(m.calls, m.duration, m.argBytes, m.resBytes, m.events, &plugins{h: h},
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	ch, stop := h.Subscribe(256)
	m.stop = stop
	go func() {
		defer close(m.done)
		for ev := range ch {
			m.events.WithLabelValues(ev.Plugin, ev.Type).Inc()
		}
	}()
	return m
}

// Registry returns the registry (a prometheus.Gatherer for the status
// page).
func (m *Metrics) Registry() *prometheus.Registry { return m.reg }

// Path is where the metrics are served.
const Path = "/metrics"

// Routes declares GET and every other method of Path: the registry in
// the Prometheus text format, for a request without an API key (the
// metrics-only listener, --metrics-addr) or whose key may see every
// function; a restricted key gets 403 (labels name every function and
// plugin).
func (m *Metrics) Routes() []route.Route {
	h := promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{Registry: m.reg})
	return []route.Route{{Pattern: Path, Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if access.GrantFrom(r.Context()).Restricted() {
			http.Error(w, "metrics need an API key that may see every function", http.StatusForbidden)
			return
		}
		h.ServeHTTP(w, r)
	})}}
}

// Close stops following the host's events.
func (m *Metrics) Close() {
	m.stop()
	<-m.done
}

// Observe counts one finished call; plug it into core.Config.OnCall. A
// call to an unserved function is counted with function="".
func (m *Metrics) Observe(_ context.Context, r core.CallRecord) {
	fn := r.Function
	if r.Plugin == "" {
		fn = ""
	}
	outcome := "ok"
	if r.Kind != "" {
		outcome = string(r.Kind)
	}
	ss := m.seriesOf(seriesKey{frontEnd: r.Caller.FrontEnd, fn: fn, plugin: r.Plugin, outcome: outcome})
	ss.calls.Inc()
	ss.duration.Observe(r.Duration.Seconds())
	ss.argBytes.Observe(float64(r.ArgBytes))
	ss.resBytes.Observe(float64(r.ResultBytes))
}

// seriesKey is the labels of one call's series: opentool_calls_total's
// (front_end, function, plugin, outcome), of which the others take some.
type seriesKey struct{ frontEnd, fn, plugin, outcome string }

// series is the call metrics' series of one seriesKey.
type series struct {
	calls                        prometheus.Counter
	duration, argBytes, resBytes prometheus.Observer
}

// seriesOf returns k's series, made from the vectors the first time.
func (m *Metrics) seriesOf(k seriesKey) *series {
	if v, ok := m.series.Load(k); ok {
		return v.(*series)
	}
	v, _ := m.series.LoadOrStore(k, &series{
		calls:    m.calls.WithLabelValues(k.frontEnd, k.fn, k.plugin, k.outcome),
		duration: m.duration.WithLabelValues(k.fn, k.plugin),
		argBytes: m.argBytes.WithLabelValues(k.plugin),
		resBytes: m.resBytes.WithLabelValues(k.plugin),
	})
	return v.(*series)
}

// plugins collects each plugin's state at scrape time from Host.Plugins
// and its process's memory and CPU from /proc.
type plugins struct{ h *host.Host }

var (
	inFlightDesc = prometheus.NewDesc("opentool_plugin_in_flight_calls", "Calls the plugin's process runs or queues.", []string{"plugin"}, nil)
	queuedDesc   = prometheus.NewDesc("opentool_plugin_queued_calls", "Calls waiting for one of the plugin's concurrency slots.", []string{"plugin"}, nil)
	stateDesc    = prometheus.NewDesc("opentool_plugin_state", "1 for the plugin's current state.", []string{"plugin", "state"}, nil)
	restartsDesc = prometheus.NewDesc("opentool_plugin_restarts_total", "Restarts after crashes since the plugin was found.", []string{"plugin"}, nil)
	startDesc    = prometheus.NewDesc("opentool_plugin_start_time_seconds", "When the plugin's current process started, Unix seconds.", []string{"plugin"}, nil)
	rssDesc      = prometheus.NewDesc("opentool_plugin_resident_memory_bytes", "Resident memory of the plugin's process, bytes.", []string{"plugin"}, nil)
	cpuDesc      = prometheus.NewDesc("opentool_plugin_cpu_seconds_total", "CPU time of the plugin's process (user + system), seconds.", []string{"plugin"}, nil)
)

// states are the values of opentool_plugin_state's state label.
var states = []core.State{core.StateStarting, core.StateReady, core.StateDegraded, core.StateRestarting, core.StateFailed, core.StateDraining, core.StateStopped}

// Describe implements prometheus.Collector.
func (p *plugins) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{inFlightDesc, queuedDesc, stateDesc, restartsDesc, startDesc, rssDesc, cpuDesc} {
		ch <- d
	}
}

// Collect implements prometheus.Collector.
func (p *plugins) Collect(ch chan<- prometheus.Metric) {
	now := time.Now()
	for _, s := range p.h.Plugins() {
		ch <- prometheus.MustNewConstMetric(inFlightDesc, prometheus.GaugeValue, float64(s.InFlight), s.Name)
		ch <- prometheus.MustNewConstMetric(queuedDesc, prometheus.GaugeValue, float64(s.Queued), s.Name)
		ch <- prometheus.MustNewConstMetric(restartsDesc, prometheus.CounterValue, float64(s.Restarts), s.Name)
		for _, st := range states {
			v := 0.0
			if s.State == st {
				v = 1
			}
			ch <- prometheus.MustNewConstMetric(stateDesc, prometheus.GaugeValue, v, s.Name, string(st))
		}
		if s.PID == 0 {
			continue
		}
		ch <- prometheus.MustNewConstMetric(startDesc, prometheus.GaugeValue, float64(now.Add(-time.Duration(s.UptimeMS)*time.Millisecond).Unix()), s.Name)
		if rss, cpu, err := procStats(s.PID); err == nil {
			ch <- prometheus.MustNewConstMetric(rssDesc, prometheus.GaugeValue, rss, s.Name)
			ch <- prometheus.MustNewConstMetric(cpuDesc, prometheus.CounterValue, cpu, s.Name)
		}
	}
}

// clockTicks is the kernel's USER_HZ (100 on Linux).
const clockTicks = 100

var pageSize = float64(os.Getpagesize())

// procStats reads a process's resident memory (bytes) and CPU time
// (seconds) from /proc/PID/stat. Errors: the process is gone or /proc is
// not Linux's.
func procStats(pid int) (rss, cpu float64, err error) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0, 0, err
	}
	// The command name (field 2) may hold spaces: fields count from
	// after its closing parenthesis.
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return 0, 0, fmt.Errorf("/proc/%d/stat: no command name", pid)
	}
	f := strings.Fields(string(b[i+1:]))
	if len(f) < 22 {
		return 0, 0, fmt.Errorf("/proc/%d/stat: %d fields", pid, len(f))
	}
	utime, _ := strconv.ParseFloat(f[11], 64) // field 14
	stime, _ := strconv.ParseFloat(f[12], 64) // field 15
	pages, _ := strconv.ParseFloat(f[21], 64) // field 24, rss
	return pages * pageSize, (utime + stime) / clockTicks, nil
}

var _ prometheus.Collector = (*plugins)(nil)
