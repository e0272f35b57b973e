package bench

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/opentool-host/opentool-host/bench/harness"
	"github.com/opentool-host/opentool-host/testkit/base"
)

// sessionClients is how many MCP client sessions
// BenchmarkMCPServerSessions opens through one declared server of
// "sessions": "per-client" (within its default maxSessions, 16).
const sessionClients = 9

// laterCalls is how many calls each session makes after its first.
const laterCalls = 5

// BenchmarkMCPServerSessions measures the cost of per-client upstream
// sessions in a real "opentool-host run" process with one
// mcp-notes server declared per-client: sessionClients MCP client
// sessions (Go SDK, /mcp, 2025-11-25) each call notes1_add_note (scaleWrite:
// not annotated readOnlyHint, so never lent the shared session) once
// (their first call starts their own server process) and laterCalls
// times more;
// after each session's calls the host runs one server process per session
// and no other (sessionTree).
// It reports the PSS in MiB of the host's tree that each client session
// past the first adds, the servers' processes included
// (session-MiB/added-session) and the host's own part
// (host-MiB/added-session), and the p50 of the first call of a session
// against the p50 of later calls, in ms: the median over its rounds, one
// per b.Loop iteration (as many as -benchtime holds, at least one; ns/op
// is the time of a round, host start included).
func BenchmarkMCPServerSessions(b *testing.B) {
	setup(b)
	var rounds []sessionsRound
	for b.Loop() {
		rounds = append(rounds, measureSessions(b))
	}
	med := func(get func(sessionsRound) float64) float64 { return median(rounds, get) }
	b.ReportMetric(med(func(r sessionsRound) float64 { return r.sessionMiB }), "session-MiB/added-session")
	b.ReportMetric(med(func(r sessionsRound) float64 { return r.hostMiB }), "host-MiB/added-session")
	b.ReportMetric(med(func(r sessionsRound) float64 { return r.firstMs }), "first-call-p50-ms")
	b.ReportMetric(med(func(r sessionsRound) float64 { return r.laterMs }), "later-call-p50-ms")
}

// sessionsRound is what one round of BenchmarkMCPServerSessions
// measured: PSS per added client session in MiB (the host's tree and
// its servers, and the host's own part), and the p50 of first and later
// calls in ms.
type sessionsRound struct {
	sessionMiB, hostMiB, firstMs, laterMs float64
}

// measureSessions runs one round of BenchmarkMCPServerSessions: its own
// host process, stopped at the end.
func measureSessions(b *testing.B) sessionsRound {
	b.Helper()
	h := startDeclaredHost(b, harness.MCPDeclaration{})
	defer func() { _ = h.stop() }()
	p, prog := h, h.prog
	var first, later []time.Duration
	var trees []harness.TreeMemory
	ctx := context.Background()
	for i := 0; i < sessionClients; i++ {
		cs, err := mcp.NewClient(&mcp.Implementation{Name: fmt.Sprintf("bench-%d", i), Version: "1"}, nil).
			Connect(ctx, &mcp.StreamableClientTransport{Endpoint: p.URL() + "/mcp"}, &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
		if err != nil {
			b.Fatal(err)
		}
		defer cs.Close()
		for j := 0; j <= laterCalls; j++ {
			start := time.Now()
			res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: harness.MCPServerName(1) + "_" + scaleWrite, Arguments: map[string]any{"title": "session"}})
			took := time.Since(start)
			if err != nil || res.IsError {
				b.Fatalf("session %d call %d: %v %+v\n%s", i, j, err, res, p.Output())
			}
			if j == 0 {
				first = append(first, took)
			} else {
				later = append(later, took)
			}
		}
		t, err := sessionTree(p.PID(), prog, i+1)
		if err != nil {
			b.Fatalf("%v\n%s", err, p.Output())
		}
		trees = append(trees, t)
	}
	t0, tn := trees[0], trees[len(trees)-1]
	added := float64(len(trees) - 1)
	return sessionsRound{
		sessionMiB: float64(tn.OwnKiB+tn.ProgramKiB-t0.OwnKiB-t0.ProgramKiB) / added / 1024,
		hostMiB:    float64(tn.OwnKiB-t0.OwnKiB) / added / 1024,
		firstMs:    p50ms(first),
		laterMs:    p50ms(later),
	}
}

// sessionTreeWait bounds how long sessionTree waits for the shared
// session's server to park.
const sessionTreeWait = 10 * time.Second

// sessionTree returns the memory of the host's tree (root, its servers
// running prog) once it runs one server process per client session,
// sessions of them, and no other: the shared session's server, which no
// caller used, parks once the first client's own session is up, and
// sessionTree waits for its exit (base.Poll) up to sessionTreeWait.
// Errors: fewer processes, or more at the deadline; the tree cannot be
// read.
func sessionTree(root int, prog *harness.Program, sessions int) (harness.TreeMemory, error) {
	var t harness.TreeMemory
	var err error
	_, waited := base.Poll(sessionTreeWait, 20*time.Millisecond, func() bool {
		t, err = harness.TreePSS(root, prog)
		return err != nil || t.Programs <= sessions
	})
	if err == nil && (waited != nil || t.Programs != sessions) {
		err = fmt.Errorf("%d mcp-notes processes after %d client sessions, want one per session", t.Programs, sessions)
	}
	return t, err
}

// p50ms is the median of d in milliseconds.
func p50ms(d []time.Duration) float64 {
	s := slices.Clone(d)
	slices.Sort(s)
	return float64(s[len(s)/2]) / float64(time.Millisecond)
}
