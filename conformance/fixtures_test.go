package conformance

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/opentool-host/opentool-host/testkit"
)

// fixturesEdition is the suite TestConformanceFixtures runs: the
// prerelease, every scenario (as editions[1]).
var fixturesEdition = editions[1]

// fixturesTaskAfter is the host's --task-after in TestConformanceFixtures:
// well inside the suite's slow_compute of 1 s (the default, 1 s, races it)
// and well above a call of 0 s.
const fixturesTaskAfter = 400 * time.Millisecond

// TestConformanceFixtures runs the prerelease suite (--suite all) against
// the host serving its own fixtures (testdata/fixtures built as
// opentool-plugin-fixtures: the suite's tools, resources and prompts as a
// Go SDK plugin), with sessions (the default) and with --mcp-stateless.
// There is no baseline: every check must pass but those listed for the
// run in known-failures-fixtures.txt, each of which must fail (Expect).
// The table is logged (and appended to $CONFORMANCE_REPORT when set).
func TestConformanceFixtures(t *testing.T) {
	t.Parallel()
	root := testkit.RepoRoot(t)
	dir := filepath.Join(root, "conformance")
	s := newSuite(t, dir, fixturesEdition)
	known, err := ReadKnownFailures(filepath.Join(dir, "known-failures-fixtures.txt"), []string{targetHost, targetStateless})
	if err != nil {
		t.Fatal(err)
	}

	tmp := t.TempDir()
	start := time.Now()
	plugins := filepath.Join(tmp, "plugins")
	if err := os.MkdirAll(plugins, 0o755); err != nil {
		t.Fatal(err)
	}
	goBuild(t, root, plugins, "opentool-plugin-fixtures", "./conformance/testdata/fixtures")
	host := goBuild(t, root, tmp, "opentool-host", "./cmd/opentool-host")
	t.Logf("built the fixtures plugin and the host in %v", time.Since(start).Round(time.Millisecond))

	targets := [][]string{{targetHost}, {targetStateless, "--mcp-stateless"}}
	runs := make([]Run, len(targets))
	for i, tr := range targets {
		// A call that allows a task is one after fixturesTaskAfter: the
		// suite's slow_compute of 1 s is a task, that of 0 s is not.
		flags := append([]string{"--task-after", fixturesTaskAfter.String()}, tr[1:]...)
		h := startHost(t, host, plugins, filepath.Join(tmp, "state-"+tr[0]), "fixtures", flags...)
		runs[i] = s.run(t, tr[0], h.url+"/mcp")
		h.stop(t)
	}
	table := Table([]string{targetHost, targetStateless}, runs)
	t.Logf("MCP conformance, suite %s (%s) against the host's own fixtures, %v in all:\n%s", s.version, strings.Join(s.args, " "), time.Since(start).Round(time.Millisecond), table)
	if path := os.Getenv("CONFORMANCE_REPORT"); path != "" {
		report := fmt.Sprintf("MCP conformance: @modelcontextprotocol/conformance %s (%s), opentool-host's /mcp serving its own fixtures (conformance/testdata/fixtures)\n\n%s\n", s.version, strings.Join(s.args, " "), table)
		if err := appendFile(path, report); err != nil {
			t.Errorf("CONFORMANCE_REPORT: %v", err)
		}
	}
	for i, tr := range targets {
		for _, p := range Expect(runs[i], tr[0], known) {
			t.Errorf("suite %s, fixtures: %s", s.version, p)
		}
	}
}

// appendFile appends text to the file at path, creating it.
func appendFile(path, text string) error {
	f, err := os.OpenFile(path, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
	if err != nil {
		return err
	}
	_, err = f.WriteString(text)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}
