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

	"github.com/opentool-host/opentool-host/bench/floor"
	"github.com/opentool-host/opentool-host/bench/harness"
	"github.com/opentool-host/opentool-host/host"
	"github.com/opentool-host/opentool-host/httpapi"
)

// The benchmark matrix. Each size × clients cell runs the three paths
// back to back so that their ratios hold on a noisy machine.
var (
	benchSizes = []struct {
		name  string
		bytes int
	}{{"16B", 16}, {"64KiB", 64 << 10}}
	benchClients = []int{1, 64}
	benchPaths   = []string{pathGRPC, pathHTTP, pathStack, pathHost}
)

const (
	pathGRPC  = "floor-grpc"  // bare go-plugin gRPC round trip
	pathHTTP  = "floor-http"  // bare net/http JSON POST on loopback
	pathStack = "floor-stack" // bare net/http handler calling the bare gRPC plugin: both hops, no host code
	pathHost  = "host"        // POST /opentool/call through the host
)

// env is what the benchmarks share: built once, torn down by TestMain.
var env struct {
	once      sync.Once
	err       error
	tmp       string
	grpc      *floor.Client
	httpAddr  string // bare net/http echo
	stackAddr string // bare net/http handler → bare gRPC plugin
	hostAddr  string // httpapi on the host
	host      *host.Host
	servers   []*http.Server
	lg        *harness.Loadgen // the HTTP clients, in a process of their own
	setupTook time.Duration
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
	h, err := host.New(host.Config{Dir: plugins, StateDir: filepath.Join(tmp, "state")})
	if err != nil {
		return err
	}
	env.host = h
	if err := h.Start(context.Background()); err != nil {
		return err
	}
	if h.Function("echo") == nil {
		return fmt.Errorf("the echo plugin is not served: %+v", h.Plugins())
	}
	if env.hostAddr, err = serve(httpapi.New(h, httpapi.Config{Version: "bench"})); err != nil {
		return err
	}
	env.setupTook = time.Since(start)
	return nil
}

func teardown() {
	for _, s := range env.servers {
		_ = s.Close()
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
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second}
	env.servers = append(env.servers, srv)
	go func() { _ = srv.Serve(ln) }()
	return ln.Addr().String(), nil
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

// Targets of issue 5 (2-core machine).
const (
	targetSeqRatio  = 1.2
	targetConcShare = 0.75
	targetP99       = 10 * time.Millisecond
)

func printSummary(w io.Writer) {
	a := aggregate()
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
	fmt.Fprintln(w, "Sequential (1 client). floor = gRPC floor + HTTP floor; stacked = a bare net/http handler calling the bare gRPC plugin (both hops, no host code).")
	fmt.Fprintln(w)
	fmt.Fprintln(w, "| payload | gRPC floor µs | HTTP floor µs | floor µs | stacked µs | host µs | host/floor | host/stacked | host calls/s | p50 | p99 | CPU µs/call floor → stacked → host | host allocs/call (floor) | ratio ≤ 1.2 |")
	fmt.Fprintln(w, "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|")
	for _, sz := range benchSizes {
		g, h, st, o := a[[3]string{sz.name, "1", pathGRPC}], a[[3]string{sz.name, "1", pathHTTP}], a[[3]string{sz.name, "1", pathStack}], a[[3]string{sz.name, "1", pathHost}]
		if g == nil || h == nil || st == nil || o == nil {
			continue
		}
		fl := g.nsPerOp + h.nsPerOp
		ratio := o.nsPerOp / fl
		fmt.Fprintf(w, "| %s | %s | %s | %s | %s | %s | %.2f | %.2f | %.0f | %s | %s | %s → %s → %s | %.0f (%.0f) | %s |\n",
			sz.name, us(g.nsPerOp), us(h.nsPerOp), us(fl), us(st.nsPerOp), us(o.nsPerOp), ratio, o.nsPerOp/st.nsPerOp, o.callsPerS, dur(o.p50), dur(o.p99),
			us(g.cpu+h.cpu), us(st.cpu), us(o.cpu), o.alloc, h.alloc+g.alloc, mark(ratio <= targetSeqRatio))
	}
	fmt.Fprintln(w)
	fmt.Fprintln(w, "Concurrent (64 keep-alive clients). floor calls/s = 1 / (gRPC µs/op + HTTP µs/op).")
	fmt.Fprintln(w)
	fmt.Fprintln(w, "| payload | gRPC floor µs/op | HTTP floor µs/op | floor calls/s | stacked calls/s | host calls/s | host/floor | host/stacked | p50 | p99 | CPU µs/call floor → stacked → host | ≥ 75% of floor | p99 ≤ 10 ms |")
	fmt.Fprintln(w, "|---|---|---|---|---|---|---|---|---|---|---|---|---|")
	for _, sz := range benchSizes {
		c := fmt.Sprint(benchClients[len(benchClients)-1])
		g, h, st, o := a[[3]string{sz.name, c, pathGRPC}], a[[3]string{sz.name, c, pathHTTP}], a[[3]string{sz.name, c, pathStack}], a[[3]string{sz.name, c, pathHost}]
		if g == nil || h == nil || st == nil || o == nil {
			continue
		}
		floorTput := 1e9 / (g.nsPerOp + h.nsPerOp)
		share := o.callsPerS / floorTput
		fmt.Fprintf(w, "| %s | %s | %s | %.0f | %.0f | %.0f | %.0f%% | %.0f%% | %s | %s | %s → %s → %s | %s | %s |\n",
			sz.name, us(g.nsPerOp), us(h.nsPerOp), floorTput, st.callsPerS, o.callsPerS, 100*share, 100*o.callsPerS/st.callsPerS, dur(o.p50), dur(o.p99),
			us(g.cpu+h.cpu), us(st.cpu), us(o.cpu), mark(share >= targetConcShare), mark(o.p99 <= targetP99))
	}
	runs := 0
	for _, g := range a {
		runs = max(runs, g.runs)
	}
	fmt.Fprintf(w, "\nMedians of %d run(s) per case. The HTTP clients run in a load-generator process of their own; the HTTP\n"+
		"servers, the host and the gRPC floor's client run in the benchmark process; each plugin in its own.\n"+
		"CPU µs/call: user+system CPU per call of the server side (benchmark process + plugin process; the clients'\n"+
		"CPU is left out of both), less disturbed by load from other processes than wall time.\n"+
		"host allocs/call: allocations per call in the host process; in brackets the floor's (bare net/http server +\n"+
		"go-plugin gRPC client).\n", runs)
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
