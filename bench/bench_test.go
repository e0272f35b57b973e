package bench

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
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
	benchPaths   = []string{pathGRPC, pathHTTP, pathHost}
)

const (
	pathGRPC = "floor-grpc" // bare go-plugin gRPC round trip
	pathHTTP = "floor-http" // bare net/http JSON POST on loopback
	pathHost = "host"       // POST /opentool/call through the host
)

// env is what the benchmarks share: built once, torn down by TestMain.
var env struct {
	once      sync.Once
	err       error
	tmp       string
	grpc      *floor.Client
	httpAddr  string // bare net/http echo
	hostAddr  string // httpapi on the host
	host      *host.Host
	servers   []*http.Server
	setupTook time.Duration
}

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
	if env.httpAddr, err = serve(http.HandlerFunc(floorHTTP)); err != nil {
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

// result is one final run of one benchmark case.
type result struct {
	size      string
	clients   int
	path      string
	n         int
	nsPerOp   float64 // wall time per call
	callsPerS float64
	p50, p99  time.Duration
	procAlloc float64 // allocations per call in this process (client + server side)
	srvAlloc  float64 // allocations per call on the server side alone (-1 when not measured)
	cpuSelf   float64 // CPU ns per call of this process (client, HTTP server, host)
	cpuPlugin float64 // CPU ns per call of the plugin process
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

// worker is one caller: its own HTTP connection (keep-alive) or gRPC
// stream, buffer and latency record.
type worker struct {
	op   func(*worker) error
	buf  bytes.Buffer
	lats []time.Duration
	err  error
}

func runCase(b *testing.B, size string, nbytes, clients int, path string) {
	params := harness.Params(nbytes)
	body := harness.CallBody("echo", params, 1)
	hc := harness.NewHTTPClient(clients, 30*time.Second)
	defer hc.CloseIdleConnections()
	ctx := context.Background()
	var op func(*worker) error
	switch path {
	case pathGRPC:
		op = func(*worker) error { _, err := env.grpc.Call(ctx, params); return err }
	case pathHTTP:
		url := "http://" + env.httpAddr + "/"
		op = func(w *worker) error {
			st, resp, err := harness.Post(ctx, hc, url, body, &w.buf)
			if err == nil && (st != http.StatusOK || len(resp) != len(body)+9) {
				err = fmt.Errorf("floor http: HTTP %d, %d bytes", st, len(resp))
			}
			return err
		}
	case pathHost:
		url := "http://" + env.hostAddr + httpapi.BasePath + "/call"
		op = func(w *worker) error {
			st, resp, err := harness.Post(ctx, hc, url, body, &w.buf)
			if err == nil && st != http.StatusOK {
				err = fmt.Errorf("host: HTTP %d: %.200s", st, resp)
			}
			if err == nil {
				err = harness.CheckEcho(resp, params)
			}
			return err
		}
	}
	ws := make([]*worker, clients)
	for i := range ws {
		ws[i] = &worker{op: op, lats: make([]time.Duration, 0, b.N/clients+1)}
	}
	// Warm up: one call per worker at once, so that every keep-alive
	// connection exists before the clock starts.
	var wg sync.WaitGroup
	for _, w := range ws {
		wg.Add(1)
		go func() { defer wg.Done(); w.err = w.op(w) }()
	}
	wg.Wait()
	for _, w := range ws {
		if w.err != nil {
			b.Fatal(w.err)
		}
	}
	pluginPID := 0
	switch path {
	case pathGRPC:
		pluginPID = env.grpc.PID()
	case pathHost:
		for _, p := range env.host.Plugins() {
			if p.Name == "echo" {
				pluginPID = p.PID
			}
		}
	}
	runtime.GC()
	var m0, m1 runtime.MemStats
	runtime.ReadMemStats(&m0)
	self0, plug0 := harness.SelfCPUTime(), harness.CPUTime(pluginPID)
	b.ReportAllocs()
	b.ResetTimer()
	start := time.Now()
	var next atomic.Int64
	for _, w := range ws {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for next.Add(1) <= int64(b.N) {
				t0 := time.Now()
				if err := w.op(w); err != nil {
					w.err = err
					return
				}
				w.lats = append(w.lats, time.Since(t0))
			}
		}()
	}
	wg.Wait()
	elapsed := time.Since(start)
	b.StopTimer()
	self1, plug1 := harness.SelfCPUTime(), harness.CPUTime(pluginPID)
	runtime.ReadMemStats(&m1)
	var lats []time.Duration
	for _, w := range ws {
		if w.err != nil {
			b.Fatal(w.err)
		}
		lats = append(lats, w.lats...)
	}
	harness.SortDurations(lats)
	r := &result{
		size: size, clients: clients, path: path, n: b.N,
		nsPerOp:   float64(elapsed.Nanoseconds()) / float64(b.N),
		callsPerS: float64(b.N) / elapsed.Seconds(),
		p50:       harness.Percentile(lats, 50),
		p99:       harness.Percentile(lats, 99),
		procAlloc: float64(m1.Mallocs-m0.Mallocs) / float64(b.N),
		srvAlloc:  -1,
		cpuSelf:   float64(self1-self0) / float64(b.N),
		cpuPlugin: float64(plug1-plug0) / float64(b.N),
	}
	b.ReportMetric(r.callsPerS, "calls/s")
	b.ReportMetric((r.cpuSelf+r.cpuPlugin)/1e3, "cpu-µs/op")
	if pluginPID > 0 {
		b.ReportMetric(r.cpuPlugin/1e3, "plugin-cpu-µs/op")
	}
	b.ReportMetric(float64(r.p50.Nanoseconds())/1e3, "p50-µs")
	b.ReportMetric(float64(r.p99.Nanoseconds())/1e3, "p99-µs")
	// The server side's own allocations, counted around a client that
	// allocates nothing (sequential cases only; it is a property of the
	// server, not of the load).
	if clients == 1 && b.N >= 100 && path != pathGRPC {
		addr, p := env.httpAddr, "/"
		if path == pathHost {
			addr, p = env.hostAddr, httpapi.BasePath+"/call"
		}
		a, err := serverAllocs(addr, p, body)
		if err != nil {
			b.Fatal(err)
		}
		r.srvAlloc = a
		b.ReportMetric(a, "server-allocs/op")
	}
	resultsMu.Lock()
	if _, ok := results[b]; !ok {
		order = append(order, b)
	}
	results[b] = r
	resultsMu.Unlock()
}

// serverAllocs returns the allocations per call in this process while a
// raw (non-allocating) client sends 500 calls to addr: the server's own.
func serverAllocs(addr, path string, body []byte) (float64, error) {
	rc, err := harness.DialRaw(addr, path, body)
	if err != nil {
		return 0, err
	}
	defer rc.Close()
	for range 50 {
		if st, _, err := rc.Do(); err != nil || st != http.StatusOK {
			return 0, fmt.Errorf("raw client: HTTP %d, %v", st, err)
		}
	}
	const n = 500
	var m0, m1 runtime.MemStats
	runtime.ReadMemStats(&m0)
	for range n {
		if _, _, err := rc.Do(); err != nil {
			return 0, err
		}
	}
	runtime.ReadMemStats(&m1)
	return float64(m1.Mallocs-m0.Mallocs) / n, nil
}

func TestMain(m *testing.M) {
	code := m.Run()
	if len(results) > 0 {
		printSummary(os.Stdout)
	}
	teardown()
	os.Exit(code)
}

// agg is the median over -count runs of one case.
type agg struct {
	nsPerOp, callsPerS, procAlloc, srvAlloc float64
	cpu                                     float64 // CPU ns per call, both processes
	p50, p99                                time.Duration
	runs                                    int
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
			procAlloc: f(func(r *result) float64 { return r.procAlloc }),
			srvAlloc:  f(func(r *result) float64 { return r.srvAlloc }),
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
	fmt.Fprintln(w, "Sequential (1 client): host latency against the floor = gRPC floor + HTTP floor")
	fmt.Fprintln(w)
	fmt.Fprintln(w, "| payload | gRPC floor µs | HTTP floor µs | floor µs | host µs | host/floor | calls/s | p50 | p99 | CPU µs/call floor → host | host allocs/call (floor) | ratio ≤ 1.2 |")
	fmt.Fprintln(w, "|---|---|---|---|---|---|---|---|---|---|---|---|")
	for _, sz := range benchSizes {
		g, h, o := a[[3]string{sz.name, "1", pathGRPC}], a[[3]string{sz.name, "1", pathHTTP}], a[[3]string{sz.name, "1", pathHost}]
		if g == nil || h == nil || o == nil {
			continue
		}
		fl := g.nsPerOp + h.nsPerOp
		ratio := o.nsPerOp / fl
		fmt.Fprintf(w, "| %s | %s | %s | %s | %s | %.2f | %.0f | %s | %s | %s → %s | %.0f (%.0f) | %s |\n",
			sz.name, us(g.nsPerOp), us(h.nsPerOp), us(fl), us(o.nsPerOp), ratio, o.callsPerS, dur(o.p50), dur(o.p99),
			us(g.cpu+h.cpu), us(o.cpu), o.srvAlloc, h.srvAlloc+g.procAlloc, mark(ratio <= targetSeqRatio))
	}
	fmt.Fprintln(w)
	fmt.Fprintln(w, "Concurrent (64 keep-alive clients): host throughput against the floor = 1 / (gRPC µs/op + HTTP µs/op)")
	fmt.Fprintln(w)
	fmt.Fprintln(w, "| payload | gRPC floor µs/op | HTTP floor µs/op | floor calls/s | host calls/s | host/floor | p50 | p99 | CPU µs/call floor → host | ≥ 75% of floor | p99 ≤ 10 ms |")
	fmt.Fprintln(w, "|---|---|---|---|---|---|---|---|---|---|---|")
	for _, sz := range benchSizes {
		c := fmt.Sprint(benchClients[len(benchClients)-1])
		g, h, o := a[[3]string{sz.name, c, pathGRPC}], a[[3]string{sz.name, c, pathHTTP}], a[[3]string{sz.name, c, pathHost}]
		if g == nil || h == nil || o == nil {
			continue
		}
		floorTput := 1e9 / (g.nsPerOp + h.nsPerOp)
		share := o.callsPerS / floorTput
		fmt.Fprintf(w, "| %s | %s | %s | %.0f | %.0f | %.0f%% | %s | %s | %s → %s | %s | %s |\n",
			sz.name, us(g.nsPerOp), us(h.nsPerOp), floorTput, o.callsPerS, 100*share, dur(o.p50), dur(o.p99),
			us(g.cpu+h.cpu), us(o.cpu), mark(share >= targetConcShare), mark(o.p99 <= targetP99))
	}
	runs := 0
	for _, g := range a {
		runs = max(runs, g.runs)
	}
	fmt.Fprintf(w, "\nMedians of %d run(s) per case. CPU µs/call: user+system CPU of the benchmark process (HTTP client and server,\n"+
		"host) and of the plugin process per call, a figure that load from other processes disturbs less than wall time.\n"+
		"host allocs/call: allocations in the host process per call, counted around a non-allocating raw HTTP client;\n"+
		"in brackets the floor's (bare net/http server + go-plugin gRPC client).\n", runs)
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
	if bi, ok := debug.ReadBuildInfo(); ok {
		for _, d := range bi.Deps {
			if d.Path == "github.com/hashicorp/go-plugin" {
				gp = "go-plugin " + d.Version
			}
		}
	}
	return fmt.Sprintf("%s/%s, %s, %d CPUs, GOMAXPROCS %d, %s, %s", runtime.GOOS, runtime.GOARCH, cpu, runtime.NumCPU(), runtime.GOMAXPROCS(0), runtime.Version(), gp)
}
