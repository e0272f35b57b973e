package bench

import (
	"bytes"
	"strings"
	"testing"
	"time"
)

// TestSummaryPrintsTheScaleRow feeds printSummary the scale row's cases
// of two runs, as BenchmarkMCPServerScale records them: the summary must
// print the row's table, one line per case (medians, failed calls
// summed, the most server processes), the ceiling the host's own CPU
// puts on the default-against-shared ratio, and its targets, each with
// its verdict, so that none can silently go.
func TestSummaryPrintsTheScaleRow(t *testing.T) {
	run := func(c scaleCase, callsPerS float64, failed, servers int, rssMiB int64) *scaleResult {
		return &scaleResult{c: c, callsPerS: callsPerS, p50: 700 * time.Microsecond, calls: 1000, failed: failed, servers: servers,
			treeRSSKiB: rssMiB << 10, treePSSKiB: rssMiB << 9, cpuHost: 80e3, cpuServers: 40e3, cpuClient: 70e3}
	}
	def := func(n int) scaleCase { return scaleCase{scaleDefault, n, ""} }
	shared := scaleCase{"shared", scaleCompared, ""}
	saved := scaleRuns
	defer func() { scaleRuns = saved }()
	scaleRuns = []*scaleResult{
		run(def(1), 1500, 0, 2, 60), run(def(16), 3000, 0, 17, 200), run(def(64), 2000, 7, 17, 210), run(def(256), 1900, 0, 17, 230), run(shared, 4000, 0, 1, 40),
		run(def(1), 1300, 0, 1, 58), run(def(16), 3200, 0, 17, 200), run(def(64), 2200, 0, 17, 220), run(def(256), 2100, 0, 17, 240), run(shared, 4200, 0, 1, 42),
		run(scaleCase{scaleDefault, scaleCompared, scaleWrite}, 1800, 0, 17, 250),
	}
	for _, r := range scaleRuns {
		if r.c == def(64) {
			r.cpuHost, r.cpuServers, r.cpuClient = 120e3, 100e3, 90e3
		}
	}
	var buf bytes.Buffer
	printSummary(&buf)
	out := buf.String()
	for _, want := range []string{
		"| sessions | clients | calls/s | p50 | failed calls / calls | server processes | host tree RSS (PSS) |",
		"| default | 1 | 1500 | 700 µs | 0 / 2000 | 2 | 60.0 MiB (30.0 MiB) |",
		"| default | 16 | 3200 | 700 µs | 0 / 2000 | 17 | 200.0 MiB (100.0 MiB) |",
		"| default | 64 | 2200 | 700 µs | 7 / 2000 | 17 | 220.0 MiB (110.0 MiB) |",
		"| default | 256 | 2100 | 700 µs | 0 / 2000 | 17 | 240.0 MiB (120.0 MiB) |",
		"| shared | 64 | 4200 | 700 µs | 0 / 2000 | 1 | 42.0 MiB (21.0 MiB) |",
		"| default, add_note | 64 | 1800 | 700 µs | 0 / 1000 | 17 | 250.0 MiB (125.0 MiB) |",
		`| 64 client sessions, one declared server: calls/s default mode (per-client) / "sessions": "shared" | 2200 / 4200 = 0.52× | ≥ 0.8× | NOT met |`,
		"| 64 client sessions, one declared server, default mode: failed calls | 7 of 2000 | 0 | NOT met |",
		"| 256 client sessions, one declared server, default mode: failed calls | 0 of 2000 | 0 | met |",
		"| 1 client session, one declared server, default mode: server processes | 2 | 1 | NOT met |",
		"| 1 client session, one declared server, default mode: host tree RSS (host, keeper, servers; PSS in brackets) | 60.0 MiB (30.0 MiB) | ≤ 50.0 MiB | NOT met |",
		"the default mode's servers and load generator cost 100 + 90 µs a call, against the shared mode's 190 µs for all three; with the host process costing 80 µs a call in the default mode as in the shared mode (not 120), the default mode's calls/s would be at most 190 / 270 = 0.70× the shared mode's.",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("the summary lacks %q:\n%s", want, out)
		}
	}
}

// TestSummaryPrintsTheGatewayTargets gives printGatewayBound an MCP
// server behind the host and the bare gateway: the host's own share, at
// one client and at 64, must be rows with their goals and verdicts.
func TestSummaryPrintsTheGatewayTargets(t *testing.T) {
	s, g := &agg{p50: 620 * time.Microsecond}, &agg{p50: 420 * time.Microsecond}
	sc, gc := &agg{callsPerS: 4100}, &agg{callsPerS: 4500}
	var buf bytes.Buffer
	printGatewayBound(&buf, s, g, nil, sc, gc, nil)
	wantRows(t, buf.String(),
		"| 1 client: p50 MCP server behind the host (shared) / bare gateway: the host's own share | 620 µs / 420 µs = 1.48× | ≤ 1.25× | NOT met |",
		"| 64 clients: calls/s MCP server behind the host (shared) / bare gateway: the host's own share | 4100 / 4500 = 0.91× | ≥ 0.8× | met |")
}

// wantRows fails t for each of rows that out lacks.
func wantRows(t *testing.T, out string, rows ...string) {
	t.Helper()
	for _, want := range rows {
		if !strings.Contains(out, want) {
			t.Errorf("the targets lack %q:\n%s", want, out)
		}
	}
}

// TestSummaryPrintsTheAuthTargets gives printAuthTargets the runs of
// BenchmarkMCPAuth (two of each credential, keyed by their b): the ratio
// of the medians, with its goal and verdict, and the JWKS fetches of the
// JWT runs, summed, must be rows.
func TestSummaryPrintsTheAuthTargets(t *testing.T) {
	saved := authRuns
	defer func() { authRuns = saved }()
	authRuns = map[*testing.B]authRun{
		{}: {auth: authKey, callsPerS: 3000}, {}: {auth: authKey, callsPerS: 3200},
		{}: {auth: authJWT, callsPerS: 2500, jwksFetches: 1}, {}: {auth: authJWT, callsPerS: 2600},
	}
	var buf bytes.Buffer
	printAuthTargets(&buf)
	wantRows(t, buf.String(),
		"| 64 clients, 16B: calls/s /mcp (sessions) with a JWT / with an API key | 2600 / 3200 = 0.81× | ≥ 0.9× | NOT met |",
		"| 64 clients, 16B, /mcp with a JWT: JWKS fetches from the issuer during the timed calls | 1 | 0 | NOT met |")
}

// TestSummaryPrintsTheCodeModeRow gives the summary the runs of
// BenchmarkCodeMode (two of each way and start): the table's two ways
// with their round trips, medians of wall time, bytes and host CPU, the
// starts' line, and the bytes' target with its verdict must print.
func TestSummaryPrintsTheCodeModeRow(t *testing.T) {
	saved := codeRuns
	defer func() { codeRuns = saved }()
	ms := func(f float64) time.Duration { return time.Duration(f * float64(time.Millisecond)) }
	codeRuns = map[*testing.B]codeRun{
		{}: {way: codeWayCalls, wall: ms(60), bytes: 30000, hostCPU: ms(40), roundTrips: codeChain},
		{}: {way: codeWayCalls, wall: ms(70), bytes: 30000, hostCPU: ms(50), roundTrips: codeChain},
		{}: {way: codeWayRun, wall: ms(20), bytes: 400, hostCPU: ms(10), roundTrips: 1},
		{}: {way: codeWayRun, wall: ms(30), bytes: 400, hostCPU: ms(20), roundTrips: 1},
		{}: {start: codeStartWarm, wall: ms(4.5)}, {}: {start: codeStartWarm, wall: ms(5)},
		{}: {start: codeStartCold, wall: ms(150)}, {}: {start: codeStartCold, wall: ms(170)},
	}
	var buf bytes.Buffer
	printSummary(&buf)
	wantRows(t, buf.String(),
		"| way | round trips | wall time | bytes to the client | host CPU |",
		"| tools-call | 50 | 70.00 ms | 30000 | 50.00 ms |",
		"| run_code | 1 | 30.00 ms | 400 | 20.00 ms |",
		"run_code's start (a program of 1, p50): warm runner 5.00 ms, cold runner 170.00 ms.",
		"| 50 dependent calls: bytes to the client, one run_code / 50 tools/call | 400 / 30000 = 0.013× | ≤ 0.1× | met |")
}

// TestSummaryKeepsTheTargetsTableWhole gives the summary both MCP gateway
// paths at 1 and 64 clients and the scale row's cases: every target row
// must be in the one targets table (no blank line or other table between
// its header and its last row, which a renderer would cut), and the CPU
// split by process must come after it, whole.
func TestSummaryKeepsTheTargetsTableWhole(t *testing.T) {
	savedRes, savedOrder, savedScale := results, order, scaleRuns
	defer func() { results, order, scaleRuns = savedRes, savedOrder, savedScale }()
	results, order = map[*testing.B]*result{}, nil
	for _, c := range []int{1, 64} {
		for _, p := range []string{pathMCPServer, pathMCPGateway} {
			b := &testing.B{}
			results[b] = &result{size: "16B", clients: c, path: p, callsPerS: 1000, p50: time.Millisecond, cpuFront: 100e3, cpuServer: 50e3, cpuClient: 40e3}
			order = append(order, b)
		}
	}
	scaleRuns = []*scaleResult{
		{c: scaleCase{scaleDefault, 64, ""}, callsPerS: 2000, calls: 10},
		{c: scaleCase{"shared", scaleCompared, ""}, callsPerS: 3000, calls: 10},
	}
	var buf bytes.Buffer
	printSummary(&buf)
	lines := strings.Split(buf.String(), "\n")
	head := -1
	for i, l := range lines {
		if l == "| target | measured | goal | |" {
			head = i
		}
	}
	if head < 0 {
		t.Fatalf("no targets table:\n%s", buf.String())
	}
	end := head
	for end < len(lines) && strings.HasPrefix(lines[end], "|") {
		end++
	}
	table := strings.Join(lines[head:end], "\n")
	for _, want := range []string{"bare gateway: the host's own share", `/ "sessions": "shared" | 2000 / 3000`} {
		if !strings.Contains(table, want) {
			t.Errorf("the targets table (lines %d to %d) lacks a row with %q:\n%s", head, end, want, buf.String())
		}
	}
	rest := strings.Join(lines[end:], "\n")
	if !strings.Contains(rest, "| clients | answering HTTP: the host process / the bare gateway |") || !strings.Contains(rest, "| 64 | 100 µs / 100 µs | 50 µs / 50 µs | 40 µs / 40 µs | 190 µs / 190 µs |") {
		t.Errorf("the CPU split by process is not whole after the targets table:\n%s", buf.String())
	}
}
