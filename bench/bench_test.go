package bench

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/opentool-host/opentool-host/access"
	"github.com/opentool-host/opentool-host/bench/floor"
	"github.com/opentool-host/opentool-host/bench/harness"
	"github.com/opentool-host/opentool-host/frontdoor"
	"github.com/opentool-host/opentool-host/host"
	"github.com/opentool-host/opentool-host/httpapi"
	"github.com/opentool-host/opentool-host/metrics"
)

// The benchmark matrix. Each size × clients cell runs the three paths
// back to back so that their ratios hold on a noisy machine.
var (
	benchSizes = []struct {
		name  string
		bytes int
	}{{"16B", 16}, {"64KiB", 64 << 10}}
	benchClients = []int{1, 64}
	benchPaths   = []string{pathGRPC, pathHTTP, pathStack, pathHost, pathLocal, pathCalc}
)

const (
	pathGRPC  = "floor-grpc"  // bare go-plugin gRPC round trip
	pathHTTP  = "floor-http"  // bare net/http JSON POST on loopback
	pathStack = "floor-stack" // bare net/http handler calling the bare gRPC plugin: both hops, no host code
	pathHost  = "host"        // POST /opentool/call of the echo plugin through the host
	pathLocal = "host-local"  // POST /opentool/call of an unknown function: answered by the host alone (-32601)
	pathCalc  = "host-calc"   // POST /opentool/call of calculator.add {"a":2,"b":3} (1 client, 16B only)
)

// skipCase reports the cases that are not run: the calculator's fixed
// arguments only at 16B and one client.
func skipCase(size string, clients int, path string) bool {
	return path == pathCalc && (size != "16B" || clients != 1)
}

// env is what the benchmarks share: built once, torn down by TestMain.
var env struct {
	once      sync.Once
	err       error
	tmp       string
	grpc      *floor.Client
	httpAddr  string // bare net/http echo
	stackAddr string // bare net/http handler → bare gRPC plugin
	hostAddr  string // httpapi on the host
	// closeFront closes the front door's task manager (frontdoor.Front).
	closeFront func()
	host       *host.Host
	servers    []*http.Server
	lg         *harness.Loadgen // the HTTP clients, in a process of their own
	setupTook  time.Duration
}

// loadgenEnv makes the test binary a load generator (see TestMain).
const loadgenEnv = "OPENTOOL_BENCH_LOADGEN"

func setup(b *testing.B) {
	b.Helper()
	env.once.Do(func() { env.err = doSetup() })
	if env.err != nil {
		b.Fatal(env.err)
	}
}

func doSetup() error {
	start := time.Now()
	tmp, err := os.MkdirTemp("", "opentool-bench-")
	if err != nil {
		return err
	}
	env.tmp = tmp
	floorBin, err := harness.Build("./bench/floor/plugin", tmp)
	if err != nil {
		return err
	}
	echoBin, err := harness.Build("./internal/testplugins/echo", tmp)
	if err != nil {
		return err
	}
	calcBin, err := harness.Build("./plugins/calculator", tmp)
	if err != nil {
		return err
	}
	if env.grpc, err = floor.Start(floorBin); err != nil {
		return err
	}
	if env.lg, err = harness.StartLoadgen(os.Args[0], []string{"-test.run=^$"}, []string{loadgenEnv + "=1"}); err != nil {
		return err
	}
	if env.httpAddr, err = serve(http.HandlerFunc(floorHTTP)); err != nil {
		return err
	}
	if env.stackAddr, err = serve(http.HandlerFunc(floorStack)); err != nil {
		return err
	}
	plugins := filepath.Join(tmp, "plugins")
	if err := os.MkdirAll(plugins, 0o755); err != nil {
		return err
	}
	data, err := os.ReadFile(echoBin)
	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(plugins, "opentool-plugin-echo"), data, 0o755); err != nil {
		return err
	}
	if data, err = os.ReadFile(calcBin); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(plugins, "opentool-plugin-calculator"), data, 0o755); err != nil {
		return err
	}
	// The host path is the one `opentool-host run` serves: the front door
	// (frontdoor.NewFront: every front end behind the one chain) and a
	// host whose finished calls go to the metrics.
	var m *metrics.Metrics
	onCall := func(ctx context.Context, r host.CallRecord) {
		if m != nil {
			m.Observe(ctx, r)
		}
	}
	h, err := host.New(host.Config{Dir: plugins, StateDir: filepath.Join(tmp, "state"), OnCall: onCall})
	if err != nil {
		return err
	}
	m = metrics.New(h)
	env.host = h
	if err := h.Start(context.Background()); err != nil {
		return err
	}
	if h.Function("echo") == nil || h.Function("add") == nil {
		return fmt.Errorf("the echo and calculator plugins are not both served: %+v", h.Plugins())
	}
	guard, err := access.New(access.Config{})
	if err != nil {
		return err
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	front, err := frontdoor.NewFront(context.Background(), h, ln.Addr(), guard, m, frontdoor.Config{Version: "bench"})
	if err != nil {
		ln.Close()
		return err
	}
	env.closeFront = front.Close
	env.hostAddr = serveOn(ln, front.Handler)
	env.setupTook = time.Since(start)
	return nil
}

func teardown() {
	for _, s := range env.servers {
		_ = s.Close()
	}
	if env.closeFront != nil {
		env.closeFront()
	}
	if env.host != nil {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		_ = env.host.Close(ctx)
		cancel()
	}
	if env.grpc != nil {
		env.grpc.Close()
	}
	if env.lg != nil {
		_ = env.lg.Close()
	}
	if env.tmp != "" {
		_ = os.RemoveAll(env.tmp)
	}
}

// serve serves h on a free loopback port and returns "127.0.0.1:PORT".
func serve(h http.Handler) (string, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	return serveOn(ln, h), nil
}

// serveOn serves h on ln and returns its address.
func serveOn(ln net.Listener, h http.Handler) string {
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second}
	env.servers = append(env.servers, srv)
	go func() { _ = srv.Serve(ln) }()
	return ln.Addr().String()
}

var floorBufs = sync.Pool{New: func() any { return new(bytes.Buffer) }}

// floorHTTP is the bare net/http JSON echo: it reads the body and answers
// {"echo":BODY} with a Content-Length, nothing else.
func floorHTTP(w http.ResponseWriter, r *http.Request) {
	in := floorBufs.Get().(*bytes.Buffer)
	out := floorBufs.Get().(*bytes.Buffer)
	defer floorBufs.Put(in)
	defer floorBufs.Put(out)
	in.Reset()
	out.Reset()
	if _, err := in.ReadFrom(r.Body); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	out.WriteString(`{"echo":`)
	out.Write(in.Bytes())
	out.WriteByte('}')
	h := w.Header()
	h["Content-Type"] = []string{"application/json"}
	h["Content-Length"] = []string{fmt.Sprint(out.Len())}
	_, _ = w.Write(out.Bytes())
}

// floorStack is both floor hops stacked without any host code: it reads
// the body, sends it as the arguments of the bare gRPC plugin's echo and
// answers its result ({"echo":BODY}).
func floorStack(w http.ResponseWriter, r *http.Request) {
	in := floorBufs.Get().(*bytes.Buffer)
	defer floorBufs.Put(in)
	in.Reset()
	if _, err := in.ReadFrom(r.Body); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	res, err := env.grpc.Call(r.Context(), in.Bytes())
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadGateway)
		return
	}
	h := w.Header()
	h["Content-Type"] = []string{"application/json"}
	h["Content-Length"] = []string{fmt.Sprint(len(res))}
	_, _ = w.Write(res)
}

// result is one final run of one benchmark case.
type result struct {
	size      string
	clients   int
	path      string
	n         int
	nsPerOp   float64 // wall time per call
	callsPerS float64
	p50, p99  time.Duration
	alloc     float64 // allocations per call in this process: the HTTP server and host, or the gRPC client
	cpuSelf   float64 // CPU ns per call of this process (the HTTP server and host, or the gRPC client)
	cpuPlugin float64 // CPU ns per call of the plugin process
	cpuClient float64 // CPU ns per call of the load generator (HTTP clients)
}

var (
	resultsMu sync.Mutex
	results   = map[*testing.B]*result{} // the last run of each b is its final one
	order     []*testing.B
)

// BenchmarkCall measures the floor hops and the host, see package doc.
// Sub-benchmark names are size=…/clients=…/path=… for benchstat.
func BenchmarkCall(b *testing.B) {
	setup(b)
	for _, sz := range benchSizes {
		for _, c := range benchClients {
			for _, p := range benchPaths {
				if skipCase(sz.name, c, p) {
					continue
				}
				b.Run(fmt.Sprintf("size=%s/clients=%d/path=%s", sz.name, c, p), func(b *testing.B) {
					runCase(b, sz.name, sz.bytes, c, p)
				})
			}
		}
	}
}

func runCase(b *testing.B, size string, nbytes, clients int, path string) {
	params := harness.Params(nbytes)
	body := harness.CallBody("echo", params, 1)
	ctx := context.Background()
	var run func(n int, warm bool) (harness.LoadResult, error)
	pluginPID := 0
	switch path {
	case pathGRPC:
		pluginPID = env.grpc.PID()
		run = func(n int, warm bool) (harness.LoadResult, error) {
			res := harness.RunLocal(clients, n, warm, func(int) error { _, err := env.grpc.Call(ctx, params); return err })
			if res.Err != "" {
				return res, errors.New(res.Err)
			}
			return res, nil
		}
	case pathHTTP:
		run = func(n int, warm bool) (harness.LoadResult, error) {
			return env.lg.Run(harness.LoadRequest{URL: "http://" + env.httpAddr + "/", Body: body, Clients: clients, N: n, Warm: warm})
		}
	case pathStack:
		pluginPID = env.grpc.PID()
		run = func(n int, warm bool) (harness.LoadResult, error) {
			return env.lg.Run(harness.LoadRequest{URL: "http://" + env.stackAddr + "/", Body: body, Clients: clients, N: n, Warm: warm})
		}
	case pathHost:
		for _, p := range env.host.Plugins() {
			if p.Name == "echo" {
				pluginPID = p.PID
			}
		}
		url := "http://" + env.hostAddr + httpapi.BasePath + "/call"
		run = func(n int, warm bool) (harness.LoadResult, error) {
			return env.lg.Run(harness.LoadRequest{URL: url, Body: body, Clients: clients, N: n, Warm: warm, EchoParams: params})
		}
	case pathLocal:
		url := "http://" + env.hostAddr + httpapi.BasePath + "/call"
		local := harness.CallBody("no_such_function", params, 1)
		run = func(n int, warm bool) (harness.LoadResult, error) {
			return env.lg.Run(harness.LoadRequest{URL: url, Body: local, Clients: clients, N: n, Warm: warm, Contains: `"code":-32601`})
		}
	case pathCalc:
		for _, p := range env.host.Plugins() {
			if p.Name == "calculator" {
				pluginPID = p.PID
			}
		}
		url := "http://" + env.hostAddr + httpapi.BasePath + "/call"
		add := harness.CallBody("add", []byte(`{"a":2,"b":3}`), 1)
		run = func(n int, warm bool) (harness.LoadResult, error) {
			return env.lg.Run(harness.LoadRequest{URL: url, Body: add, Clients: clients, N: n, Warm: warm, Contains: `"result":{"result":5}`})
		}
	}
	// Warm up: one call per client at once, so that every keep-alive
	// connection exists before the clock starts.
	if _, err := run(0, true); err != nil {
		b.Fatal(err)
	}
	runtime.GC()
	var m0, m1 runtime.MemStats
	runtime.ReadMemStats(&m0)
	self0, plug0 := harness.SelfCPUTime(), harness.CPUTime(pluginPID)
	b.ReportAllocs()
	b.ResetTimer()
	res, err := run(b.N, false)
	b.StopTimer()
	self1, plug1 := harness.SelfCPUTime(), harness.CPUTime(pluginPID)
	runtime.ReadMemStats(&m1)
	if err != nil {
		b.Fatal(err)
	}
	n := float64(b.N)
	r := &result{
		size: size, clients: clients, path: path, n: b.N,
		nsPerOp:   float64(res.Elapsed.Nanoseconds()) / n,
		callsPerS: n / res.Elapsed.Seconds(),
		p50:       res.P50,
		p99:       res.P99,
		alloc:     float64(m1.Mallocs-m0.Mallocs) / n,
		cpuSelf:   float64(self1-self0) / n,
		cpuPlugin: float64(plug1-plug0) / n,
	}
	if path != pathGRPC {
		r.cpuClient = float64(res.CPU) / n
	}
	b.ReportMetric(r.callsPerS, "calls/s")
	b.ReportMetric(float64(r.p50.Nanoseconds())/1e3, "p50-µs")
	b.ReportMetric(float64(r.p99.Nanoseconds())/1e3, "p99-µs")
	b.ReportMetric((r.cpuSelf+r.cpuPlugin)/1e3, "cpu-µs/op")
	if pluginPID > 0 {
		b.ReportMetric(r.cpuPlugin/1e3, "plugin-cpu-µs/op")
	}
	resultsMu.Lock()
	if _, ok := results[b]; !ok {
		order = append(order, b)
	}
	results[b] = r
	resultsMu.Unlock()
}

func TestMain(m *testing.M) {
	if os.Getenv(loadgenEnv) == "1" {
		os.Exit(harness.ServeLoadgen(os.Stdin, os.Stdout))
	}
	code := m.Run()
	if len(results) > 0 {
		printSummary(os.Stdout)
	}
	teardown()
	os.Exit(code)
}

// agg is the median over -count runs of one case.
type agg struct {
	nsPerOp, callsPerS, alloc float64
	cpu                       float64 // CPU ns per call: this process and the plugin's
	p50, p99                  time.Duration
	runs                      int
}

func aggregate() map[[3]string]*agg {
	groups := map[[3]string][]*result{}
	for _, b := range order {
		r := results[b]
		k := [3]string{r.size, fmt.Sprint(r.clients), r.path}
		groups[k] = append(groups[k], r)
	}
	out := map[[3]string]*agg{}
	for k, rs := range groups {
		f := func(get func(*result) float64) float64 {
			v := make([]float64, len(rs))
			for i, r := range rs {
				v[i] = get(r)
			}
			sort.Float64s(v)
			return v[len(v)/2]
		}
		out[k] = &agg{
			nsPerOp:   f(func(r *result) float64 { return r.nsPerOp }),
			callsPerS: f(func(r *result) float64 { return r.callsPerS }),
			alloc:     f(func(r *result) float64 { return r.alloc }),
			cpu:       f(func(r *result) float64 { return r.cpuSelf + r.cpuPlugin }),
			p50:       time.Duration(f(func(r *result) float64 { return float64(r.p50) })),
			p99:       time.Duration(f(func(r *result) float64 { return float64(r.p99) })),
			runs:      len(rs),
		}
	}
	return out
}

// Targets (issue 13; 2-core machine), each a ratio within one run.
const (
	targetHop       = 60 * time.Microsecond // p50(host, echo 16B) - p50(host-local), 1 client
	targetCalcRatio = 1.3                   // p50(host-calc) / p50(floor-http 16B), 1 client
	targetConc16    = 0.6                   // calls/s host / floor-http, 16B, 64 clients
	targetConc64K   = 0.75                  // calls/s host / floor-stack, 64KiB, 64 clients
	targetP99       = 10 * time.Millisecond // host p99 at 64 clients
)

func printSummary(w io.Writer) {
	a := aggregate()
	get := func(size string, clients int, path string) *agg { return a[[3]string{size, fmt.Sprint(clients), path}] }
	us := func(ns float64) string { return fmt.Sprintf("%.1f", ns/1e3) }
	dur := func(d time.Duration) string {
		if d >= time.Millisecond {
			return fmt.Sprintf("%.2f ms", float64(d)/1e6)
		}
		return fmt.Sprintf("%.0f µs", float64(d)/1e3)
	}
	mark := func(ok bool) string {
		if ok {
			return "met"
		}
		return "NOT met"
	}
	fmt.Fprintf(w, "\n## Summary (%s)\n\n", machine())
	fmt.Fprintln(w, "Sequential (1 client): p50 (mean µs/call in brackets). stacked = a bare net/http handler calling the bare gRPC plugin (both hops, no host code); host-local = an unknown function, answered by the host alone.")
	fmt.Fprintln(w)
	fmt.Fprintln(w, "| payload | gRPC floor | HTTP floor | stacked | host-local | host | host-calc | host calls/s | host p99 | CPU µs/call HTTP floor → stacked → host | host allocs/call |")
	fmt.Fprintln(w, "|---|---|---|---|---|---|---|---|---|---|---|")
	cell := func(g *agg) string {
		if g == nil {
			return "–"
		}
		return fmt.Sprintf("%s (%s)", dur(g.p50), us(g.nsPerOp))
	}
	for _, sz := range benchSizes {
		g, h, st, l, o, c := get(sz.name, 1, pathGRPC), get(sz.name, 1, pathHTTP), get(sz.name, 1, pathStack), get(sz.name, 1, pathLocal), get(sz.name, 1, pathHost), get(sz.name, 1, pathCalc)
		if h == nil || st == nil || o == nil {
			continue
		}
		fmt.Fprintf(w, "| %s | %s | %s | %s | %s | %s | %s | %.0f | %s | %s → %s → %s | %.0f |\n",
			sz.name, cell(g), cell(h), cell(st), cell(l), cell(o), cell(c), o.callsPerS, dur(o.p99), us(h.cpu), us(st.cpu), us(o.cpu), o.alloc)
	}
	fmt.Fprintln(w)
	fmt.Fprintf(w, "Concurrent (%d keep-alive clients): calls/s (p99).\n\n", benchClients[len(benchClients)-1])
	fmt.Fprintln(w, "| payload | gRPC floor | HTTP floor | stacked | host-local | host | CPU µs/call HTTP floor → stacked → host |")
	fmt.Fprintln(w, "|---|---|---|---|---|---|---|")
	conc := benchClients[len(benchClients)-1]
	tput := func(g *agg) string {
		if g == nil {
			return "–"
		}
		return fmt.Sprintf("%.0f (%s)", g.callsPerS, dur(g.p99))
	}
	for _, sz := range benchSizes {
		g, h, st, l, o := get(sz.name, conc, pathGRPC), get(sz.name, conc, pathHTTP), get(sz.name, conc, pathStack), get(sz.name, conc, pathLocal), get(sz.name, conc, pathHost)
		if h == nil || st == nil || o == nil {
			continue
		}
		fmt.Fprintf(w, "| %s | %s | %s | %s | %s | %s | %s → %s → %s |\n", sz.name, tput(g), tput(h), tput(st), tput(l), tput(o), us(h.cpu), us(st.cpu), us(o.cpu))
	}
	fmt.Fprintln(w)
	fmt.Fprintln(w, "Targets (issue 13), each measured in this run:")
	fmt.Fprintln(w)
	fmt.Fprintln(w, "| target | measured | goal | |")
	fmt.Fprintln(w, "|---|---|---|---|")
	if o, l := get("16B", 1, pathHost), get("16B", 1, pathLocal); o != nil && l != nil {
		hop := o.p50 - l.p50
		fmt.Fprintf(w, "| plugin hop, 1 client, 16B: p50 host − p50 host-local | %s − %s = %s | ≤ %s | %s |\n", dur(o.p50), dur(l.p50), dur(hop), dur(targetHop), mark(hop <= targetHop))
	}
	if c, h := get("16B", 1, pathCalc), get("16B", 1, pathHTTP); c != nil && h != nil {
		r := float64(c.p50) / float64(h.p50)
		fmt.Fprintf(w, "| 1 client: p50 calculator.add / p50 HTTP floor | %s / %s = %.2f× | ≤ %.1f× | %s |\n", dur(c.p50), dur(h.p50), r, targetCalcRatio, mark(r <= targetCalcRatio))
	}
	if o, h := get("16B", conc, pathHost), get("16B", conc, pathHTTP); o != nil && h != nil {
		r := o.callsPerS / h.callsPerS
		fmt.Fprintf(w, "| %d clients, 16B: calls/s host / HTTP floor | %.0f / %.0f = %.2f× | ≥ %.2f× | %s |\n", conc, o.callsPerS, h.callsPerS, r, targetConc16, mark(r >= targetConc16))
	}
	if o, st := get("64KiB", conc, pathHost), get("64KiB", conc, pathStack); o != nil && st != nil {
		r := o.callsPerS / st.callsPerS
		fmt.Fprintf(w, "| %d clients, 64KiB: calls/s host / stacked | %.0f / %.0f = %.2f× | ≥ %.2f× | %s |\n", conc, o.callsPerS, st.callsPerS, r, targetConc64K, mark(r >= targetConc64K))
	}
	for _, sz := range benchSizes {
		if o := get(sz.name, conc, pathHost); o != nil {
			fmt.Fprintf(w, "| %d clients, %s: host p99 | %s | ≤ %s | %s |\n", conc, sz.name, dur(o.p99), dur(targetP99), mark(o.p99 <= targetP99))
		}
	}
	runs := 0
	for _, g := range a {
		runs = max(runs, g.runs)
	}
	fmt.Fprintf(w, "\nMedians of %d run(s) per case. The HTTP clients run in a load-generator process of their own; the HTTP\n"+
		"servers, the host and the gRPC floor's client run in the benchmark process; each plugin in its own.\n"+
		"CPU µs/call: user+system CPU per call of the server side (benchmark process + plugin process; the clients'\n"+
		"CPU is left out of both), less disturbed by load from other processes than wall time.\n"+
		"host allocs/call: allocations per call in the host process (HTTP server and host).\n", runs)
}

// machine describes where the benchmark ran.
func machine() string {
	cpu := "unknown CPU"
	if b, err := os.ReadFile("/proc/cpuinfo"); err == nil {
		for _, line := range strings.Split(string(b), "\n") {
			if k, v, ok := strings.Cut(line, ":"); ok && strings.TrimSpace(k) == "model name" {
				cpu = strings.TrimSpace(v)
				break
			}
		}
	}
	gp := "go-plugin ?"
	if b, err := os.ReadFile(filepath.Join(harness.RepoRoot(), "go.mod")); err == nil {
		for _, line := range strings.Split(string(b), "\n") {
			if f := strings.Fields(line); len(f) >= 2 && f[0] == "github.com/hashicorp/go-plugin" {
				gp = "go-plugin " + f[1]
			}
		}
	}
	return fmt.Sprintf("%s/%s, %s, %d CPUs, GOMAXPROCS %d, %s, %s", runtime.GOOS, runtime.GOARCH, cpu, runtime.NumCPU(), runtime.GOMAXPROCS(0), runtime.Version(), gp)
}
