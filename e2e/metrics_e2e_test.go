package e2e_test

import (
	"bufio"
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/opentool-host/opentool-host/testkit"
)

// scrape returns the families of GET url/metrics, parsed with the
// Prometheus text parser.
func scrape(t *testing.T, url string) map[string]*dto.MetricFamily {
	t.Helper()
	resp, err := http.Get(url + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	parser := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := parser.TextToMetricFamilies(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return fams
}

// value returns the value of the series of family name whose labels
// include want (counter, gauge, or a histogram's count); -1 when none.
func value(fams map[string]*dto.MetricFamily, name string, want map[string]string) float64 {
	f := fams[name]
	if f == nil {
		return -1
	}
next:
	for _, m := range f.Metric {
		got := map[string]string{}
		for _, l := range m.Label {
			got[l.GetName()] = l.GetValue()
		}
		for k, v := range want {
			if got[k] != v {
				continue next
			}
		}
		switch {
		case m.Counter != nil:
			return m.Counter.GetValue()
		case m.Gauge != nil:
			return m.Gauge.GetValue()
		case m.Histogram != nil:
			return float64(m.Histogram.GetSampleCount())
		}
	}
	return -1
}

// TestMetricsAndAuditLog: a real host's /metrics counts calls by outcome,
// times them, shows plugin state and a restart, never makes a series of a
// caller's unknown function name; the audit log has one line per call
// and no argument values.
func TestMetricsAndAuditLog(t *testing.T) {
	dir := t.TempDir()
	testkit.InstallPlugin(t, dir, "calculator", "./plugins/calculator")
	auditPath := filepath.Join(t.TempDir(), "audit.log")
	hp := startHostProc(t, dir, "--audit-log", auditPath)

	calls := []string{
		`{"jsonrpc":"2.0","method":"add","params":{"a":1,"b":2},"id":1}`,
		`{"jsonrpc":"2.0","method":"add","params":{"a":40,"b":2},"id":2}`,
		`{"jsonrpc":"2.0","method":"divide","params":{"a":1,"b":0},"id":3}`,
		`{"jsonrpc":"2.0","method":"add","params":{"a":"secret-value"},"id":4}`,
		`{"jsonrpc":"2.0","method":"random-name-from-an-attacker","id":5}`,
	}
	for _, body := range calls {
		rpc(t, hp.url, body)
	}
	fams := scrape(t, hp.url)
	for _, c := range []struct {
		labels map[string]string
		want   float64
	}{
		{map[string]string{"function": "add", "plugin": "calculator", "outcome": "ok", "front_end": "opentool"}, 2},
		{map[string]string{"function": "divide", "plugin": "calculator", "outcome": "tool_error"}, 1},
		{map[string]string{"function": "add", "plugin": "calculator", "outcome": "invalid_params"}, 1},
		{map[string]string{"function": "", "plugin": "", "outcome": "not_found"}, 1},
	} {
		if got := value(fams, "opentool_calls_total", c.labels); got != c.want {
			t.Errorf("opentool_calls_total%v = %v, want %v", c.labels, got, c.want)
		}
	}
	if got := value(fams, "opentool_call_duration_seconds", map[string]string{"function": "add", "plugin": "calculator"}); got != 3 {
		t.Errorf("add's duration histogram counts %v calls, want 3", got)
	}
	if value(fams, "opentool_plugin_state", map[string]string{"plugin": "calculator", "state": "ready"}) != 1 ||
		value(fams, "opentool_plugin_resident_memory_bytes", map[string]string{"plugin": "calculator"}) <= 0 {
		t.Errorf("plugin gauges: state %v, rss %v", value(fams, "opentool_plugin_state", map[string]string{"plugin": "calculator", "state": "ready"}),
			value(fams, "opentool_plugin_resident_memory_bytes", map[string]string{"plugin": "calculator"}))
	}
	for _, m := range fams["opentool_calls_total"].Metric {
		for _, l := range m.Label {
			if strings.Contains(l.GetValue(), "attacker") {
				t.Errorf("a caller's unknown function name became a label: %v", m)
			}
		}
	}

	// A restart shows up.
	pid := pluginPIDs(t, hp.url)["calculator"]
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	testkit.Eventually(t, 10*time.Second, "the restart counted", func() bool {
		f := scrape(t, hp.url)
		return value(f, "opentool_plugin_restarts_total", map[string]string{"plugin": "calculator"}) == 1 &&
			value(f, "opentool_plugin_events_total", map[string]string{"plugin": "calculator", "type": "restarting"}) == 1
	})

	// The audit log: one line per call, sizes, no values.
	var lines []map[string]any
	testkit.Eventually(t, 5*time.Second, "one audit line per call", func() bool {
		f, err := os.Open(auditPath)
		if err != nil {
			return false
		}
		defer f.Close()
		lines = nil
		sc := bufio.NewScanner(f)
		for sc.Scan() {
			if strings.Contains(sc.Text(), "secret-value") {
				t.Fatalf("an argument value in the audit log: %s", sc.Text())
			}
			var m map[string]any
			if err := json.Unmarshal(sc.Bytes(), &m); err != nil {
				t.Fatalf("audit line %q: %v", sc.Text(), err)
			}
			lines = append(lines, m)
		}
		return len(lines) == len(calls)
	})
	if l := lines[0]; l["function"] != "add" || l["plugin"] != "calculator" || l["outcome"] != "ok" || l["front_end"] != "opentool" || l["arg_bytes"].(float64) == 0 {
		t.Errorf("audit line: %v", l)
	}
	if l := lines[2]; l["outcome"] != "tool_error" {
		t.Errorf("audit line of divide by zero: %v", l)
	}
}
