package conformance

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

// writeChecks writes dir/server-SCENARIO-TIMESTAMP/checks.json.
func writeChecks(t *testing.T, dir, scenario, checks string) {
	t.Helper()
	d := filepath.Join(dir, "server-"+scenario+"-2026-01-02T03-04-05-678Z")
	if err := os.MkdirAll(d, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(d, "checks.json"), []byte(checks), 0o644); err != nil {
		t.Fatal(err)
	}
}

func TestReadRun(t *testing.T) {
	dir := t.TempDir()
	writeChecks(t, dir, "tools-list", `[{"id":"tools-list","status":"SUCCESS"}]`)
	writeChecks(t, dir, "sse", `[
		{"id":"outgoing-request","status":"INFO"},
		{"id":"sse-session","status":"WARNING","details":{"message":"no session"}},
		{"id":"shared","status":"SUCCESS"}]`)
	writeChecks(t, dir, "other", `[{"id":"shared","status":"FAILURE","errorMessage":"boom"}]`)
	output := strings.Join([]string{
		"=== Running scenario: tools-list ===",
		"=== Running scenario: broken ===",
		"Failed to run scenario broken: Error: connect ECONNREFUSED",
		"=== Running scenario: sse ===",
		"=== Running scenario: other ===",
	}, "\n")
	run, err := ReadRun(dir, output)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"tools-list", "broken", "sse-session", "sse/shared", "other/shared"}
	if !reflect.DeepEqual(run.Names, want) {
		t.Fatalf("names = %q, want %q", run.Names, want)
	}
	if c := run.Checks["broken"]; c.Status != StatusFailure || c.Message != "failed to run: Error: connect ECONNREFUSED" {
		t.Errorf("broken = %+v", c)
	}
	if c := run.Checks["sse-session"]; c.Status != StatusWarning || c.Message != "no session" {
		t.Errorf("sse-session = %+v", c)
	}
	if c := run.Checks["other/shared"]; c.Passed() || c.Message != "boom" {
		t.Errorf("other/shared = %+v", c)
	}
	if run.Passed() != 2 || run.Count(StatusFailure) != 2 {
		t.Errorf("passed %d, failed %d; want 2, 2", run.Passed(), run.Count(StatusFailure))
	}
}

// TestFloor: the suite's Total line (the last one) is read with the run,
// and Floor holds a run to it, not to the table's count.
func TestFloor(t *testing.T) {
	dir := t.TempDir()
	writeChecks(t, dir, "tools-list", `[{"id":"tools-list","status":"SUCCESS"},{"id":"tools-list","status":"SUCCESS"}]`)
	output := "=== Running scenario: tools-list ===\nTotal: 1 passed, 9 failed\n=== SUMMARY ===\nTotal: 2 passed, 0 failed\n"
	run, err := ReadRun(dir, output)
	if err != nil {
		t.Fatal(err)
	}
	if want := (Total{Passed: 2, Found: true}); run.Total != want || run.Passed() != 1 {
		t.Fatalf("Total %+v, Passed %d; want %+v, 1", run.Total, run.Passed(), want)
	}
	if p := Floor(run, targetHost, 2); p != "" {
		t.Errorf("Floor 2: %s, want none", p)
	}
	if p := Floor(run, targetHost, 3); !strings.Contains(p, "2 passed by the suite's Total line (1 by the table), below the floor of 3") {
		t.Errorf("Floor 3: %q", p)
	}
	run.Total = Total{}
	if p := Floor(run, targetStateless, 1); !strings.Contains(p, "no \"Total: N passed, M failed\" line") {
		t.Errorf("Floor without a Total line: %q", p)
	}
}

func TestReadKnownFailures(t *testing.T) {
	targets := []string{"host", "host+stateless"}
	write := func(text string) string {
		p := filepath.Join(t.TempDir(), "known-failures.txt")
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	known, err := ReadKnownFailures(write("# comment\n\na  # why a\nb host  # why b\n"), targets)
	if err != nil {
		t.Fatal(err)
	}
	want := []KnownFailure{{Check: "a", Targets: []string{}, Reason: "why a", Line: 3, File: "known-failures.txt"}, {Check: "b", Targets: []string{"host"}, Reason: "why b", Line: 4, File: "known-failures.txt"}}
	if !reflect.DeepEqual(known, want) {
		t.Fatalf("known = %+v, want %+v", known, want)
	}
	if !known[0].AppliesTo("host+stateless") || known[1].AppliesTo("host+stateless") {
		t.Errorf("AppliesTo: %+v", known)
	}
	for text, fault := range map[string]string{
		"a\n":                                    "has no",
		"a #\n":                                  "has no",
		"a elsewhere # why\n":                    "unknown target",
		"a # why\na host # again\n":              "listed for host already",
		"# why\n   # only a reason\n":            "",
		"a host # why\na host+stateless # why\n": "",
	} {
		_, err := ReadKnownFailures(write(text), targets)
		if fault == "" && err != nil || fault != "" && (err == nil || !strings.Contains(err.Error(), fault)) {
			t.Errorf("%q: error %v, want one with %q", text, err, fault)
		}
	}
}

func TestCompare(t *testing.T) {
	mk := func(statuses map[string]string) Run {
		r := Run{Checks: map[string]Check{}}
		for _, n := range []string{"a", "b", "c", "d", "e"} {
			if s, ok := statuses[n]; ok {
				r.Names = append(r.Names, n)
				r.Checks[n] = Check{ID: n, Status: s}
			}
		}
		return r
	}
	direct := mk(map[string]string{"a": StatusSuccess, "b": StatusSuccess, "c": StatusSuccess, "d": StatusSuccess, "e": StatusWarning})
	via := mk(map[string]string{"a": StatusSuccess, "b": StatusFailure, "c": StatusSuccess, "e": StatusFailure})
	known := []KnownFailure{
		{Check: "c", Reason: "was broken", Line: 1, File: "known-failures.txt"}, // passes now
		{Check: "d", Reason: "absent", Line: 2, File: "known-failures.txt"},     // fails (absent): fine
		{Check: "e", Reason: "not direct", Line: 3, File: "known-failures.txt"}, // does not pass directly
		{Check: "b", Targets: []string{"other"}, Line: 4},                       // not for this target
	}
	got := Compare(direct, via, "host", known)
	want := []string{
		"b passes directly but not through the host (host): FAILURE",
		"c now passes through the host (host): remove it from known-failures.txt (line 1: was broken)",
		"known-failures.txt:3 lists e for host, which does not pass against the everything-server directly (WARNING): remove it",
	}
	if len(got) != len(want) {
		t.Fatalf("problems:\n%s\nwant %d", strings.Join(got, "\n"), len(want))
	}
	for i := range want {
		if !strings.HasPrefix(got[i], want[i]) {
			t.Errorf("problem %d = %q, want it to start with %q", i, got[i], want[i])
		}
	}
	if p := Compare(direct, via, "other", known[3:]); len(p) != 1 || !strings.HasPrefix(p[0], "d passes directly") {
		t.Errorf("target other: %q", p)
	}

	table := Table([]string{"direct", "host"}, []Run{direct, via})
	for _, line := range []string{"check  direct   host", "d      pass     -", "host: 2 passed, 2 failed, 0 warnings, 1 of 5 checks absent"} {
		if !strings.Contains(table, line+"\n") {
			t.Errorf("table lacks %q:\n%s", line, table)
		}
	}
}

// TestBest: a check passes in the best of runs when it passes in any of
// them; checks only a later run has come after the first run's.
func TestBest(t *testing.T) {
	stateful := Run{Names: []string{"a", "b", "c"}, Checks: map[string]Check{
		"a": {ID: "a", Status: StatusSuccess}, "b": {ID: "b", Status: StatusFailure, Message: "stateful"}, "c": {ID: "c", Status: StatusWarning}}}
	stateless := Run{Names: []string{"b", "d", "c"}, Checks: map[string]Check{
		"b": {ID: "b", Status: StatusSuccess}, "d": {ID: "d", Status: StatusFailure}, "c": {ID: "c", Status: StatusFailure, Message: "stateless"}}}
	best := Best(stateful, stateless)
	if want := []string{"a", "b", "c", "d"}; !reflect.DeepEqual(best.Names, want) {
		t.Fatalf("names = %q, want %q", best.Names, want)
	}
	for name, want := range map[string]string{"a": StatusSuccess, "b": StatusSuccess, "c": StatusWarning, "d": StatusFailure} {
		if got := best.Checks[name].Status; got != want {
			t.Errorf("%s: %s, want %s", name, got, want)
		}
	}
	if best.Passed() != 2 {
		t.Errorf("passed %d, want 2", best.Passed())
	}
}

func TestExpect(t *testing.T) {
	run := Run{Names: []string{"ok", "listed", "listed-passes", "unlisted", "skipped", "stateless-only"}, Checks: map[string]Check{
		"ok":             {Status: StatusSuccess},
		"listed":         {Status: StatusFailure},
		"listed-passes":  {Status: StatusSuccess},
		"unlisted":       {Status: StatusWarning, Message: "no retry"},
		"skipped":        {Status: StatusSkipped},
		"stateless-only": {Status: StatusFailure},
	}}
	known := []KnownFailure{
		{Check: "listed", Reason: "r", Line: 1, File: "k.txt"},
		{Check: "listed-passes", Reason: "r", Line: 2, File: "k.txt"},
		{Check: "absent", Reason: "r", Line: 3, File: "k.txt"},
		{Check: "stateless-only", Targets: []string{targetStateless}, Reason: "r", Line: 4, File: "k.txt"},
	}
	got := Expect(run, targetHost, known)
	want := []string{"listed-passes now passes", "k.txt:3 lists absent", "unlisted fails (host): WARNING no retry", "stateless-only fails (host)"}
	if len(got) != len(want) {
		t.Fatalf("Expect = %q, want %d problems", got, len(want))
	}
	for i, w := range want {
		if !strings.Contains(got[i], w) {
			t.Errorf("problem %d = %q, want it to contain %q", i, got[i], w)
		}
	}
	if got := Expect(run, targetStateless, known[3:]); len(got) != 2 {
		t.Errorf("Expect(host+stateless) = %q, want listed and unlisted as unlisted failures only", got)
	}
}
