package conformance

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/opentool-host/opentool-host/testkit"
)

// The runs through the host, as the known-failures files name them.
const (
	targetHost      = "host"           // opentool-host run (sessions, the default)
	targetStateless = "host+stateless" // opentool-host run --mcp-stateless
)

// edition is one version of the suite that make test runs, each with its
// own known failures.
type edition struct {
	// pkg is its folder under node_modules (package.json's name for it).
	pkg string
	// args select its scenarios (after server --url URL -o DIR).
	args []string
	// known is its known-failures file, in this folder.
	known string
	// stateless also runs it against the everything-server without
	// sessions, the baseline of the runs through the host that serve
	// requests without a session (see TestConformance).
	stateless bool
	// floor is the fewest checks each run through the host (sessions and
	// --mcp-stateless) must pass by the suite's own Total line (Floor);
	// 0: none.
	floor int
}

// editions are the suite's versions: 0.1.16, MCP 2025-11-25's scenarios
// (active and pending); and the 0.2.0-alpha.12 prerelease, every
// scenario of every revision (2025-03-26 to 2026-07-28) and extension,
// active, pending and draft.
var editions = []edition{
	{pkg: "@modelcontextprotocol/conformance", args: []string{"--spec-version", "2025-11-25", "--suite", "all"}, known: "known-failures.txt"},
	{pkg: "conformance-next", args: []string{"--suite", "all"}, known: "known-failures-next.txt", stateless: true, floor: passedFloor},
}

// passedFloor is the fewest checks the prerelease must pass with the
// everything-server behind the host, in both modes: at least 172,
// counted by the suite's own Total line (Run.Total: every check of
// every scenario). The table's
// count (Run.Passed: a check repeated within a scenario once) is lower:
// 186 with sessions, 168 with --mcp-stateless when this was written. The
// stateless table lacks, beside the session checks (server-session-*,
// server-sse-streams-functional, server-accepts-multiple-post-streams),
// tools-call-sampling, tools-call-elicitation, elicitation-sep1034-* and
// elicitation-sep1330-*: scenarios of 2025-06-18 to 2025-11-25 only
// (removed in 2026-07-28), whose server asks the client during a call.
// A 2025 client declares sampling and elicitation at initialize, which a
// server without sessions does not keep, and answers on a later POST
// that any replica may get: without a session that revision gives the
// server neither the right to ask nor a way to get the answer, and the
// everything-server run stateless fails them too (its 2026-07-28
// counterparts, input-required-result-*, pass through the host).
const passedFloor = 172

// suiteTimeout bounds one run of the suite (it takes a few seconds).
const suiteTimeout = 3 * time.Minute

// TestConformance runs each edition of the MCP conformance suite's server
// scenarios against the Go MCP SDK's everything-server directly (with
// sessions, and for an edition with 2026-07-28 scenarios also stateless),
// then through the host's /mcp (with everything.mcp.json declaring the
// same server, served by the host's MCP client) with sessions (the
// default) and --mcp-stateless, logs each edition's table of checks (also
// written to $CONFORMANCE_REPORT when set) and holds every run through
// the host to its baseline with the edition's known failures as the
// exceptions. The baseline of --mcp-stateless is the stateless server
// when there is one; that of sessions is the best of both servers (the
// host speaks the revisions with sessions and 2026-07-28 without): a
// check either passes must pass through the host. An edition with a
// floor (passedFloor) also needs that many passed, by the suite's own
// Total line, in both runs through the host.
func TestConformance(t *testing.T) {
	root := testkit.RepoRoot(t)
	dir := filepath.Join(root, "conformance")
	suites := make([]*suite, len(editions))
	known := make([][]KnownFailure, len(editions))
	for i, e := range editions {
		suites[i] = newSuite(t, dir, e)
		k, err := ReadKnownFailures(filepath.Join(dir, e.known), []string{targetHost, targetStateless})
		if err != nil {
			t.Fatal(err)
		}
		known[i] = k
	}

	tmp := t.TempDir()
	start := time.Now()
	everything := goBuild(t, root, tmp, "everything-server", "github.com/modelcontextprotocol/go-sdk/conformance/everything-server")
	host := goBuild(t, root, tmp, "opentool-host", "./cmd/opentool-host")
	t.Logf("built the everything-server and the host in %v", time.Since(start).Round(time.Millisecond))

	// runs[i] are edition i's runs by column.
	runs := make([]map[string]Run, len(editions))
	for i := range runs {
		runs[i] = map[string]Run{}
	}
	each := func(column, url string, only func(edition) bool) {
		for i, s := range suites {
			if only(s.edition) {
				runs[i][column] = s.run(t, column, url)
			}
		}
	}
	all := func(edition) bool { return true }

	// (a) Directly. -stateless=false as the SDK's own conformance script
	// runs it: server-to-client requests (sampling, elicitation) need a
	// session. Then stateless, for the editions with 2026-07-28.
	addr := testkit.FreeAddr(t)
	startEverything(t, everything, addr, false)
	each("direct", "http://"+addr+"/mcp", all)
	for i, s := range suites {
		if c := runs[i]["direct"].Checks["server-initialize"]; !c.Passed() || runs[i]["direct"].Passed() < 10 {
			t.Fatalf("suite %s against the everything-server directly: server-initialize %s, %d checks passed: the baseline is broken (see the suite's output above)", s.version, c.Status, runs[i]["direct"].Passed())
		}
	}
	addr = testkit.FreeAddr(t)
	startEverything(t, everything, addr, true)
	each("direct-stateless", "http://"+addr+"/mcp", func(e edition) bool { return e.stateless })

	// (b) Through the host, and (c) with --mcp-stateless.
	plugins := filepath.Join(tmp, "plugins")
	declare(t, plugins, everything)
	for n, hr := range [][]string{{targetHost}, {targetStateless, "--mcp-stateless"}} {
		h := startHost(t, host, plugins, filepath.Join(tmp, "state-"+strconv.Itoa(n)), "everything", hr[1:]...)
		each(hr[0], h.url+"/mcp", all)
		h.stop(t)
	}

	var report strings.Builder
	for i, s := range suites {
		columns := []string{"direct", "direct-stateless", targetHost, targetStateless}
		if !s.stateless {
			columns = slices.Delete(columns, 1, 2)
		}
		ordered := make([]Run, len(columns))
		for j, c := range columns {
			ordered[j] = runs[i][c]
		}
		table := Table(columns, ordered)
		t.Logf("MCP conformance, suite %s (%s), %v in all so far:\n%s", s.version, strings.Join(s.args, " "), time.Since(start).Round(time.Millisecond), table)
		fmt.Fprintf(&report, "MCP conformance: @modelcontextprotocol/conformance %s (%s), the Go MCP SDK's everything-server directly and through opentool-host's /mcp\n\n%s\n", s.version, strings.Join(s.args, " "), table)

		baseline := map[string]Run{targetHost: runs[i]["direct"], targetStateless: runs[i]["direct"]}
		if s.stateless {
			baseline[targetHost] = Best(runs[i]["direct"], runs[i]["direct-stateless"])
			baseline[targetStateless] = runs[i]["direct-stateless"]
		}
		for _, target := range []string{targetHost, targetStateless} {
			for _, p := range Compare(baseline[target], runs[i][target], target, known[i]) {
				t.Errorf("suite %s: %s", s.version, p)
			}
			if p := Floor(runs[i][target], target, s.floor); s.floor > 0 && p != "" {
				t.Errorf("suite %s: %s", s.version, p)
			}
		}
	}
	if path := os.Getenv("CONFORMANCE_REPORT"); path != "" {
		if err := os.WriteFile(path, []byte(report.String()), 0o644); err != nil {
			t.Errorf("CONFORMANCE_REPORT: %v", err)
		} else {
			t.Logf("tables written to %s", path)
		}
	}
}

// goBuild builds pkg (from the module root) into dir/name.
func goBuild(t *testing.T, root, dir, name, pkg string) string {
	t.Helper()
	bin := filepath.Join(dir, name)
	cmd := exec.Command("go", "build", "-o", bin, pkg)
	cmd.Dir = root
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build -o %s %s: %v\n%s", bin, pkg, err, out)
	}
	return bin
}

// declare writes dir/everything.mcp.json declaring server everything as
// the binary bin (over stdio), with up to 64 client sessions of its own
// (maxSessions): the suite never ends a session (no DELETE), so each
// scenario's stays until it idles out, and --suite all of 0.2.0-alpha.12
// has more scenarios that call a tool or subscribe than the default 16.
func declare(t *testing.T, dir, bin string) {
	t.Helper()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	decl := `{"mcpServers": {"everything": {"command": ` + strconv.Quote(bin) + `, "maxSessions": 64}}}` + "\n"
	if err := os.WriteFile(filepath.Join(dir, "everything.mcp.json"), []byte(decl), 0o644); err != nil {
		t.Fatal(err)
	}
}
