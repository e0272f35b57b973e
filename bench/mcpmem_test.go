package bench

import (
	"fmt"
	"io"
	"sort"
	"sync"
	"testing"
	"time"

	"github.com/opentool-host/opentool-host/bench/harness"
)

// The memory an MCP server costs the host: a real
// opentool-host run process with N mcp-notes servers declared, the PSS of
// its process tree without the servers against the servers' own.

// mcpServerCounts are the numbers of MCP servers one round measures, in
// this order; the first is the baseline the others are compared with.
var mcpServerCounts = []int{1, 10, 50}

// The targets of an MCP server behind the host, each against a floor of
// the same run.
const (
	targetServerPSS  = 3 << 10 // KiB of PSS each added MCP server may cost the host's process tree beyond the server's own
	targetKeeperRSS  = 4 << 10 // KiB of RSS of the host's keeper (the small keeper program; the host's binary as keeper holds ~30 MiB)
	targetServerP50  = 2.0     // p50 mcp-server / floor-mcp-stdio, 1 client (the stricter goal: targetServerP50Strict)
	targetServerC    = 0.6     // calls/s mcp-server / floor-mcp-stdio, 64 clients (the stricter goal: targetServerCStrict)
	targetGatewayP50 = 1.25    // p50 mcp-server / floor-mcp-gateway, 1 client
	targetGatewayC   = 0.8     // calls/s mcp-server / floor-mcp-gateway, 64 clients
)

var (
	memMu     sync.Mutex
	memRounds [][]harness.MCPServersMemory // one slice per round, in mcpServerCounts order
)

// BenchmarkMCPServerMemory measures rounds, one per b.Loop iteration
// (as many as -benchtime holds, at least one): for each count of
// mcpServerCounts in turn, a host process started with that many MCP
// servers, measured once ready (harness.MeasureMCPServers), then
// stopped. ns/op is the time of a round. It reports the last round's
// host's tree PSS per added server and the servers' own per server, and
// the keeper's RSS with one server, in MiB; the summary takes the median of every round.
func BenchmarkMCPServerMemory(b *testing.B) {
	setup(b)
	var round []harness.MCPServersMemory
	for b.Loop() {
		round = make([]harness.MCPServersMemory, 0, len(mcpServerCounts))
		for _, n := range mcpServerCounts {
			m, err := harness.MeasureMCPServers(env.hostBin, env.notesBin, env.tmp, n)
			if err != nil {
				b.Fatal(err)
			}
			round = append(round, m)
		}
		memMu.Lock()
		memRounds = append(memRounds, round)
		memMu.Unlock()
	}
	first, last := round[0], round[len(round)-1]
	b.ReportMetric(addedKiB(first, last)/1024, "host-MiB/added-server")
	b.ReportMetric(float64(last.Tree.ProgramKiB)/float64(last.Servers)/1024, "server-MiB/server")
	b.ReportMetric(float64(first.KeeperRSSKiB)/1024, "keeper-RSS-MiB")
}

// addedKiB is the PSS in KiB of the host's process tree, servers
// excluded, that each server beyond base's adds in m.
func addedKiB(base, m harness.MCPServersMemory) float64 {
	return float64(m.Tree.OwnKiB-base.Tree.OwnKiB) / float64(m.Servers-base.Servers)
}

// memoryMedians returns, for each count of mcpServerCounts, the median
// over the rounds of each figure (nil when no round ran).
func memoryMedians() []harness.MCPServersMemory {
	memMu.Lock()
	defer memMu.Unlock()
	if len(memRounds) == 0 {
		return nil
	}
	out := make([]harness.MCPServersMemory, len(mcpServerCounts))
	for i, n := range mcpServerCounts {
		med := func(get func(harness.MCPServersMemory) int64) int64 {
			v := make([]int64, len(memRounds))
			for r, round := range memRounds {
				v[r] = get(round[i])
			}
			sort.Slice(v, func(a, b int) bool { return v[a] < v[b] })
			return v[len(v)/2]
		}
		out[i] = harness.MCPServersMemory{
			Servers: n,
			Tree: harness.TreeMemory{
				OwnKiB:     med(func(m harness.MCPServersMemory) int64 { return m.Tree.OwnKiB }),
				Own:        int(med(func(m harness.MCPServersMemory) int64 { return int64(m.Tree.Own) })),
				ProgramKiB: med(func(m harness.MCPServersMemory) int64 { return m.Tree.ProgramKiB }),
				Programs:   int(med(func(m harness.MCPServersMemory) int64 { return int64(m.Tree.Programs) })),
			},
			Ready:        time.Duration(med(func(m harness.MCPServersMemory) int64 { return int64(m.Ready) })),
			KeeperRSSKiB: med(func(m harness.MCPServersMemory) int64 { return m.KeeperRSSKiB }),
		}
	}
	return out
}

// mib formats KiB as MiB.
func mib(kib float64) string { return fmt.Sprintf("%.1f MiB", kib/1024) }

// printMemory prints the table of the memory rounds (nothing when none
// ran).
func printMemory(w io.Writer) {
	ms := memoryMedians()
	if ms == nil {
		return
	}
	fmt.Fprintf(w, "MCP servers behind a real opentool-host run process: N mcp-notes servers declared (notesI.mcp.json), measured once all are ready and each has answered one call of its repeat tool; PSS from /proc/PID/smaps_rollup of the host's process tree, the processes running mcp-notes counted apart; the keeper's RSS (VmRSS) apart too (median of %d round(s)).\n\n", len(memRounds))
	fmt.Fprintln(w, "| MCP servers | ready in | host's processes | host's tree PSS, servers excluded | servers' PSS | servers' PSS per server | keeper's RSS |")
	fmt.Fprintln(w, "|---|---|---|---|---|---|---|")
	for _, m := range ms {
		fmt.Fprintf(w, "| %d | %.2f s | %d | %s | %s | %s | %s |\n", m.Servers, m.Ready.Seconds(), m.Tree.Own,
			mib(float64(m.Tree.OwnKiB)), mib(float64(m.Tree.ProgramKiB)), mib(float64(m.Tree.ProgramKiB)/float64(m.Tree.Programs)), mib(float64(m.KeeperRSSKiB)))
	}
	fmt.Fprintln(w)
}

// printMemoryTargets prints the rows of the targets table for the memory
// each added MCP server costs.
func printMemoryTargets(w io.Writer) {
	ms := memoryMedians()
	if ms == nil {
		return
	}
	base := ms[0]
	fmt.Fprintf(w, "| the host's keeper, %d MCP server: RSS (the small keeper program beside the host) | %s | ≤ %s | %s |\n",
		base.Servers, mib(float64(base.KeeperRSSKiB)), mib(targetKeeperRSS), mark(base.KeeperRSSKiB >= 0 && base.KeeperRSSKiB <= targetKeeperRSS))
	for _, m := range ms[1:] {
		added := addedKiB(base, m)
		own := float64(m.Tree.ProgramKiB) / float64(m.Tree.Programs)
		fmt.Fprintf(w, "| each added MCP server, %d vs %d: host's tree PSS (servers excluded) per added server; × the server's own PSS | (%s − %s) / %d = %s; %.1f× %s | ≤ %s | %s |\n",
			m.Servers, base.Servers, mib(float64(m.Tree.OwnKiB)), mib(float64(base.Tree.OwnKiB)), m.Servers-base.Servers, mib(added), added/own, mib(own),
			mib(targetServerPSS), mark(added <= targetServerPSS))
	}
}

// printGatewayBound prints, as rows of the targets table, what the bare
// gateway (floor-mcp-gateway) shows of the two speed targets of an MCP
// server behind the host: the gateway against the stdio floor under the
// same goals (what any gateway adds, with no host and no SDK in it: the
// bound of the two rows above), then the host against the gateway (the
// host's own share: targetGatewayP50, targetGatewayC). s, g and d are mcp-server, the
// gateway and the stdio floor at one client, sc, gc and dc at 64; a row
// whose cases did not run is left out.
func printGatewayBound(w io.Writer, s, g, d, sc, gc, dc *agg) {
	dur := fmtDur
	if g != nil && d != nil {
		r := float64(g.p50) / float64(d.p50)
		fmt.Fprintf(w, "| 1 client: p50 bare gateway (no host, no SDK) / directly over stdio: what any gateway adds | %s / %s = %.2f× | ≤ %.0f× (the host's goal) | the bare gateway: %s |\n",
			dur(g.p50), dur(d.p50), r, targetServerP50, mark(r <= targetServerP50))
	}
	if gc != nil && dc != nil {
		r := gc.callsPerS / dc.callsPerS
		fmt.Fprintf(w, "| 64 clients: calls/s bare gateway / directly over stdio: what any gateway adds | %.0f / %.0f = %.2f× | ≥ %.1f× (the host's goal) | the bare gateway: %s |\n",
			gc.callsPerS, dc.callsPerS, r, targetServerC, mark(r >= targetServerC))
	}
	if s != nil && g != nil {
		r := float64(s.p50) / float64(g.p50)
		fmt.Fprintf(w, "| 1 client: p50 MCP server behind the host (shared) / bare gateway: the host's own share | %s / %s = %.2f× | ≤ %.2f× | %s |\n",
			dur(s.p50), dur(g.p50), r, targetGatewayP50, mark(r <= targetGatewayP50))
	}
	if sc != nil && gc != nil {
		r := sc.callsPerS / gc.callsPerS
		fmt.Fprintf(w, "| 64 clients: calls/s MCP server behind the host (shared) / bare gateway: the host's own share | %.0f / %.0f = %.2f× | ≥ %.1f× | %s |\n",
			sc.callsPerS, gc.callsPerS, r, targetGatewayC, mark(r >= targetGatewayC))
	}
}
