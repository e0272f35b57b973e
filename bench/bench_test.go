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
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/opentool-host/opentool-host/bench/floor"
	"github.com/opentool-host/opentool-host/bench/harness"
	"github.com/opentool-host/opentool-host/frontend/frontdoor"
	"github.com/opentool-host/opentool-host/frontend/mcpapi"
	"github.com/opentool-host/opentool-host/frontend/metrics"
	"github.com/opentool-host/opentool-host/frontend/opentoolapi"
	"github.com/opentool-host/opentool-host/host"
	"github.com/opentool-host/opentool-host/host/access"
	"github.com/opentool-host/opentool-host/host/core"
	"github.com/opentool-host/opentool-host/testkit/base"
)

// The benchmark matrix. Each size × clients cell runs the three paths
// back to back so that their ratios hold on a noisy machine.
var (
	benchSizes = []struct {
		name  string
		bytes int
	}{{"16B", 16}, {"64KiB", 64 << 10}}
	benchClients = []int{1, 64}
	benchPaths   = []string{pathGRPC, pathHTTP, pathStack, pathHost, pathLocal, pathCalc,
		pathUnix, pathDirect, pathMCP, pathMCPStateless, pathMCPServer, pathMCPGateway, pathMCPStdio}
)

const (
	pathGRPC  = "floor-grpc"  // bare go-plugin gRPC round trip
	pathHTTP  = "floor-http"  // bare net/http JSON POST on loopback
	pathStack = "floor-stack" // bare net/http handler calling the bare gRPC plugin: both hops, no host code
	pathHost  = "host"        // POST /opentool/call of the echo plugin through the host
	pathLocal = "host-local"  // POST /opentool/call of an unknown function: answered by the host alone (-32601)
	pathCalc  = "host-calc"   // POST /opentool/call of calculator.add {"a":2,"b":3} (1 client, 16B only)

	pathUnix         = "floor-unix"        // raw request/response over a unix socket between two Go processes (1 client, 16B)
	pathDirect       = "host-direct"       // host.Call of the echo plugin in process, no HTTP: the plugin hop (1 client, 16B)
	pathMCP          = "mcp"               // POST /mcp tools/call of the echo plugin, one MCP session per client (16B)
	pathMCPStateless = "mcp-stateless"     // POST /mcp tools/call of the echo plugin, --mcp-stateless (16B)
	pathMCPServer    = "mcp-server"        // POST /mcp tools/call of mcp-notes' repeat (harness.MCPServerTool), an MCP server behind a real opentool-host run process (sessions, 16B)
	pathMCPGateway   = "floor-mcp-gateway" // the same tools/call through a bare gateway (floor.MCPGateway: net/http handler, one stdio pipe, no host, no SDK) to mcp-notes (sessions, 16B)
	pathMCPStdio     = "floor-mcp-stdio"   // the same tools/call from a Go SDK client to mcp-notes directly over stdio (16B)
)

// skipCase reports the cases that are not run: the calculator's fixed
// arguments only at 16B and one client; the MCP cases at 16B; the
// plugin hop and its floor at 16B and one client.
func skipCase(size string, clients int, path string) bool {
	switch path {
	case pathCalc, pathUnix, pathDirect:
		return size != "16B" || clients != 1
	case pathMCP, pathMCPStateless, pathMCPServer, pathMCPGateway, pathMCPStdio:
		return size != "16B"
	}
	return false
}

// mcpText is the text mcp-notes' repeat is called with: its arguments
// {"text":"abcde"} are 16 bytes.
const mcpText = "abcde"

// env is what the benchmarks share: built once, torn down by TestMain.
var env struct {
	once      sync.Once
	err       error
	tmp       string
	grpc      *floor.Client
	httpAddr  string // bare net/http echo
	stackAddr string // bare net/http handler → bare gRPC plugin
	hostAddr  string // the front door (stateless /mcp)
	sessAddr  string // the front door with MCP sessions (the default of run)
	unix      *floor.UnixClient
	gateway   *floor.MCPGateway // the bare MCP gateway in front of mcp-notes
	gateAddr  string            // where it serves
	notesBin  string            // examples/mcp-notes
	hostBin   string            // this checkout's cmd/opentool-host
	host      *host.Host
	// mcpHost is a real "opentool-host run" process serving mcp-notes
	// (declared as notes1.mcp.json, its tools prefixed notes1_): the MCP
	// server behind the host, measured from outside as users run it.
	mcpHost   *harness.HostProcess
	servers   []*http.Server
	lg        *harness.Loadgen // the HTTP clients, in a process of their own
	setupTook time.Duration
	// closeFronts close the front doors' task managers (frontdoor.Front).
	closeFronts []func()
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
	floorBin, err := base.Build("./bench/floor/plugin", tmp)
	if err != nil {
		return err
	}
	echoBin, err := base.Build("./testkit/plugins/echo", tmp)
	if err != nil {
		return err
	}
	calcBin, err := base.Build("./plugins/calculator", tmp)
	if err != nil {
		return err
	}
	if env.grpc, err = floor.Start(floorBin); err != nil {
		return err
	}
	if env.lg, err = harness.StartLoadgen(os.Args[0], []string{"-test.run=^$"}, []string{loadgenEnv + "=1"}); err != nil {
		return err
	}
	if env.unix, err = floor.StartUnix(os.Args[0], []string{"-test.run=^$"}, tmp); err != nil {
		return err
	}
	// An MCP server behind the host: mcp-notes declared in the plugins
	// folder of a real host process (this checkout's opentool-host run),
	// however that host runs it.
	if env.notesBin, err = base.Build("./examples/mcp-notes", tmp); err != nil {
		return err
	}
	if env.hostBin, err = base.Build("./cmd/opentool-host", tmp); err != nil {
		return err
	}
	if err := startMCPHost(tmp); err != nil {
		return err
	}
	if env.gateway, err = floor.StartMCPGateway([]string{env.notesBin}, harness.MCPProtocolVersion); err != nil {
		return err
	}
	if env.gateAddr, err = serve(env.gateway); err != nil {
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
	if _, err := harness.CopyExecutable(echoBin, filepath.Join(plugins, "opentool-plugin-echo")); err != nil {
		return err
	}
	if _, err := harness.CopyExecutable(calcBin, filepath.Join(plugins, "opentool-plugin-calculator")); err != nil {
		return err
	}
	// The host path is the one `opentool-host run` serves: the front door
	// (frontdoor.NewFront: every front end behind the one chain) and a
	// host whose finished calls go to the metrics.
	var m *metrics.Metrics
	onCall := func(ctx context.Context, r core.CallRecord) {
		if m != nil {
			m.Observe(ctx, r)
		}
	}
	h, err := host.New(core.Config{Dir: plugins, StateDir: filepath.Join(tmp, "state"), OnCall: onCall})
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
	// /opentool/call and stateless /mcp (--mcp-stateless) on one front
	// door, /mcp with sessions (run's default) on another; both serve the
	// one host.
	front, err := frontdoor.NewFront(context.Background(), h, ln.Addr(), guard, m, frontdoor.Config{Version: "bench"})
	if err != nil {
		ln.Close()
		return err
	}
	env.closeFronts = append(env.closeFronts, front.Close)
	env.hostAddr = serveOn(ln, front.Handler)
	if ln, err = net.Listen("tcp", "127.0.0.1:0"); err != nil {
		return err
	}
	front, err = frontdoor.NewFront(context.Background(), h, ln.Addr(), guard, m, frontdoor.Config{Version: "bench", MCP: mcpapi.HTTPOptions{Sessions: true}})
	if err != nil {
		ln.Close()
		return err
	}
	env.closeFronts = append(env.closeFronts, front.Close)
	env.sessAddr = serveOn(ln, front.Handler)
	env.setupTook = time.Since(start)
	return nil
}

// startMCPHost starts env.mcpHost on a plugins folder under tmp that
// declares mcp-notes alone, and waits until it is ready.
func startMCPHost(tmp string) error {
	plugins := filepath.Join(tmp, "mcp-plugins")
	if err := os.MkdirAll(plugins, 0o755); err != nil {
		return err
	}
	if err := harness.DeclareMCPServers(plugins, env.notesBin, 1, harness.MCPDeclaration{Sessions: "shared"}); err != nil {
		return err
	}
	p, err := harness.StartHostProcess(env.hostBin, harness.HostOptions{Dir: plugins, StateDir: filepath.Join(tmp, "mcp-state")})
	if err != nil {
		return err
	}
	env.mcpHost = p
	c := harness.NewHTTPClient(1, 5*time.Second)
	defer c.CloseIdleConnections()
	if _, err := harness.WaitHealthy(p, c, 1, 30*time.Second); err != nil {
		return fmt.Errorf("the host serving mcp-notes: %w\n%s", err, p.Output())
	}
	return nil
}

func teardown() {
	for _, s := range env.servers {
		_ = s.Close()
	}
	for _, c := range env.closeFronts {
		c()
	}
	if env.gateway != nil {
		env.gateway.Close()
	}
	if env.host != nil {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		_ = env.host.Close(ctx)
		cancel()
	}
	if env.mcpHost != nil {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		if err := env.mcpHost.Stop(ctx); err != nil {
			fmt.Fprintf(os.Stderr, "the host serving mcp-notes: %v\n%s", err, env.mcpHost.Output())
		}
		cancel()
	}
	if env.grpc != nil {
		env.grpc.Close()
	}
	if env.unix != nil {
		env.unix.Close()
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
	alloc     float64 // allocations per call in this process: the HTTP server and host, or the gRPC client; mcp-server: the host process's (harness.HeapMeter)
	allocB    float64 // bytes allocated per call in this process (mcp-server: the host process's)
	cpuSelf   float64 // CPU ns per call of this process (the HTTP server and host, or the gRPC client)
	cpuPlugin float64 // CPU ns per call of the plugin process (mcp-server: of the host process's tree)
	cpuClient float64 // CPU ns per call of the load generator (HTTP clients)
	// cpuFront and cpuServer split a call's CPU of the two MCP gateway
	// paths by process (ns per call; 0 on every other path): the process
	// answering the HTTP request (mcp-server: the host process alone;
	// floor-mcp-gateway: this one, where the bare gateway runs) and the
	// MCP server behind it (mcp-server: the rest of the host's tree, its
	// idle keeper included).
	cpuFront, cpuServer float64
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
	// outside is the CPU time used so far by the processes outside this
	// one that serve the path: the plugin's, or a host process's tree.
	outside := func() time.Duration { return harness.CPUTime(pluginPID) }
	// front is the CPU time used so far by the process answering the
	// HTTP requests of an MCP gateway path (nil on the others).
	var front func() time.Duration
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
		url := "http://" + env.hostAddr + opentoolapi.BasePath + "/call"
		run = func(n int, warm bool) (harness.LoadResult, error) {
			return env.lg.Run(harness.LoadRequest{URL: url, Body: body, Clients: clients, N: n, Warm: warm, EchoParams: params})
		}
	case pathLocal:
		url := "http://" + env.hostAddr + opentoolapi.BasePath + "/call"
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
		url := "http://" + env.hostAddr + opentoolapi.BasePath + "/call"
		add := harness.CallBody("add", []byte(`{"a":2,"b":3}`), 1)
		run = func(n int, warm bool) (harness.LoadResult, error) {
			return env.lg.Run(harness.LoadRequest{URL: url, Body: add, Clients: clients, N: n, Warm: warm, Contains: `"result":{"result":5}`})
		}
	case pathUnix:
		pluginPID = env.unix.PID()
		run = func(n int, warm bool) (harness.LoadResult, error) {
			res := harness.RunLocal(clients, n, warm, func(w int) error { _, err := env.unix.Call(w, params); return err })
			if res.Err != "" {
				return res, errors.New(res.Err)
			}
			return res, nil
		}
	case pathDirect:
		pluginPID = pluginPIDOf("echo")
		run = func(n int, warm bool) (harness.LoadResult, error) {
			res := harness.RunLocal(clients, n, warm, func(int) error {
				out, err := env.host.Call(ctx, "echo", params)
				if err == nil && len(out) != len(params)+9 {
					err = fmt.Errorf("host.Call: %s is not the echo of the arguments", out)
				}
				return err
			})
			if res.Err != "" {
				return res, errors.New(res.Err)
			}
			return res, nil
		}
	case pathMCP, pathMCPStateless:
		pluginPID = pluginPIDOf("echo")
		addr := env.sessAddr
		if path == pathMCPStateless {
			addr = env.hostAddr
		}
		call := harness.MCPCallBody("echo", params, 1)
		want := `"structuredContent":{"echo":` + string(params) + `}`
		run = func(n int, warm bool) (harness.LoadResult, error) {
			return env.lg.Run(harness.LoadRequest{URL: "http://" + addr + mcpapi.Path, Body: call, Clients: clients, N: n, Warm: warm,
				Contains: want, MCP: &harness.MCPLoad{Sessions: path == pathMCP}})
		}
	case pathMCPServer:
		outside = func() time.Duration { return harness.TreeCPU(env.mcpHost.PID()) }
		front = func() time.Duration { return harness.CPUTime(env.mcpHost.PID()) }
		call := harness.MCPCallBody(harness.MCPServerName(1)+"_"+harness.MCPServerTool, []byte(`{"text":"`+mcpText+`"}`), 1)
		run = func(n int, warm bool) (harness.LoadResult, error) {
			return env.lg.Run(harness.LoadRequest{URL: env.mcpHost.URL() + mcpapi.Path, Body: call, Clients: clients, N: n, Warm: warm,
				Contains: `"text":"` + mcpText + `"`, MCP: &harness.MCPLoad{Sessions: true}})
		}
	case pathMCPGateway:
		pluginPID = env.gateway.PID()
		front = harness.SelfCPUTime
		call := harness.MCPCallBody(harness.MCPServerTool, []byte(`{"text":"`+mcpText+`"}`), 1)
		run = func(n int, warm bool) (harness.LoadResult, error) {
			return env.lg.Run(harness.LoadRequest{URL: "http://" + env.gateAddr + "/mcp", Body: call, Clients: clients, N: n, Warm: warm,
				Contains: `"text":"` + mcpText + `"`, MCP: &harness.MCPLoad{Sessions: true}})
		}
	case pathMCPStdio:
		run = func(n int, warm bool) (harness.LoadResult, error) {
			return env.lg.Run(harness.LoadRequest{Clients: clients, N: n, Warm: warm, Contains: mcpText,
				MCP: &harness.MCPLoad{Stdio: []string{env.notesBin}, Tool: harness.MCPServerTool, Args: []byte(`{"text":"` + mcpText + `"}`)}})
		}
	}
	// Warm up: one call per client at once, so that every keep-alive
	// connection exists before the clock starts.
	if _, err := run(0, true); err != nil {
		b.Fatal(err)
	}
	runtime.GC()
	var m0, m1 runtime.MemStats
	var heap *harness.HeapMeter // mcp-server: the host process's allocations, from its /metrics
	if path == pathMCPServer {
		c := harness.NewHTTPClient(1, 5*time.Second)
		defer c.CloseIdleConnections()
		var err error
		if heap, err = harness.StartHeapMeter(c, env.mcpHost.URL()); err != nil {
			b.Fatal(err)
		}
	}
	runtime.ReadMemStats(&m0)
	var front0, front1 time.Duration
	if front != nil {
		front0 = front()
	}
	self0, plug0 := harness.SelfCPUTime(), outside()
	b.ReportAllocs()
	b.ResetTimer()
	res, err := run(b.N, false)
	b.StopTimer()
	self1, plug1 := harness.SelfCPUTime(), outside()
	if front != nil {
		front1 = front()
	}
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
		allocB:    float64(m1.TotalAlloc-m0.TotalAlloc) / n,
		cpuSelf:   float64(self1-self0) / n,
		cpuPlugin: float64(plug1-plug0) / n,
	}
	if path != pathGRPC && path != pathUnix && path != pathDirect {
		r.cpuClient = float64(res.CPU) / n
	}
	switch path {
	case pathMCPServer:
		r.cpuFront = float64(front1-front0) / n
		r.cpuServer = r.cpuPlugin - r.cpuFront
	case pathMCPGateway:
		r.cpuFront = float64(front1-front0) / n
		r.cpuServer = r.cpuPlugin
	}
	if front != nil {
		b.ReportMetric(r.cpuFront/1e3, "front-cpu-µs/op")
	}
	if heap != nil {
		hc, err := heap.PerCall(b.N)
		if err != nil {
			b.Fatal(err)
		}
		r.alloc, r.allocB = hc.Mallocs, hc.Bytes
		b.ReportMetric(hc.Mallocs, "host-allocs/op")
	}
	b.ReportMetric(r.callsPerS, "calls/s")
	b.ReportMetric(float64(r.p50.Nanoseconds())/1e3, "p50-µs")
	b.ReportMetric(float64(r.p99.Nanoseconds())/1e3, "p99-µs")
	b.ReportMetric((r.cpuSelf+r.cpuPlugin)/1e3, "cpu-µs/op")
	if pluginPID > 0 || path == pathMCPServer {
		b.ReportMetric(r.cpuPlugin/1e3, "plugin-cpu-µs/op")
	}
	resultsMu.Lock()
	if _, ok := results[b]; !ok {
		order = append(order, b)
	}
	results[b] = r
	resultsMu.Unlock()
}

// pluginPIDOf returns the process id of the host's plugin name (0 when
// it has none).
func pluginPIDOf(name string) int {
	for _, p := range env.host.Plugins() {
		if p.Name == name {
			return p.PID
		}
	}
	return 0
}

func TestMain(m *testing.M) {
	if os.Getenv(loadgenEnv) == "1" {
		os.Exit(harness.ServeLoadgen(os.Stdin, os.Stdout))
	}
	if path := os.Getenv(floor.UnixEnv); path != "" {
		os.Exit(floor.ServeUnix(path))
	}
	code := m.Run()
	if len(results) > 0 || len(memRounds) > 0 || len(scaleRuns) > 0 || len(authRuns) > 0 {
		printSummary(os.Stdout)
	}
	teardown()
	os.Exit(code)
}

// agg is the median over -count runs of one case.
type agg struct {
	nsPerOp, callsPerS, alloc, allocB float64
	cpu                               float64 // CPU ns per call: this process and the plugin's
	cpuFront, cpuServer, cpuClient    float64 // result's, ns per call
	p50, p99                          time.Duration
	runs                              int
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
		f := func(get func(*result) float64) float64 { return median(rs, get) }
		out[k] = &agg{
			nsPerOp:   f(func(r *result) float64 { return r.nsPerOp }),
			callsPerS: f(func(r *result) float64 { return r.callsPerS }),
			alloc:     f(func(r *result) float64 { return r.alloc }),
			allocB:    f(func(r *result) float64 { return r.allocB }),
			cpu:       f(func(r *result) float64 { return r.cpuSelf + r.cpuPlugin }),
			cpuFront:  f(func(r *result) float64 { return r.cpuFront }),
			cpuServer: f(func(r *result) float64 { return r.cpuServer }),
			cpuClient: f(func(r *result) float64 { return r.cpuClient }),
			p50:       time.Duration(f(func(r *result) float64 { return float64(r.p50) })),
			p99:       time.Duration(f(func(r *result) float64 { return float64(r.p99) })),
			runs:      len(rs),
		}
	}
	return out
}

// Targets, each a ratio within one run (targetHop and targetP99 are
// absolute).
const (
	targetHop       = 60 * time.Microsecond // p50(host, echo 16B) - p50(host-local), 1 client
	targetCalcRatio = 1.3                   // p50(host-calc) / p50(floor-http 16B), 1 client
	targetConc16    = 0.75                  // calls/s host / floor-http, 16B, 64 clients
	targetConc64K   = 0.75                  // calls/s host / floor-stack, 64KiB, 64 clients
	targetP99       = 10 * time.Millisecond // host p99 at 64 clients

	targetMCPConc         = 0.8  // calls/s mcp / host, 16B, 64 clients (sessions and stateless)
	targetMCPP50          = 1.25 // p50 mcp / host, 16B, 1 client (sessions and stateless)
	targetMCPAlloc        = 2.0  // allocations (count and bytes) per call mcp / host, 1 client
	targetServerP50Strict = 1.5  // p50 mcp-server / floor-mcp-stdio, 1 client (the stricter goal)
	targetServerCStrict   = 0.7  // calls/s mcp-server / floor-mcp-stdio, 64 clients (the stricter goal)
	targetHopRatio        = 3.0  // plugin hop / p50 floor-unix, 1 client
)

// printSummary prints the summary of every benchmark that ran: its
// tables, then the targets table.
func printSummary(w io.Writer) {
	a := aggregate()
	get := func(size string, clients int, path string) *agg { return a[[3]string{size, fmt.Sprint(clients), path}] }
	fmt.Fprintf(w, "\n## Summary (%s)\n\n", machine())
	if len(a) > 0 {
		printCallTables(w, get)
	}
	printMemory(w)
	scale := scaleRows(scaleRuns)
	printScale(w, scale)
	printCodeMode(w)
	fmt.Fprintln(w, "Targets, each measured in this run:")
	fmt.Fprintln(w)
	fmt.Fprintln(w, "| target | measured | goal | |")
	fmt.Fprintln(w, "|---|---|---|---|")
	printMCPTargets(w, get)
	printScaleTargets(w, scale)
	printMemoryTargets(w)
	printHostTargets(w, get)
	printAuthTargets(w)
	printCodeTargets(w)
	printGatewayCPU(w, get)
	if len(a) == 0 {
		return
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

// getAgg returns the aggregate of one case (size, clients, path), nil
// when it did not run.
type getAgg func(size string, clients int, path string) *agg

// printCallTables prints BenchmarkCall's tables: sequential, concurrent,
// then MCP and the plugin hop.
func printCallTables(w io.Writer, get getAgg) {
	us := func(ns float64) string { return fmt.Sprintf("%.1f", ns/1e3) }
	dur := fmtDur
	kb := fmtKiB
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
	fmt.Fprintln(w, "MCP and the plugin hop, 16B: /opentool/call (host) against /mcp tools/call of the same echo plugin with one MCP session per client (mcp) and with --mcp-stateless; mcp-notes' repeat through the /mcp (sessions) of a real opentool-host run process (mcp-server), through a bare gateway (floor-mcp-gateway: a net/http handler forwarding each request on one stdio pipe, no host, no SDK) and from a Go SDK client calling it directly over stdio (floor-mcp-stdio); host.Call in process (no HTTP) against a raw unix-socket round trip between two processes. allocs and bytes per call: this process, the in-process host; for mcp-server the host process's, from its /metrics (go_memstats_mallocs_total and go_memstats_alloc_bytes_total, one scrape's own taken off: harness.HeapMeter); – for the gateway and the stdio floor, served by other processes. CPU of mcp-server: the host process and every process it runs, the server included.")
	fmt.Fprintln(w)
	fmt.Fprintln(w, "| path | p50, 1 client | calls/s, 64 clients (p99) | allocs/call | bytes/call | CPU µs/call, 64 clients |")
	fmt.Fprintln(w, "|---|---|---|---|---|---|")
	for _, p := range []string{pathHost, pathMCP, pathMCPStateless, pathMCPServer, pathMCPGateway, pathMCPStdio, pathDirect, pathUnix} {
		one, many := get("16B", 1, p), get("16B", conc, p)
		if one == nil && many == nil {
			continue
		}
		p50, tp, al, ab, cpu := "–", "–", "–", "–", "–"
		if one != nil {
			p50 = cell(one)
			if p != pathMCPGateway && p != pathMCPStdio {
				al = fmt.Sprintf("%.0f", one.alloc)
				ab = kb(one.allocB)
			}
		}
		if many != nil {
			tp = tput(many)
			if p != pathMCPStdio { // the server's CPU is not counted: its process is the load generator's child
				cpu = us(many.cpu)
			}
		}
		fmt.Fprintf(w, "| %s | %s | %s | %s | %s | %s |\n", p, p50, tp, al, ab, cpu)
	}
	fmt.Fprintln(w)
}

// printMCPTargets prints the MCP rows of the targets table: /mcp against
// /opentool/call, then an MCP server behind the host against the stdio
// floor and the bare gateway.
func printMCPTargets(w io.Writer, get getAgg) {
	dur := fmtDur
	kb := fmtKiB
	conc := benchClients[len(benchClients)-1]
	for _, p := range []string{pathMCP, pathMCPStateless} {
		name := "/mcp (sessions)"
		if p == pathMCPStateless {
			name = "/mcp (--mcp-stateless)"
		}
		if m, o := get("16B", 1, p), get("16B", 1, pathHost); m != nil && o != nil {
			r := float64(m.p50) / float64(o.p50)
			fmt.Fprintf(w, "| 1 client, 16B: p50 %s / p50 /opentool/call | %s / %s = %.2f× | ≤ %.2f× | %s |\n", name, dur(m.p50), dur(o.p50), r, targetMCPP50, mark(r <= targetMCPP50))
		}
		if m, o := get("16B", conc, p), get("16B", conc, pathHost); m != nil && o != nil {
			r := m.callsPerS / o.callsPerS
			fmt.Fprintf(w, "| %d clients, 16B: calls/s %s / /opentool/call | %.0f / %.0f = %.2f× | ≥ %.1f× | %s |\n", conc, name, m.callsPerS, o.callsPerS, r, targetMCPConc, mark(r >= targetMCPConc))
		}
		if m, o := get("16B", 1, p), get("16B", 1, pathHost); m != nil && o != nil {
			r := m.alloc / o.alloc
			fmt.Fprintf(w, "| allocations per call %s / /opentool/call | %.0f / %.0f = %.2f× | ≤ %.0f× | %s |\n", name, m.alloc, o.alloc, r, targetMCPAlloc, mark(r <= targetMCPAlloc))
			r = m.allocB / o.allocB
			fmt.Fprintf(w, "| bytes allocated per call %s / /opentool/call | %s / %s = %.2f× | ≤ %.0f× | %s |\n", name, kb(m.allocB), kb(o.allocB), r, targetMCPAlloc, mark(r <= targetMCPAlloc))
		}
	}
	if s, d := get("16B", 1, pathMCPServer), get("16B", 1, pathMCPStdio); s != nil && d != nil {
		r := float64(s.p50) / float64(d.p50)
		fmt.Fprintf(w, "| 1 client: p50 MCP server behind the host (/mcp) / directly over stdio | %s / %s = %.2f× | ≤ %.0f× (stricter: ≤ %.1f×) | %s; %s |\n",
			dur(s.p50), dur(d.p50), r, targetServerP50, targetServerP50Strict, mark(r <= targetServerP50), mark(r <= targetServerP50Strict))
	}
	if s, d := get("16B", conc, pathMCPServer), get("16B", conc, pathMCPStdio); s != nil && d != nil {
		r := s.callsPerS / d.callsPerS
		fmt.Fprintf(w, "| %d clients: calls/s MCP server behind the host / directly over stdio | %.0f / %.0f = %.2f× | ≥ %.1f× (stricter: ≥ %.1f×) | %s; %s |\n",
			conc, s.callsPerS, d.callsPerS, r, targetServerC, targetServerCStrict, mark(r >= targetServerC), mark(r >= targetServerCStrict))
	}
	printGatewayBound(w, get("16B", 1, pathMCPServer), get("16B", 1, pathMCPGateway), get("16B", 1, pathMCPStdio),
		get("16B", conc, pathMCPServer), get("16B", conc, pathMCPGateway), get("16B", conc, pathMCPStdio))
}

// printGatewayCPU prints, after the targets table, where a call's CPU
// goes on the two MCP gateway paths, by process: the process answering
// the HTTP request (the host process alone, or the bare gateway), the
// MCP server behind it, and the load generator; one row for 1 client and
// one for the most clients, each when both paths ran. On 2 cores the
// three share the CPU, so calls/s at 64 clients follows their sum, and a
// server or load generator serving fewer calls a second batches less and
// costs more per call.
func printGatewayCPU(w io.Writer, get getAgg) {
	us := func(ns float64) string { return fmt.Sprintf("%.0f µs", ns/1e3) }
	head := false
	for _, c := range []int{1, benchClients[len(benchClients)-1]} {
		s, g := get("16B", c, pathMCPServer), get("16B", c, pathMCPGateway)
		if s == nil || g == nil {
			continue
		}
		if !head {
			head = true
			fmt.Fprintln(w)
			fmt.Fprintln(w, "CPU per call of an MCP server's tools/call, 16B, by process: behind the host (mcp-server) / behind the bare gateway (floor-mcp-gateway); medians:")
			fmt.Fprintln(w)
			fmt.Fprintln(w, "| clients | answering HTTP: the host process / the bare gateway | the MCP server (mcp-notes) | the load generator | all three |")
			fmt.Fprintln(w, "|---|---|---|---|---|")
		}
		fmt.Fprintf(w, "| %d | %s / %s | %s / %s | %s / %s | %s / %s |\n", c,
			us(s.cpuFront), us(g.cpuFront), us(s.cpuServer), us(g.cpuServer), us(s.cpuClient), us(g.cpuClient),
			us(s.cpuFront+s.cpuServer+s.cpuClient), us(g.cpuFront+g.cpuServer+g.cpuClient))
	}
	if head {
		fmt.Fprintln(w)
	}
}

// printHostTargets prints the rows of the targets table of the plugin
// hop and of /opentool/call against its floors.
func printHostTargets(w io.Writer, get getAgg) {
	dur := fmtDur
	conc := benchClients[len(benchClients)-1]
	if d, u := get("16B", 1, pathDirect), get("16B", 1, pathUnix); d != nil && u != nil {
		r := float64(d.p50) / float64(u.p50)
		fmt.Fprintf(w, "| plugin hop, 1 client, 16B: p50 host.Call (in process) / p50 raw unix-socket round trip | %s / %s = %.2f× | ≤ %.0f× | %s |\n", dur(d.p50), dur(u.p50), r, targetHopRatio, mark(r <= targetHopRatio))
	}
	if o, l, u := get("16B", 1, pathHost), get("16B", 1, pathLocal), get("16B", 1, pathUnix); o != nil && l != nil && u != nil {
		hop := o.p50 - l.p50
		r := float64(hop) / float64(u.p50)
		fmt.Fprintf(w, "| plugin hop, 1 client, 16B: (p50 host − p50 host-local) / p50 raw unix-socket round trip | (%s − %s) / %s = %.2f× | ≤ %.0f× | %s |\n", dur(o.p50), dur(l.p50), dur(u.p50), r, targetHopRatio, mark(r <= targetHopRatio))
		fmt.Fprintf(w, "| plugin hop, 1 client, 16B: p50 host − p50 host-local | %s | ≤ %s | %s |\n", dur(hop), dur(targetHop), mark(hop <= targetHop))
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
}

// fmtKiB is b bytes as the summary prints it: whole KiB from 10 KiB, else
// one decimal.
func fmtKiB(b float64) string {
	if b >= 10<<10 {
		return fmt.Sprintf("%.0f KiB", b/1024)
	}
	return fmt.Sprintf("%.1f KiB", b/1024)
}

// fmtDur is d as the summary prints it: ms with two decimals from 1 ms,
// else whole µs.
func fmtDur(d time.Duration) string {
	if d >= time.Millisecond {
		return fmt.Sprintf("%.2f ms", float64(d)/1e6)
	}
	return fmt.Sprintf("%.0f µs", float64(d)/1e3)
}

// mark is the verdict on a target: "met" or "NOT met".
func mark(ok bool) string {
	if ok {
		return "met"
	}
	return "NOT met"
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
	gp, sdk := "go-plugin ?", "go-sdk ?"
	if b, err := os.ReadFile(filepath.Join(base.RepoRoot(), "go.mod")); err == nil {
		for _, line := range strings.Split(string(b), "\n") {
			f := strings.Fields(line)
			switch {
			case len(f) >= 2 && f[0] == "github.com/hashicorp/go-plugin":
				gp = "go-plugin " + f[1]
			case len(f) >= 2 && f[0] == "github.com/modelcontextprotocol/go-sdk":
				sdk = "go-sdk " + f[1]
			}
		}
	}
	sdk += sdkBuild()
	return fmt.Sprintf("%s/%s, %s, %d CPUs, GOMAXPROCS %d, %s, %s, %s", runtime.GOOS, runtime.GOARCH, cpu, runtime.NumCPU(), runtime.GOMAXPROCS(0), runtime.Version(), gp, sdk)
}

// sdkBuild says how this binary has the MCP Go SDK: " with
// patches/go-sdk" when its build's -modfile (GOFLAGS, the Makefile's
// default: scripts/sdk-patched.sh) replaces the SDK, " as released"
// otherwise.
func sdkBuild() string {
	for _, f := range strings.Fields(os.Getenv("GOFLAGS")) {
		if path, ok := strings.CutPrefix(f, "-modfile="); ok {
			if b, err := os.ReadFile(path); err == nil && strings.Contains(string(b), "replace github.com/modelcontextprotocol/go-sdk =>") {
				return " with patches/go-sdk"
			}
		}
	}
	return " as released (SDKPATCH=)"
}
