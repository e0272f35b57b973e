package statusui_test

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"

	"github.com/opentool-host/opentool-host/frontend/httpguard"
	"github.com/opentool-host/opentool-host/frontend/statusui"
	"github.com/opentool-host/opentool-host/host"
	"github.com/opentool-host/opentool-host/host/access"
	"github.com/opentool-host/opentool-host/host/core"
	"github.com/opentool-host/opentool-host/host/supervise"
	"github.com/opentool-host/opentool-host/protocol/opentool"
)

// fakeSource is a host with fixed plugins and functions whose events the
// test publishes, fanned out as host.Host does (never blocking).
type fakeSource struct {
	plugins []supervise.PluginStatus
	funcs   []host.FunctionInfo

	mu     sync.Mutex
	subs   map[chan core.Event]bool
	ended  chan struct{} // one value per ended subscription
	nsubs  int
	notify chan struct{} // one value per new subscription
}

func newFakeSource() *fakeSource {
	return &fakeSource{
		plugins: []supervise.PluginStatus{
			{Name: "calculator", State: core.StateReady, PID: 42, Restarts: 1, Functions: []string{"add", "divide"}, SHA256: strings.Repeat("ab", 32), UptimeMS: 1500, Stderr: []string{"secret-ish line"}},
			{Name: "faulty", State: core.StateFailed, LastError: "<img src=x onerror=alert(1)>", Functions: []string{"boom"}},
		},
		funcs: []host.FunctionInfo{
			{Plugin: "calculator", Function: &opentool.Function{Name: "add"}},
			{Plugin: "calculator", Function: &opentool.Function{Name: "divide"}},
			{Plugin: "faulty", Function: &opentool.Function{Name: "boom"}},
		},
		subs:   map[chan core.Event]bool{},
		ended:  make(chan struct{}, 16),
		notify: make(chan struct{}, 16),
	}
}

func (f *fakeSource) Plugins() []supervise.PluginStatus {
	return append([]supervise.PluginStatus(nil), f.plugins...)
}
func (f *fakeSource) Functions() []host.FunctionInfo { return f.funcs }
func (f *fakeSource) ToolSearchThreshold() int       { return 0 }

func (f *fakeSource) Subscribe(buf int) (<-chan core.Event, func()) {
	ch := make(chan core.Event, buf)
	f.mu.Lock()
	f.subs[ch] = true
	f.nsubs++
	f.mu.Unlock()
	f.notify <- struct{}{}
	var once sync.Once
	return ch, func() {
		once.Do(func() {
			f.mu.Lock()
			delete(f.subs, ch)
			f.mu.Unlock()
			close(ch)
			f.ended <- struct{}{}
		})
	}
}

// publish sends ev to every subscriber with room; it reports how many
// took it.
func (f *fakeSource) publish(ev core.Event) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	n := 0
	for ch := range f.subs {
		select {
		case ch <- ev:
			n++
		default:
		}
	}
	return n
}

func waitFor(t *testing.T, ch <-chan struct{}, what string) {
	t.Helper()
	select {
	case <-ch:
	case <-time.After(5 * time.Second):
		t.Fatalf("timed out waiting for %s", what)
	}
}

// sseReader reads server-sent event blocks.
type sseReader struct {
	t  *testing.T
	br *bufio.Reader
}

// next returns the next block's lines (comments included), or fails the
// test at EOF or after 5 s.
func (r *sseReader) next() []string {
	r.t.Helper()
	type res struct {
		lines []string
		err   error
	}
	done := make(chan res, 1)
	go func() {
		var lines []string
		for {
			l, err := r.br.ReadString('\n')
			if err != nil {
				done <- res{lines, err}
				return
			}
			l = strings.TrimRight(l, "\n")
			if l == "" {
				done <- res{lines, nil}
				return
			}
			lines = append(lines, l)
		}
	}()
	select {
	case x := <-done:
		if x.err != nil {
			r.t.Fatalf("stream ended: %v (after %q)", x.err, x.lines)
		}
		return x.lines
	case <-time.After(5 * time.Second):
		r.t.Fatal("no event block within 5 s")
		return nil
	}
}

func openEvents(t *testing.T, url string, header http.Header) (*http.Response, *sseReader) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, url+statusui.EventsPath, nil)
	for k, v := range header {
		req.Header[k] = v
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { resp.Body.Close() })
	return resp, &sseReader{t: t, br: bufio.NewReader(resp.Body)}
}

// startUI serves the status page of src until the test ends (its
// streams are ended first, so the server's Close does not wait on them).
func startUI(t *testing.T, src statusui.Source, cfg statusui.Config) *httptest.Server {
	t.Helper()
	ui := statusui.New(src, cfg)
	srv := httptest.NewServer(ui.Handler())
	t.Cleanup(srv.Close)
	t.Cleanup(ui.Shutdown)
	return srv
}

func TestEventsStream(t *testing.T) {
	src := newFakeSource()
	srv := startUI(t, src, statusui.Config{Heartbeat: 50 * time.Millisecond})

	resp, r := openEvents(t, srv.URL, nil)
	if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != "text/event-stream" {
		t.Fatalf("status %d, Content-Type %q", resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	waitFor(t, src.notify, "the subscription")
	first := r.next()
	if !strings.HasPrefix(first[0], ":") || !strings.Contains(strings.Join(first, "\n"), "retry: 2000") {
		t.Fatalf("first block %q: want a comment and retry", first)
	}

	ev := core.Event{Time: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC), Type: core.EventRestarting, Plugin: "calculator",
		Message: "plugin crashed", Reason: "exit status 2\nline two\r\nevent: forged"}
	if n := src.publish(ev); n != 1 {
		t.Fatalf("%d subscribers took the event", n)
	}
	// Heartbeats may come first; skip comments.
	var block []string
	for block = r.next(); strings.HasPrefix(block[0], ":"); block = r.next() {
	}
	if len(block) != 2 || block[0] != "event:restarting" || !strings.HasPrefix(block[1], "data:") {
		t.Fatalf("event block %q", block)
	}
	var got core.Event
	if err := json.Unmarshal([]byte(strings.TrimPrefix(block[1], "data:")), &got); err != nil {
		t.Fatal(err)
	}
	if !got.Time.Equal(ev.Time) || got.Type != ev.Type || got.Plugin != ev.Plugin || got.Message != ev.Message || got.Reason != ev.Reason {
		t.Fatalf("got %+v, want %+v", got, ev)
	}

	// A heartbeat comes when nothing happens.
	for {
		b := r.next()
		if b[0] == ": ping" {
			break
		}
	}

	// The client going away ends the subscription.
	resp.Body.Close()
	waitFor(t, src.ended, "the subscription to end after the client left")
}

// TestEventsEndOnShutdown: Shutdown (http.Server.RegisterOnShutdown)
// ends open streams, and new ones end at once.
func TestEventsEndOnShutdown(t *testing.T) {
	src := newFakeSource()
	ui := statusui.New(src, statusui.Config{})
	hs := &http.Server{Handler: ui.Handler()}
	hs.RegisterOnShutdown(ui.Shutdown)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go hs.Serve(ln)
	url := "http://" + ln.Addr().String()
	_, r := openEvents(t, url, nil)
	waitFor(t, src.notify, "the subscription")
	r.next()

	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	start := time.Now()
	if err := hs.Shutdown(ctx); err != nil {
		t.Fatalf("shutdown: %v (the stream held it)", err)
	}
	if _, err := io.ReadAll(r.br); err != nil {
		t.Fatalf("stream did not end cleanly: %v", err)
	}
	waitFor(t, src.ended, "the subscription to end")
	t.Logf("shutdown took %v", time.Since(start))
}

// TestEventsSlowClientIsCutOff: a client that stops reading neither
// blocks the publisher (it loses events) nor keeps its stream: it is cut
// off after WriteTimeout.
func TestEventsSlowClientIsCutOff(t *testing.T) {
	src := newFakeSource()
	srv := startUI(t, src, statusui.Config{WriteTimeout: 300 * time.Millisecond, EventBuffer: 4})

	conn, err := net.Dial("tcp", srv.Listener.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	_ = conn.(*net.TCPConn).SetReadBuffer(4096)
	if _, err := io.WriteString(conn, "GET /events HTTP/1.1\r\nHost: x\r\n\r\n"); err != nil {
		t.Fatal(err)
	}
	waitFor(t, src.notify, "the subscription")
	// Never read: publish until the stream is cut off. Each publish
	// returns at once whatever the client does.
	big := strings.Repeat("x", 64<<10)
	deadline := time.After(10 * time.Second)
	lost := 0
	for i := 0; ; i++ {
		select {
		case <-src.ended:
			t.Logf("cut off after %d events (%d lost meanwhile)", i, lost)
			return
		case <-deadline:
			t.Fatal("a client that does not read kept its stream for 10 s")
		default:
		}
		t0 := time.Now()
		if src.publish(core.Event{Type: core.EventChanged, Plugin: "calculator", Reason: big}) == 0 {
			lost++
		}
		if d := time.Since(t0); d > time.Second { // a blocked publish waits for the slow client: 10 s
			t.Fatalf("publish waited %v for a slow client", d)
		}
		time.Sleep(5 * time.Millisecond) // pace the publisher, not a wait for a result
	}
}

// TestEventsOutliveReadTimeout: the server's ReadTimeout (run.go sets
// --read-timeout, 30 s) does not end a stream that lasts longer.
func TestEventsOutliveReadTimeout(t *testing.T) {
	src := newFakeSource()
	ui := statusui.New(src, statusui.Config{})
	srv := httptest.NewUnstartedServer(ui.Handler())
	srv.Config.ReadTimeout = 200 * time.Millisecond
	srv.Start()
	t.Cleanup(srv.Close)
	t.Cleanup(ui.Shutdown) // first: the streams end, then the server closes
	_, r := openEvents(t, srv.URL, nil)
	waitFor(t, src.notify, "the subscription")
	r.next()
	// Wait past the read deadline: the stream must still be subscribed.
	timer := time.NewTimer(600 * time.Millisecond)
	select {
	case <-src.ended:
		t.Fatal("the stream ended at the server's read timeout")
	case <-timer.C:
	}
	src.publish(core.Event{Type: core.EventReady, Plugin: "calculator"})
	if b := r.next(); b[0] != "event:ready" {
		t.Fatalf("got %q after the read timeout", b)
	}
}

// TestAuth: the page and its files are public; /events and /status.json
// need a key when Auth is set.
func TestAuth(t *testing.T) {
	src := newFakeSource()
	keys := []string{"k1"}
	srv := startUI(t, src, statusui.Config{Auth: func(h http.Handler) http.Handler { return httpguard.RequireAPIKey(keys, h) }})
	get := func(path, key string) *http.Response {
		req, _ := http.NewRequest(http.MethodGet, srv.URL+path, nil)
		if key != "" {
			req.Header.Set("Authorization", "Bearer "+key)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { resp.Body.Close() })
		return resp
	}
	for _, tc := range []struct {
		path, key string
		want      int
	}{
		{"/", "", 200}, {"/ui/app.js", "", 200}, {"/ui/style.css", "", 200},
		{"/status.json", "", 401}, {"/status.json", "nope", 401}, {"/status.json", "k1", 200},
		{"/events", "", 401}, {"/events", "k1", 200},
	} {
		if got := get(tc.path, tc.key).StatusCode; got != tc.want {
			t.Errorf("GET %s with key %q: %d, want %d", tc.path, tc.key, got, tc.want)
		}
	}
}

func TestPageFiles(t *testing.T) {
	srv := startUI(t, newFakeSource(), statusui.Config{})
	for _, tc := range []struct {
		path, ctype string
		status      int
		contains    string
	}{
		{"/", "text/html; charset=utf-8", 200, `<script src="/ui/app.js"`},
		{"/ui/app.js", "text/javascript; charset=utf-8", 200, "followEvents"},
		{"/ui/style.css", "text/css; charset=utf-8", 200, ".grid"},
		{"/ui/favicon.svg", "image/svg+xml", 200, "<svg"},
		{"/ui/index.html", "", 404, ""},
		{"/ui/nope.js", "", 404, ""},
		{"/ui/", "", 404, ""},
		{"/ui/../statusui.go", "", 404, ""},
		{"/other", "", 404, ""},
	} {
		resp, err := http.Get(srv.URL + tc.path)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != tc.status {
			t.Errorf("GET %s: %d, want %d", tc.path, resp.StatusCode, tc.status)
			continue
		}
		if tc.status != 200 {
			continue
		}
		if ct := resp.Header.Get("Content-Type"); ct != tc.ctype {
			t.Errorf("GET %s: Content-Type %q, want %q", tc.path, ct, tc.ctype)
		}
		if csp := resp.Header.Get("Content-Security-Policy"); !strings.Contains(csp, "default-src 'self'") {
			t.Errorf("GET %s: Content-Security-Policy %q", tc.path, csp)
		}
		if !strings.Contains(string(body), tc.contains) {
			t.Errorf("GET %s: body lacks %q", tc.path, tc.contains)
		}
	}
}

// TestPageUsesNoHTMLSinks: the page's script never parses data as HTML.
func TestPageUsesNoHTMLSinks(t *testing.T) {
	resp, err := http.Get(startUI(t, newFakeSource(), statusui.Config{}).URL + "/ui/app.js")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	js, _ := io.ReadAll(resp.Body)
	for _, sink := range []string{"innerHTML", "outerHTML", "insertAdjacentHTML", "document.write", "eval(", "new Function", "srcdoc"} {
		if strings.Contains(string(js), sink) {
			t.Errorf("app.js uses %s", sink)
		}
	}
}

// registry holds the host's metric names with known observations.
func registry(t *testing.T) *prometheus.Registry {
	t.Helper()
	reg := prometheus.NewRegistry()
	calls := prometheus.NewCounterVec(prometheus.CounterOpts{Name: statusui.CallsMetric, Help: "calls"}, []string{"front_end", "function", "plugin", "outcome"})
	dur := prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: statusui.DurationMetric, Help: "durations", Buckets: []float64{0.001, 0.01, 0.1, 1}}, []string{"function", "plugin"})
	reg.MustRegister(calls, dur)
	// add: 90 ok over two front ends, 10 timeouts; 100 durations: 50 in
	// (0, 1ms], 40 in (1ms, 10ms], 9 in (10ms, 100ms], 1 over 1 s.
	calls.WithLabelValues("opentool", "add", "calculator", "ok").Add(60)
	calls.WithLabelValues("mcp", "add", "calculator", "ok").Add(30)
	calls.WithLabelValues("opentool", "add", "calculator", "timeout").Add(10)
	for i := 0; i < 50; i++ {
		dur.WithLabelValues("add", "calculator").Observe(0.0005)
	}
	for i := 0; i < 40; i++ {
		dur.WithLabelValues("add", "calculator").Observe(0.005)
	}
	for i := 0; i < 9; i++ {
		dur.WithLabelValues("add", "calculator").Observe(0.05)
	}
	dur.WithLabelValues("add", "calculator").Observe(5)
	// divide: 3 calls all failing, all slower than every bucket.
	calls.WithLabelValues("opentool", "divide", "calculator", "tool_error").Add(3)
	for i := 0; i < 3; i++ {
		dur.WithLabelValues("divide", "calculator").Observe(2)
	}
	// A function no longer served is left out.
	calls.WithLabelValues("opentool", "gone", "calculator", "ok").Add(1)
	return reg
}

func getStatus(t *testing.T, h http.Handler) statusui.Status {
	t.Helper()
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/status.json", nil))
	if rec.Code != 200 || rec.Header().Get("Content-Type") != "application/json" {
		t.Fatalf("status %d %q: %s", rec.Code, rec.Header().Get("Content-Type"), rec.Body)
	}
	var st statusui.Status
	if err := json.Unmarshal(rec.Body.Bytes(), &st); err != nil {
		t.Fatal(err)
	}
	return st
}

func TestStatusJSON(t *testing.T) {
	src := newFakeSource()
	st := getStatus(t, statusui.New(src, statusui.Config{Version: "1.2.3", Gatherer: registry(t)}).Handler())
	if !st.Metrics || st.Version != "1.2.3" || len(st.Plugins) != 2 || len(st.Functions) != 3 {
		t.Fatalf("%+v", st)
	}
	if p := st.Plugins[0]; p.Name != "calculator" || p.PID != 42 || p.Restarts != 1 || p.Stderr != nil || p.SHA256 == "" {
		t.Errorf("plugin %+v", p)
	}
	if p := st.Plugins[1]; p.State != core.StateFailed || p.LastError != "<img src=x onerror=alert(1)>" {
		t.Errorf("plugin %+v", p)
	}
	add, div, boom := st.Functions[0], st.Functions[1], st.Functions[2]
	if add.Name != "add" || add.Calls != 100 || add.Errors != 10 || add.Outcomes["ok"] != 90 || add.Outcomes["timeout"] != 10 {
		t.Errorf("add %+v", add)
	}
	// p50: rank 50 falls at the top of (0, 1ms]: 1 ms. p99: rank 99 is
	// the last of (10ms, 100ms]: 100 ms.
	if add.P50MS == nil || *add.P50MS != 1 || add.P50Over || add.P99MS == nil || *add.P99MS != 100 || add.P99Over {
		t.Errorf("add quantiles %v %v %v %v", deref(add.P50MS), add.P50Over, deref(add.P99MS), add.P99Over)
	}
	if div.Calls != 3 || div.Errors != 3 || div.P50MS == nil || *div.P50MS != 1000 || !div.P50Over || !div.P99Over {
		t.Errorf("divide %+v p50 %v", div, deref(div.P50MS))
	}
	if boom.Calls != 0 || boom.P50MS != nil {
		t.Errorf("boom %+v", boom)
	}

	// Without a Gatherer the functions are listed without numbers.
	st = getStatus(t, statusui.New(src, statusui.Config{}).Handler())
	if st.Metrics || len(st.Functions) != 3 || st.Functions[0].Calls != 0 {
		t.Errorf("without metrics: %+v", st)
	}
}

func deref(p *float64) any {
	if p == nil {
		return nil
	}
	return *p
}

// failingGatherer fails to gather.
type failingGatherer struct{}

func (failingGatherer) Gather() ([]*dto.MetricFamily, error) { return nil, io.ErrUnexpectedEOF }

func TestStatusJSONGatherError(t *testing.T) {
	st := getStatus(t, statusui.New(newFakeSource(), statusui.Config{Gatherer: failingGatherer{}}).Handler())
	if st.Metrics || st.MetricsError == "" || len(st.Functions) != 3 {
		t.Errorf("%+v", st)
	}
}

// TestAllowed: a caller whose key may call only some functions sees only
// those functions, their plugins, and their plugins' events (package
// catalog).
func TestAllowed(t *testing.T) {
	src := newFakeSource()
	divideOnly := access.NewGrant("divide-only", []string{"divide"})
	tag := func(h http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.Header.Get("X-Caller") != "all" {
				r = r.WithContext(access.WithGrant(r.Context(), divideOnly))
			}
			h.ServeHTTP(w, r)
		})
	}
	ui := statusui.New(src, statusui.Config{Auth: tag})
	st := getStatus(t, ui.Handler())
	if len(st.Functions) != 1 || st.Functions[0].Name != "divide" || len(st.Plugins) != 1 || st.Plugins[0].Name != "calculator" {
		t.Fatalf("restricted caller sees %+v", st)
	}

	srv := httptest.NewServer(ui.Handler())
	t.Cleanup(srv.Close)
	t.Cleanup(ui.Shutdown)
	_, r := openEvents(t, srv.URL, nil)
	waitFor(t, src.notify, "the subscription")
	r.next()
	src.publish(core.Event{Type: core.EventFailed, Plugin: "faulty"})
	src.publish(core.Event{Type: core.EventReady, Plugin: "calculator"})
	if b := r.next(); b[0] != "event:ready" || !strings.Contains(b[1], `"plugin":"calculator"`) {
		t.Fatalf("restricted caller got %q first; want calculator's ready (faulty's failed hidden)", b)
	}
}
