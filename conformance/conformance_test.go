package conformance

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/opentool-host/opentool-host/internal/testutil"
)

// The runs through the host, as known-failures.txt names them.
const (
	targetHost      = "host"           // opentool-host run (sessions, the default)
	targetStateless = "host+stateless" // opentool-host run --mcp-stateless
)

// specVersion is the MCP revision whose scenarios the suite runs.
const specVersion = "2025-11-25"

// suiteTimeout bounds one run of the suite (it takes about a second).
const suiteTimeout = 3 * time.Minute

// TestConformance runs the MCP conformance suite's server scenarios against
// the Go MCP SDK's everything-server directly, then through the host's /mcp
// (with everything.mcp.json declaring the same server, run over stdio by the
// host's adapter), with sessions (the default) and --mcp-stateless, logs the table of checks
// (also written to $CONFORMANCE_REPORT when set) and holds every run through
// the host to the direct one with known-failures.txt as the exceptions.
func TestConformance(t *testing.T) {
	root := testutil.RepoRoot(t)
	suite := newSuite(t, filepath.Join(root, "conformance"))
	known, err := ReadKnownFailures(filepath.Join(root, "conformance", "known-failures.txt"), []string{targetHost, targetStateless})
	if err != nil {
		t.Fatal(err)
	}

	tmp := t.TempDir()
	start := time.Now()
	everything := goBuild(t, root, tmp, "everything-server", "github.com/modelcontextprotocol/go-sdk/conformance/everything-server")
	host := goBuild(t, root, tmp, "opentool-host", "./cmd/opentool-host")
	t.Logf("built the everything-server and the host in %v", time.Since(start).Round(time.Millisecond))

	columns := []string{"direct"}
	targets := []string{""}
	var runs []Run

	// (a) Directly. -stateless=false as the SDK's own conformance script
	// runs it: server-to-client requests (sampling, elicitation) need a
	// session.
	addr := testutil.FreeAddr(t)
	startEverything(t, everything, addr)
	runs = append(runs, suite.run(t, "direct", "http://"+addr+"/mcp"))
	direct := runs[0]
	if c := direct.Checks["server-initialize"]; !c.Passed() || direct.Passed() < 10 {
		t.Fatalf("the suite against the everything-server directly: server-initialize %s, %d checks passed: the baseline is broken (see the suite's output above)", c.Status, direct.Passed())
	}

	// (b) Through the host, and (c) with --mcp-stateless.
	plugins := filepath.Join(tmp, "plugins")
	declare(t, plugins, everything)
	hostRuns := [][]string{{targetHost}, {targetStateless, "--mcp-stateless"}}
	for _, hr := range hostRuns {
		name := hr[0]
		h := startHost(t, host, plugins, filepath.Join(tmp, "state-"+strconv.Itoa(len(runs))), hr[1:]...)
		run := suite.run(t, name, h.url+"/mcp")
		h.stop(t)
		columns = append(columns, name)
		targets = append(targets, name)
		runs = append(runs, run)
	}

	table := Table(columns, runs)
	t.Logf("MCP conformance (suite %s, spec %s, scenarios: all), %v in all:\n%s", suite.version, specVersion, time.Since(start).Round(time.Millisecond), table)
	if path := os.Getenv("CONFORMANCE_REPORT"); path != "" {
		report := "MCP conformance: @modelcontextprotocol/conformance " + suite.version + ", spec " + specVersion +
			", the Go MCP SDK's everything-server directly and through opentool-host's /mcp\n\n" + table
		if err := os.WriteFile(path, []byte(report), 0o644); err != nil {
			t.Errorf("CONFORMANCE_REPORT: %v", err)
		} else {
			t.Logf("table written to %s", path)
		}
	}
	for i := 1; i < len(runs); i++ {
		for _, p := range Compare(direct, runs[i], targets[i], known) {
			t.Error(p)
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

// hasFlag reports whether `bin run --help` mentions flag.
func hasFlag(t *testing.T, bin, flag string) bool {
	t.Helper()
	out, err := exec.Command(bin, "run", "--help").CombinedOutput()
	if err != nil {
		t.Fatalf("%s run --help: %v\n%s", bin, err, out)
	}
	return strings.Contains(string(out), flag+" ")
}

// declare writes dir/everything.mcp.json declaring server everything as
// the binary bin (over stdio).
func declare(t *testing.T, dir, bin string) {
	t.Helper()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	decl := `{"mcpServers": {"everything": {"command": ` + strconv.Quote(bin) + `}}}` + "\n"
	if err := os.WriteFile(filepath.Join(dir, "everything.mcp.json"), []byte(decl), 0o644); err != nil {
		t.Fatal(err)
	}
}
