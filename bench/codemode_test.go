package bench

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/opentool-host/opentool-host/bench/harness"
	"github.com/opentool-host/opentool-host/frontend/mcpapi"
	"github.com/opentool-host/opentool-host/testkit/base"
)

// The code mode row: one workflow, codeChain dependent add calls (each
// result the next call's input), two ways on one real "opentool-host
// run --code-mode" process: as codeChain MCP tools/call round trips of a
// Go SDK client over /mcp, and as one run_code whose program makes the
// same calls. Then run_code's start: a program on a warm runner and on
// a cold one (none warm: the runner process started for it).

// codeChain is the number of dependent calls of the workflow.
const codeChain = 50

// The ways of the code mode row (way=... sub-benchmarks).
const (
	codeWayCalls = "tools-call"
	codeWayRun   = "run_code"
)

// The starts of run_code measured (start=... sub-benchmarks).
const (
	codeStartWarm = "warm"
	codeStartCold = "cold"
)

// targetCodeBytes is the goal of the bytes returned to the client by
// the workflow as run_code over the same as tools/call round trips: the
// context a model reads shrinks at least tenfold.
const targetCodeBytes = 0.1

// codeProgram is the workflow as run_code's program.
var codeProgram = fmt.Sprintf("let s = 0\nfor (let i = 0; i < %d; i++) s = tools.add({a: s, b: 1}).result\ns", codeChain)

// codeRun is one timed run of a sub-benchmark of BenchmarkCodeMode: a
// way of the workflow (per workflow: wall time, bytes of the responses
// the client read, the host process's CPU) or a start (its p50).
type codeRun struct {
	way, start string
	wall       time.Duration
	bytes      float64
	hostCPU    time.Duration
	roundTrips int
}

// codeRuns are BenchmarkCodeMode's runs, the last of each b, guarded by
// resultsMu.
var codeRuns = map[*testing.B]codeRun{}

// BenchmarkCodeMode measures the code mode row on one "opentool-host
// run --code-mode" process serving the calculator: way=tools-call, one
// workflow per iteration as codeChain sequential MCP tools/call of add
// from a Go SDK client (one session); way=run_code, the same workflow as
// one run_code from the same client. Each reports ms per workflow, the
// bytes of the HTTP responses the client read (the context a model
// would read) and the host process's user+system CPU (/proc/PID/stat)
// per workflow. start=warm and start=cold report the wall time of a
// run_code of the program "1": warm, taken from the full pool; cold,
// the third of three back to back, which finds both warm runners taken
// and their replacements still starting, so that its runner starts for
// it. Each workflow's result is checked (codeChain). Run it alone with
// BENCHFLAGS='-bench CodeMode'.
func BenchmarkCodeMode(b *testing.B) {
	setup(b)
	h, runner := startCodeHost(b)
	var read atomic.Int64
	hc := &http.Client{Transport: countingTransport{http.DefaultTransport, &read}}
	ctx := context.Background()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "opentool-bench", Version: "1"}, nil).
		Connect(ctx, &mcp.StreamableClientTransport{Endpoint: h.URL() + mcpapi.Path, HTTPClient: hc}, &mcp.ClientSessionOptions{ProtocolVersion: harness.MCPProtocolVersion})
	if err != nil {
		b.Fatalf("%v\n%s", err, h.Output())
	}
	defer cs.Close()
	ways := map[string]func() (float64, error){
		codeWayCalls: func() (float64, error) {
			s := 0.0
			for range codeChain {
				res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "add", Arguments: map[string]any{"a": s, "b": 1}})
				if err != nil {
					return 0, err
				}
				if s, err = field(res, "result"); err != nil {
					return 0, err
				}
			}
			return s, nil
		},
		codeWayRun: func() (float64, error) {
			res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "run_code", Arguments: map[string]any{"code": codeProgram}})
			if err != nil {
				return 0, err
			}
			return field(res, "result")
		},
	}
	for _, way := range []string{codeWayCalls, codeWayRun} {
		b.Run("way="+way, func(b *testing.B) {
			if _, err := ways[way](); err != nil { // warm: connections, the plugin's first call
				b.Fatalf("%v\n%s", err, h.Output())
			}
			read.Store(0)
			cpu := harness.CPUTime(h.PID())
			b.ResetTimer()
			start := time.Now()
			for range b.N {
				got, err := ways[way]()
				if err != nil || got != codeChain {
					b.Fatalf("the workflow %s = %v, %v; want %d\n%s", way, got, err, codeChain, h.Output())
				}
			}
			wall := time.Since(start)
			b.StopTimer()
			r := codeRun{way: way, wall: wall / time.Duration(b.N), bytes: float64(read.Load()) / float64(b.N),
				hostCPU: (harness.CPUTime(h.PID()) - cpu) / time.Duration(b.N), roundTrips: 1}
			if way == codeWayCalls {
				r.roundTrips = codeChain
			}
			b.ReportMetric(float64(r.wall.Microseconds())/1e3, "ms/workflow")
			b.ReportMetric(r.bytes, "bytes-to-client/workflow")
			b.ReportMetric(float64(r.hostCPU.Microseconds())/1e3, "host-CPU-ms/workflow")
			recordCode(b, r)
		})
	}
	one := func() (time.Duration, error) {
		start := time.Now()
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "run_code", Arguments: map[string]any{"code": "1"}})
		took := time.Since(start)
		if err == nil {
			var v float64
			if v, err = field(res, "result"); err == nil && v != 1 {
				err = fmt.Errorf("run_code of 1 = %v", v)
			}
		}
		return took, err
	}
	for _, st := range []string{codeStartWarm, codeStartCold} {
		b.Run("start="+st, func(b *testing.B) {
			var took []time.Duration
			for range b.N {
				b.StopTimer()
				if err := waitWarm(h, runner); err != nil {
					b.Fatalf("%v\n%s", err, h.Output())
				}
				b.StartTimer()
				for i := range 3 {
					d, err := one()
					if err != nil {
						b.Fatalf("%v\n%s", err, h.Output())
					}
					if (st == codeStartWarm && i < 2) || (st == codeStartCold && i == 2) {
						took = append(took, d)
					}
				}
			}
			b.StopTimer()
			p50 := harness.Percentile(harness.SortDurations(took), 0.5)
			b.ReportMetric(float64(p50.Microseconds())/1e3, "p50-ms")
			recordCode(b, codeRun{start: st, wall: p50})
		})
	}
}

// recordCode keeps r as b's run.
func recordCode(b *testing.B, r codeRun) {
	resultsMu.Lock()
	codeRuns[b] = r
	resultsMu.Unlock()
}

// field is the number member name of a tools/call result's structured
// content. Errors: the call's isError, no such number.
func field(res *mcp.CallToolResult, name string) (float64, error) {
	raw, _ := json.Marshal(res.StructuredContent)
	if res.IsError {
		t, _ := json.Marshal(res.Content)
		return 0, fmt.Errorf("the tool's error: %s", t)
	}
	var m map[string]any
	_ = json.Unmarshal(raw, &m)
	v, ok := m[name].(float64)
	if !ok {
		return 0, fmt.Errorf("no number %q in %s", name, raw)
	}
	return v, nil
}

// waitWarm waits (up to 30 s) until the host's tree holds exactly the
// pool's two runner processes, none running a program: the pool is full.
func waitWarm(h *harness.HostProcess, runner *harness.Program) error {
	var n int
	_, err := base.Poll(30*time.Second, 5*time.Millisecond, func() bool {
		n = 0
		for _, pid := range harness.ProcTree(h.PID()) {
			if runner.Runs(pid) {
				n++
			}
		}
		return n == 2
	})
	if err != nil {
		return fmt.Errorf("the pool of code runners did not fill: %d runner processes: %w", n, err)
	}
	return nil
}

// countingTransport counts the bytes of the response bodies read
// through it.
type countingTransport struct {
	rt http.RoundTripper
	n  *atomic.Int64
}

// RoundTrip is rt's, its response body counted.
func (t countingTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := t.rt.RoundTrip(req)
	if err == nil {
		resp.Body = &countingBody{resp.Body, t.n}
	}
	return resp, err
}

// countingBody adds the bytes read from its body to n.
type countingBody struct {
	io.ReadCloser
	n *atomic.Int64
}

func (c *countingBody) Read(p []byte) (int, error) {
	k, err := c.ReadCloser.Read(p)
	c.n.Add(int64(k))
	return k, err
}

// startCodeHost starts the host of BenchmarkCodeMode ("run --code-mode"
// with this checkout's runner, serving a copy of the calculator) on a
// work folder of its own under env.tmp, waits until the calculator is
// ready, and returns it and the runner's Program (to find its
// processes). The host is stopped at the end of b.
func startCodeHost(b *testing.B) (*harness.HostProcess, *harness.Program) {
	b.Helper()
	work, err := os.MkdirTemp(env.tmp, "code-host-")
	if err != nil {
		b.Fatal(err)
	}
	plugins := filepath.Join(work, "plugins")
	var runnerBin string
	if err = os.Mkdir(plugins, 0o755); err == nil {
		_, err = harness.CopyExecutable(filepath.Join(env.tmp, "plugins", "opentool-plugin-calculator"), filepath.Join(plugins, "opentool-plugin-calculator"))
	}
	if err == nil {
		runnerBin, err = base.Build("./cmd/opentool-host-coderunner", work)
	}
	var runner *harness.Program
	if err == nil {
		runner, err = harness.NewProgram(runnerBin)
	}
	if err != nil {
		b.Fatal(err)
	}
	h, err := harness.StartHostProcess(env.hostBin, harness.HostOptions{Dir: plugins, StateDir: filepath.Join(work, "state"),
		Args: []string{"--code-mode", "--code-runner", runnerBin}})
	if err != nil {
		b.Fatal(err)
	}
	stopAtEnd(b, h, "BenchmarkCodeMode")
	hc := harness.NewHTTPClient(1, 10*time.Second)
	defer hc.CloseIdleConnections()
	if _, err := harness.WaitHealthy(h, hc, 1, 30*time.Second); err != nil {
		b.Fatalf("%v\n%s", err, h.Output())
	}
	return h, runner
}

// printCodeMode prints the code mode row's table (medians of the runs
// of each way and start) when BenchmarkCodeMode ran.
func printCodeMode(w io.Writer) {
	calls, run, warm, cold := codeRunsOf(codeWayCalls, ""), codeRunsOf(codeWayRun, ""), codeRunsOf("", codeStartWarm), codeRunsOf("", codeStartCold)
	if len(calls) == 0 || len(run) == 0 {
		return
	}
	c, r := codeMedian(calls), codeMedian(run)
	fmt.Fprintf(w, "Code mode: one workflow of %d dependent add calls (each result the next input) from a Go SDK client over /mcp, "+
		"as %d tools/call round trips and as one run_code; bytes: the HTTP responses the client read; host CPU: the host process's "+
		"user+system (/proc, 10 ms ticks, per workflow).\n\n", codeChain, codeChain)
	fmt.Fprintln(w, "| way | round trips | wall time | bytes to the client | host CPU |")
	fmt.Fprintln(w, "|---|---|---|---|---|")
	for _, x := range []codeRun{c, r} {
		fmt.Fprintf(w, "| %s | %d | %s | %.0f | %s |\n", x.way, x.roundTrips, fmtDur(x.wall), x.bytes, fmtDur(x.hostCPU))
	}
	fmt.Fprintln(w)
	if len(warm) > 0 && len(cold) > 0 {
		fmt.Fprintf(w, "run_code's start (a program of 1, p50): warm runner %s, cold runner %s.\n\n", fmtDur(codeMedian(warm).wall), fmtDur(codeMedian(cold).wall))
	}
}

// printCodeTargets prints the code mode row's targets: the bytes to the
// client of run_code over those of the round trips (targetCodeBytes).
func printCodeTargets(w io.Writer) {
	calls, run := codeRunsOf(codeWayCalls, ""), codeRunsOf(codeWayRun, "")
	if len(calls) == 0 || len(run) == 0 {
		return
	}
	c, r := codeMedian(calls), codeMedian(run)
	ratio := r.bytes / c.bytes
	fmt.Fprintf(w, "| %d dependent calls: bytes to the client, one run_code / %d tools/call | %.0f / %.0f = %.3f× | ≤ %.1f× | %s |\n",
		codeChain, codeChain, r.bytes, c.bytes, ratio, targetCodeBytes, mark(ratio <= targetCodeBytes))
}

// codeRunsOf is the runs of way (or of start), in no order.
func codeRunsOf(way, start string) []codeRun {
	var out []codeRun
	for _, r := range codeRuns {
		if r.way == way && r.start == start {
			out = append(out, r)
		}
	}
	return out
}

// codeMedian is the run whose wall time is the median of rs (the
// upper one of an even count), its bytes and CPU the medians of theirs.
func codeMedian(rs []codeRun) codeRun {
	m := rs[0]
	m.wall = time.Duration(median(rs, func(r codeRun) float64 { return float64(r.wall) }))
	m.bytes = median(rs, func(r codeRun) float64 { return r.bytes })
	m.hostCPU = time.Duration(median(rs, func(r codeRun) float64 { return float64(r.hostCPU) }))
	return m
}
