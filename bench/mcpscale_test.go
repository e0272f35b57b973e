package bench

import (
	"fmt"
	"io"
	"testing"
	"time"

	"github.com/opentool-host/opentool-host/bench/harness"
	"github.com/opentool-host/opentool-host/frontend/mcpapi"
)

// The scale row: many MCP clients of one declared server. One mcp-notes
// declared in the plugins folder of a fresh "opentool-host run" process
// per case, its repeat (or, in one case, its add_note) called by N MCP
// client sessions, each a Go SDK client of the host's /mcp in the load
// generator.

// scaleCase is one case of the scale row: how the server is declared,
// how many MCP client sessions call it, and which of its tools.
type scaleCase struct {
	// sessions is the declaration's "sessions": scaleDefault (the field
	// left out: per-client, maxSessions 16) or "shared".
	sessions string
	clients  int
	// tool is the mcp-notes tool called: "" for harness.MCPServerTool
	// (repeat, annotated readOnlyHint: a client without a session of
	// its own is lent the shared session), scaleWrite for add_note (not
	// annotated: each client its own session, as many as there are
	// places).
	tool string
}

// scaleWrite is the tool of the scale row's writing case: add_note,
// which changes what the server keeps.
const scaleWrite = "add_note"

// label is c's "sessions" column: the mode, and the tool when it is not
// repeat.
func (c scaleCase) label() string {
	if c.tool == "" {
		return c.sessions
	}
	return c.sessions + ", " + c.tool
}

// scaleDefault names the default mode in the scale cases: a declaration
// with none of the session fields (per-client, the default maxSessions
// and sharedIdle: a shared session no caller used parks as soon as a
// client has a session of its own).
const scaleDefault = "default"

// scaleCases are the cases of the scale row, in the order they run and
// print: the default mode at 1, 16, 64 and 256 client sessions, the same
// server declared shared at scaleCompared, and the default mode at
// scaleCompared calling scaleWrite (a process per client up to
// maxSessions).
var scaleCases = []scaleCase{
	{scaleDefault, 1, ""}, {scaleDefault, 16, ""}, {scaleDefault, scaleCompared, ""}, {scaleDefault, 256, ""},
	{"shared", scaleCompared, ""}, {scaleDefault, scaleCompared, scaleWrite},
}

// scaleCompared is the number of client sessions at which the default
// mode is compared with the shared one.
const scaleCompared = 64

// The scale row's targets, each within one run.
const (
	targetScaleShared  = 0.8      // calls/s default / shared, scaleCompared clients
	targetScaleServers = 1        // server processes for one client, default mode
	targetScaleRSS     = 50 << 10 // KiB of RSS of the host's tree (servers included), one declared server, one client, default mode
)

// scaleResult is what one case measured in one run of
// BenchmarkMCPServerScale (one -count).
type scaleResult struct {
	c scaleCase
	// callsPerS (successful calls only) and p50 are of the run's
	// final b.N.
	callsPerS float64
	p50       time.Duration
	// calls and failed count every call of the run, its warm-ups and
	// every b.N tried included; failure is the first failed one's
	// message.
	calls, failed int
	failure       string
	// servers is the number of processes running mcp-notes in the
	// host's tree after the final b.N, clients still connected.
	servers int
	// treeRSSKiB is the RSS of the host's whole tree then (host, keeper,
	// servers), summed over its processes, in KiB; treePSSKiB its PSS,
	// which counts the pages its processes share (the host's and the
	// keeper's program) once.
	treeRSSKiB, treePSSKiB int64
	// cpuHost, cpuServers and cpuClient are CPU ns per successful call of
	// the run's final b.N: the host process alone, the rest of its tree
	// (the servers, and the idle keeper), and the load generator.
	cpuHost, cpuServers, cpuClient float64
}

// scaleRuns holds every run of every case, in run order.
var scaleRuns []*scaleResult

// BenchmarkMCPServerScale measures the scale row: for each of
// scaleCases, and for each of its runs (-count), a fresh "opentool-host
// run" process declaring one mcp-notes (notes1.mcp.json), and that many
// Go SDK client sessions of its /mcp (MCPLoad.SDK, one per client, in
// the load generator) calling notes1_repeat. It reports calls/s
// (successful ones), the p50, the failed calls (an error or isError) of
// the run, the processes running mcp-notes in the host's tree and the
// tree's RSS and PSS in MiB.
func BenchmarkMCPServerScale(b *testing.B) {
	setup(b)
	for _, c := range scaleCases {
		runScaleCase(b, c)
	}
}

// scaleRun is one run of a scale case: its host and what it measured.
type scaleRun struct {
	b   *testing.B // the sub-benchmark of the run (one per -count)
	h   *declaredHost
	url string // the host's /mcp
	r   *scaleResult
}

// runScaleCase runs case c as a sub-benchmark of b; each of its runs
// (a new *testing.B per -count, which go test calls with growing b.N)
// has a host process of its own, stopped, its sessions ended, when the
// next run starts or the case ends.
func runScaleCase(b *testing.B, c scaleCase) {
	var run *scaleRun
	defer func() { run.end(b) }()
	b.Run(scaleName(c), func(b *testing.B) {
		if run == nil || run.b != b {
			run.end(b)
			run = nil
			run = startScaleRun(b, c)
		}
		run.load(b, 0, true) // every client connects and calls once before the clock starts
		host0, tree0 := harness.CPUTime(run.h.PID()), harness.TreeCPU(run.h.PID())
		b.ResetTimer()
		res := run.load(b, b.N, false)
		b.StopTimer()
		host1, tree1 := harness.CPUTime(run.h.PID()), harness.TreeCPU(run.h.PID())
		run.measure(b, res, host1-host0, (tree1-tree0)-(host1-host0))
	})
}

// startScaleRun starts the host of a run of c for the sub-benchmark b
// and adds the run to scaleRuns.
func startScaleRun(b *testing.B, c scaleCase) *scaleRun {
	var d harness.MCPDeclaration
	if c.sessions != scaleDefault {
		d.Sessions = c.sessions
	}
	h := startDeclaredHost(b, d)
	run := &scaleRun{b: b, h: h, url: h.URL() + mcpapi.Path, r: &scaleResult{c: c}}
	scaleRuns = append(scaleRuns, run.r)
	return run
}

// load makes n calls (warm: one per client) on the run's host and adds
// them to the run's counts; an error that is not a failed call (the load
// generator gone) fails b.
func (run *scaleRun) load(b *testing.B, n int, warm bool) harness.LoadResult {
	r := run.r
	tool, args := harness.MCPServerTool, `{"text":"`+mcpText+`"}`
	if r.c.tool == scaleWrite {
		tool, args = scaleWrite, `{"title":"`+mcpText+`"}`
	}
	res, err := env.lg.Run(harness.LoadRequest{URL: run.url, Clients: r.c.clients, N: n, Warm: warm, Contains: mcpText,
		MCP: &harness.MCPLoad{SDK: true, Tool: harness.MCPServerName(1) + "_" + tool, Args: []byte(args)}})
	if err != nil {
		b.Fatalf("%v\n%s", err, run.h.Output())
	}
	r.calls += res.Calls
	r.failed += res.Failed
	if r.failure == "" {
		r.failure = res.Failure
	}
	return res
}

// measure records res (the measured calls), the CPU time the host
// process and the rest of its tree used meanwhile (host, servers), and
// the host's tree, clients still connected, and reports them on b.
func (run *scaleRun) measure(b *testing.B, res harness.LoadResult, host, servers time.Duration) {
	t, err := harness.TreePSS(run.h.PID(), run.h.prog)
	if err != nil {
		b.Fatal(err)
	}
	r := run.r
	r.callsPerS = float64(res.Calls-res.Failed) / res.Elapsed.Seconds()
	r.p50 = res.P50
	r.servers = t.Programs
	r.treeRSSKiB = t.OwnRSSKiB + t.ProgramRSSKiB
	r.treePSSKiB = t.OwnKiB + t.ProgramKiB
	if ok := float64(res.Calls - res.Failed); ok > 0 {
		r.cpuHost, r.cpuServers, r.cpuClient = float64(host)/ok, float64(servers)/ok, float64(res.CPU)/ok
	}
	b.ReportMetric(r.cpuHost/1e3, "host-cpu-µs/op")
	b.ReportMetric(r.cpuServers/1e3, "servers-cpu-µs/op")
	b.ReportMetric(r.callsPerS, "calls/s")
	b.ReportMetric(float64(res.P50.Nanoseconds())/1e3, "p50-µs")
	b.ReportMetric(float64(r.failed), "failed-calls")
	b.ReportMetric(float64(r.servers), "server-procs")
	b.ReportMetric(float64(r.treeRSSKiB)/1024, "tree-RSS-MiB")
	b.ReportMetric(float64(r.treePSSKiB)/1024, "tree-PSS-MiB")
}

// end ends the run, when there is one: the load generator ends its
// sessions, then its host stops (an unclean stop is an error of b).
func (run *scaleRun) end(b *testing.B) {
	if run == nil {
		return
	}
	_, _ = env.lg.Run(harness.LoadRequest{URL: run.url, Close: true})
	if err := run.h.stop(); err != nil {
		b.Errorf("the host of %s: %v\n%s", scaleName(run.r.c), err, run.h.Output())
	}
}

// scaleName is the sub-benchmark name of c.
func scaleName(c scaleCase) string {
	if c.tool != "" {
		return fmt.Sprintf("sessions=%s/clients=%d/tool=%s", c.sessions, c.clients, c.tool)
	}
	return fmt.Sprintf("sessions=%s/clients=%d", c.sessions, c.clients)
}

// scaleRow is one case of the scale row over every run: the median of
// calls/s, p50 and tree RSS, the sum of calls and failed calls, the most
// server processes.
type scaleRow struct {
	scaleResult
	runs int
}

// scaleRows aggregates runs by case, in scaleCases order; a case that
// did not run is left out.
func scaleRows(runs []*scaleResult) []scaleRow {
	var out []scaleRow
	for _, c := range scaleCases {
		var rs []*scaleResult
		for _, r := range runs {
			if r.c == c {
				rs = append(rs, r)
			}
		}
		if len(rs) == 0 {
			continue
		}
		row := scaleRow{scaleResult: scaleResult{c: c}, runs: len(rs)}
		med := func(get func(*scaleResult) float64) float64 { return median(rs, get) }
		row.callsPerS = med(func(r *scaleResult) float64 { return r.callsPerS })
		row.p50 = time.Duration(med(func(r *scaleResult) float64 { return float64(r.p50) }))
		row.treeRSSKiB = int64(med(func(r *scaleResult) float64 { return float64(r.treeRSSKiB) }))
		row.treePSSKiB = int64(med(func(r *scaleResult) float64 { return float64(r.treePSSKiB) }))
		row.cpuHost = med(func(r *scaleResult) float64 { return r.cpuHost })
		row.cpuServers = med(func(r *scaleResult) float64 { return r.cpuServers })
		row.cpuClient = med(func(r *scaleResult) float64 { return r.cpuClient })
		for _, r := range rs {
			row.calls += r.calls
			row.failed += r.failed
			row.servers = max(row.servers, r.servers)
			if row.failure == "" {
				row.failure = r.failure
			}
		}
		out = append(out, row)
	}
	return out
}

// findScale returns the row of c in rows, nil when it did not run.
func findScale(rows []scaleRow, c scaleCase) *scaleRow {
	for i := range rows {
		if rows[i].c == c {
			return &rows[i]
		}
	}
	return nil
}

// printScale prints the scale row's table (nothing when no case ran).
func printScale(w io.Writer, rows []scaleRow) {
	if len(rows) == 0 {
		return
	}
	fmt.Fprintf(w, "Many clients, one server: one mcp-notes declared in a fresh opentool-host run process per run of each case, in the default mode (no \"sessions\": per-client, maxSessions 16, sharedIdle 30 s: a shared session no caller used parks once a client has its own) or \"sessions\": \"shared\", its repeat (annotated readOnlyHint: in the default mode a client without a session of its own is lent the shared session) called by N MCP client sessions (Go SDK clients of /mcp, one session per client, in the load generator), or its add_note (\"default, add_note\": a session of its own per client, as many as there are places, the rest served by the shared session). calls/s counts successful calls (median of %d run(s)); failed calls: an error or isError, of every call of the case (warm-ups included); server processes: those running mcp-notes in the host's tree at the end of a run, clients connected (the most of any run); host tree RSS: the host, its keeper and the servers, summed (their PSS in brackets: shared pages counted once; medians); CPU per call: of the host process, of the rest of its tree (the servers; the keeper is idle) and of the load generator, per successful call (medians; on 2 cores the three share the CPU, so calls/s follows their sum).\n\n", rows[0].runs)
	fmt.Fprintln(w, "| sessions | clients | calls/s | p50 | failed calls / calls | server processes | host tree RSS (PSS) | CPU per call: host / servers / load generator |")
	fmt.Fprintln(w, "|---|---|---|---|---|---|---|---|")
	for _, r := range rows {
		fmt.Fprintf(w, "| %s | %d | %.0f | %s | %d / %d | %d | %s (%s) | %.0f / %.0f / %.0f µs |\n", r.c.label(), r.c.clients, r.callsPerS, fmtDur(r.p50), r.failed, r.calls, r.servers,
			mib(float64(r.treeRSSKiB)), mib(float64(r.treePSSKiB)), r.cpuHost/1e3, r.cpuServers/1e3, r.cpuClient/1e3)
	}
	printScaleCeiling(w, rows)
	for _, r := range rows {
		if r.failure != "" {
			fmt.Fprintf(w, "\nFirst failed call, %s: %.300s\n", scaleName(r.c), r.failure)
		}
	}
	fmt.Fprintln(w)
}

// printScaleCeiling prints, when both cases of the default-against-shared
// target ran and measured their CPU, how far the host alone could move
// that ratio: with the host process costing a call in the default mode
// what it costs in the shared mode, and the servers and the load generator
// what they cost in the default mode, the default mode's calls/s would be
// at most the shared mode's CPU per call (all three) over that sum, on
// 2 cores where calls/s follows the sum.
func printScaleCeiling(w io.Writer, rows []scaleRow) {
	def, shared := findScale(rows, scaleCase{scaleDefault, scaleCompared, ""}), findScale(rows, scaleCase{"shared", scaleCompared, ""})
	if def == nil || shared == nil || def.cpuServers == 0 || shared.cpuHost == 0 {
		return
	}
	sharedSum := shared.cpuHost + shared.cpuServers + shared.cpuClient
	best := shared.cpuHost + def.cpuServers + def.cpuClient
	fmt.Fprintf(w, "\nThe host's own share at %d client sessions: the default mode's servers and load generator cost %.0f + %.0f µs a call, against the shared mode's %.0f µs for all three; "+
		"with the host process costing %.0f µs a call in the default mode as in the shared mode (not %.0f), the default mode's calls/s would be at most %.0f / %.0f = %.2f× the shared mode's.\n",
		scaleCompared, def.cpuServers/1e3, def.cpuClient/1e3, sharedSum/1e3, shared.cpuHost/1e3, def.cpuHost/1e3, sharedSum/1e3, best/1e3, sharedSum/best)
}

// printScaleTargets prints the scale row's rows of the targets table; a
// row whose cases did not run is left out.
func printScaleTargets(w io.Writer, rows []scaleRow) {
	def, shared := findScale(rows, scaleCase{scaleDefault, scaleCompared, ""}), findScale(rows, scaleCase{"shared", scaleCompared, ""})
	if def != nil && shared != nil {
		r := def.callsPerS / shared.callsPerS
		fmt.Fprintf(w, "| %d client sessions, one declared server: calls/s default mode (per-client) / \"sessions\": \"shared\" | %.0f / %.0f = %.2f× | ≥ %.1f× | %s |\n",
			scaleCompared, def.callsPerS, shared.callsPerS, r, targetScaleShared, mark(r >= targetScaleShared))
	}
	for _, n := range []int{scaleCompared, 256} {
		if d := findScale(rows, scaleCase{scaleDefault, n, ""}); d != nil {
			fmt.Fprintf(w, "| %d client sessions, one declared server, default mode: failed calls | %d of %d | 0 | %s |\n", n, d.failed, d.calls, mark(d.failed == 0))
		}
	}
	if d := findScale(rows, scaleCase{scaleDefault, 1, ""}); d != nil {
		fmt.Fprintf(w, "| 1 client session, one declared server, default mode: server processes | %d | %d | %s |\n", d.servers, targetScaleServers, mark(d.servers <= targetScaleServers))
		fmt.Fprintf(w, "| 1 client session, one declared server, default mode: host tree RSS (host, keeper, servers; PSS in brackets) | %s (%s) | ≤ %s | %s |\n",
			mib(float64(d.treeRSSKiB)), mib(float64(d.treePSSKiB)), mib(targetScaleRSS), mark(d.treeRSSKiB <= targetScaleRSS))
	}
}
