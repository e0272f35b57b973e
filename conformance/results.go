// Package conformance measures the host's /mcp against the official MCP
// conformance suite (npm @modelcontextprotocol/conformance, pinned by
// package-lock.json here and installed by scripts/deps-conformance.sh).
//
// conformance_test.go runs each edition of the suite (0.1.16, and the
// 0.2.0-alpha.12 prerelease installed as conformance-next) against the Go
// MCP SDK's everything-server directly (streamable HTTP, with sessions, and
// stateless for the prerelease), then against the host's /mcp serving that
// same server declared as everything.mcp.json, with sessions (the default)
// and with --mcp-stateless. Every check that passes directly (in the
// baseline of that run, Best of the direct runs for sessions) must pass
// through the host, but for those listed in the edition's known-failures
// file (known-failures.txt, known-failures-next.txt), which must fail
// there: the lists only shrink.
//
// fixtures_test.go runs the prerelease against the host serving its own
// fixtures (testdata/fixtures: the suite's tools, resources and prompts as
// a Go SDK plugin, opentool-plugin-fixtures), with sessions and with
// --mcp-stateless. There is no baseline: every check must pass (Expect)
// but those listed in known-failures-fixtures.txt, which must fail.
//
// This file reads what the suite writes and compares the runs.
package conformance

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
)

// The statuses of a check in the suite's checks.json.
const (
	// StatusSuccess is a check that passed.
	StatusSuccess = "SUCCESS"
	// StatusFailure is a check that failed.
	StatusFailure = "FAILURE"
	// StatusWarning is a recommendation not followed (the suite's exit
	// code counts it as a failure; its summary does not).
	StatusWarning = "WARNING"
	// StatusSkipped is a check the suite found not applicable (e.g. an
	// extension the server does not declare); neither passed nor failed.
	StatusSkipped = "SKIPPED"
	// StatusInfo is a record of what was sent or received, not a check.
	StatusInfo = "INFO"
	// StatusMissing is not the suite's: the check did not appear in a run
	// (its scenario failed to run, or stopped early).
	StatusMissing = "MISSING"
)

// Check is one check of one scenario in one run of the suite.
type Check struct {
	// Scenario is the suite's scenario, e.g. "tools-call-image".
	Scenario string
	// ID is the check's id in checks.json, e.g. "tools-call-image".
	ID string
	// Status is the check's status (StatusSuccess, StatusFailure, ...).
	Status string
	// Message is the check's errorMessage, or details.message.
	Message string
}

// Passed reports whether c passed.
func (c Check) Passed() bool { return c.Status == StatusSuccess }

// Run is the checks of one run of the suite, in the order the suite ran
// them, by name (Names).
type Run struct {
	// Names are the check names in the suite's order.
	Names []string
	// Checks are the checks by name.
	Checks map[string]Check
	// Total is the suite's own count of the run, from its "Total: N
	// passed, M failed" line (zero when the output has none). It counts
	// every check of every scenario, a check repeated within a scenario
	// each time, so it is at least Passed.
	Total Total
}

// Total is the suite's own count of a run (its summary's Total line).
type Total struct {
	// Passed and Failed are the checks the suite counted as passed and
	// as failed.
	Passed, Failed int
	// Found is whether the output had the line.
	Found bool
}

// Passed returns how many checks of r passed.
func (r Run) Passed() int {
	n := 0
	for _, c := range r.Checks {
		if c.Passed() {
			n++
		}
	}
	return n
}

// Count returns how many checks of r have status.
func (r Run) Count(status string) int {
	n := 0
	for _, c := range r.Checks {
		if c.Status == status {
			n++
		}
	}
	return n
}

var (
	scenarioLine = regexp.MustCompile(`(?m)^=== Running scenario: (\S+) ===$`)
	totalLine    = regexp.MustCompile(`(?m)^Total: (\d+) passed, (\d+) failed`)
	resultDir    = regexp.MustCompile(`^server-(.+)-\d{4}-\d{2}-\d{2}T[\d-]+Z$`)
)

// ReadRun reads one run of `conformance server -o dir`: the checks.json of
// each scenario folder (server-SCENARIO-TIMESTAMP) in dir, in the order of
// the "=== Running scenario: NAME ===" lines of output (the suite's
// stdout and stderr). A scenario that ran but wrote no folder failed to run
// (the suite writes none then): it gets one check named after it, failed,
// with the suite's "Failed to run scenario NAME: ..." line as its message.
// INFO records are left out. A check is named by its id, or
// SCENARIO/ID when another scenario of the run has the same id.
func ReadRun(dir, output string) (Run, error) {
	folders := map[string]string{}
	entries, err := os.ReadDir(dir)
	if err != nil && !os.IsNotExist(err) {
		return Run{}, err
	}
	var extra []string
	for _, e := range entries {
		if m := resultDir.FindStringSubmatch(e.Name()); e.IsDir() && m != nil {
			folders[m[1]] = filepath.Join(dir, e.Name())
			extra = append(extra, m[1])
		}
	}
	var order []string
	seen := map[string]bool{}
	for _, m := range scenarioLine.FindAllStringSubmatch(output, -1) {
		if !seen[m[1]] {
			seen[m[1]] = true
			order = append(order, m[1])
		}
	}
	sort.Strings(extra) // folders the output did not name, if any, last
	for _, s := range extra {
		if !seen[s] {
			seen[s] = true
			order = append(order, s)
		}
	}

	var checks []Check
	for _, scenario := range order {
		folder, ok := folders[scenario]
		if !ok {
			checks = append(checks, Check{Scenario: scenario, ID: scenario, Status: StatusFailure, Message: failedToRun(output, scenario)})
			continue
		}
		c, err := readChecks(folder, scenario)
		if err != nil {
			return Run{}, err
		}
		checks = append(checks, c...)
	}
	return runOf(checks, readTotal(output)), nil
}

// readChecks reads the checks of scenario from the checks.json in folder,
// the scenario's results folder; INFO records are left out.
func readChecks(folder, scenario string) ([]Check, error) {
	b, err := os.ReadFile(filepath.Join(folder, "checks.json"))
	if err != nil {
		return nil, err
	}
	var raw []struct {
		ID           string `json:"id"`
		Status       string `json:"status"`
		ErrorMessage string `json:"errorMessage"`
		Details      struct {
			Message string `json:"message"`
		} `json:"details"`
	}
	if err := json.Unmarshal(b, &raw); err != nil {
		return nil, fmt.Errorf("%s: %v", filepath.Join(folder, "checks.json"), err)
	}
	var checks []Check
	for _, c := range raw {
		if c.Status == StatusInfo {
			continue
		}
		msg := c.ErrorMessage
		if msg == "" {
			msg = c.Details.Message
		}
		checks = append(checks, Check{Scenario: scenario, ID: c.ID, Status: c.Status, Message: msg})
	}
	return checks, nil
}

// runOf is the Run of checks, in their order: a check is named by its
// id, or SCENARIO/ID when another scenario has the same id; the first of
// the same id twice in one scenario is kept.
func runOf(checks []Check, total Total) Run {
	scenariosOf := map[string]map[string]bool{}
	for _, c := range checks {
		if scenariosOf[c.ID] == nil {
			scenariosOf[c.ID] = map[string]bool{}
		}
		scenariosOf[c.ID][c.Scenario] = true
	}
	run := Run{Checks: map[string]Check{}, Total: total}
	for _, c := range checks {
		name := c.ID
		if len(scenariosOf[c.ID]) > 1 {
			name = c.Scenario + "/" + c.ID
		}
		if _, dup := run.Checks[name]; dup {
			continue
		}
		run.Names = append(run.Names, name)
		run.Checks[name] = c
	}
	return run
}

// ReadClientRun reads the runs of `conformance client --scenario S -o
// DIR`, one per scenario (scenarios[i]'s in dirs[i]: the folder of S in
// it, as the suite names it, S-TIMESTAMP: auth/NAME-TIMESTAMP in auth/ for
// auth/NAME), as one Run: a scenario without
// results is one failed check named after it, with why from outputs[i],
// the suite's output. Total counts the checks read.
func ReadClientRun(scenarios, dirs, outputs []string) (Run, error) {
	var checks []Check
	for i, scenario := range scenarios {
		// The suite writes auth/NAME's checks under auth/ (NAME-time).
		folders, _ := filepath.Glob(filepath.Join(dirs[i], scenario+"-*"))
		if len(folders) == 0 {
			checks = append(checks, Check{Scenario: scenario, ID: scenario, Status: StatusFailure, Message: failedToRun(outputs[i], scenario)})
			continue
		}
		c, err := readChecks(folders[0], scenario)
		if err != nil {
			return Run{}, err
		}
		checks = append(checks, c...)
	}
	run := runOf(checks, Total{})
	for _, c := range checks {
		if c.Passed() {
			run.Total.Passed++
		} else if c.Status == StatusFailure {
			run.Total.Failed++
		}
	}
	return run, nil
}

// readTotal reads the suite's Total line of output (the last one).
func readTotal(output string) Total {
	m := totalLine.FindAllStringSubmatch(output, -1)
	if len(m) == 0 {
		return Total{}
	}
	last := m[len(m)-1]
	passed, _ := strconv.Atoi(last[1]) // \d+: digits
	failed, _ := strconv.Atoi(last[2])
	return Total{Passed: passed, Failed: failed, Found: true}
}

// Floor holds run, named target, to a floor of min passed checks by the
// suite's own Total line: it returns the problem, or "" when run has the
// line and at least min passed there.
func Floor(run Run, target string, min int) string {
	switch {
	case !run.Total.Found:
		return fmt.Sprintf("%s: the suite wrote no \"Total: N passed, M failed\" line; the floor of %d passed cannot be checked", target, min)
	case run.Total.Passed < min:
		return fmt.Sprintf("%s: %d passed by the suite's Total line (%d by the table), below the floor of %d", target, run.Total.Passed, run.Passed(), min)
	}
	return ""
}

// failedToRun returns the suite's reason for scenario failing to run.
func failedToRun(output, scenario string) string {
	prefix := "Failed to run scenario " + scenario + ":"
	for _, line := range strings.Split(output, "\n") {
		if rest, ok := strings.CutPrefix(line, prefix); ok {
			return "failed to run:" + rest
		}
	}
	return "failed to run (no results written)"
}

// KnownFailure is one line of known-failures.txt: a check that passes
// against the everything-server directly but fails through the host.
type KnownFailure struct {
	// Check is the check's name (see ReadRun).
	Check string
	// Targets are the runs it fails in ("host", "host+stateless"); none
	// means every run through the host.
	Targets []string
	// Reason is the text after "#".
	Reason string
	// Line is the line number in the file.
	Line int
	// File is the file's base name.
	File string
}

// AppliesTo reports whether k holds for target.
func (k KnownFailure) AppliesTo(target string) bool {
	if len(k.Targets) == 0 {
		return true
	}
	for _, t := range k.Targets {
		if t == target {
			return true
		}
	}
	return false
}

// ReadKnownFailures parses path: one check a line, "CHECK [TARGET...] #
// reason", where TARGET is one of targets (none: all of them). Blank lines
// and lines starting with "#" are comments. A line without a reason, with
// an unknown target, or naming a check twice for one target is an error.
func ReadKnownFailures(path string, targets []string) ([]KnownFailure, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	valid := map[string]bool{}
	for _, t := range targets {
		valid[t] = true
	}
	var out []KnownFailure
	listed := map[string]int{}
	sc := bufio.NewScanner(f)
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		fields, reason, ok := strings.Cut(line, "#")
		reason = strings.TrimSpace(reason)
		if !ok || reason == "" {
			return nil, fmt.Errorf("%s:%d: %q has no \"# reason\"", path, n, line)
		}
		words := strings.Fields(fields)
		if len(words) == 0 {
			return nil, fmt.Errorf("%s:%d: no check name before the reason", path, n)
		}
		k := KnownFailure{Check: words[0], Targets: words[1:], Reason: reason, Line: n, File: filepath.Base(path)}
		for _, t := range k.Targets {
			if !valid[t] {
				return nil, fmt.Errorf("%s:%d: unknown target %q (known: %s)", path, n, t, strings.Join(targets, ", "))
			}
		}
		for _, t := range targets {
			if k.AppliesTo(t) {
				key := k.Check + " " + t
				if prev, dup := listed[key]; dup {
					return nil, fmt.Errorf("%s:%d: %s is listed for %s already on line %d", path, n, k.Check, t, prev)
				}
				listed[key] = n
			}
		}
		out = append(out, k)
	}
	return out, sc.Err()
}

// Compare holds the run through the host (via, the run named target)
// to the direct run: it returns one problem for every check that passed
// directly and fails via the host without being listed in known for
// target, for every listed check that passes via the host, and for every
// listed check that did not pass directly.
func Compare(direct, via Run, target string, known []KnownFailure) []string {
	var problems []string
	listed := map[string]KnownFailure{}
	for _, k := range known {
		if k.AppliesTo(target) {
			listed[k.Check] = k
		}
	}
	for _, name := range direct.Names {
		if !direct.Checks[name].Passed() {
			continue
		}
		c, ok := via.Checks[name]
		if !ok {
			c = Check{Status: StatusMissing, Message: "no such check in the run through the host"}
		}
		k, isKnown := listed[name]
		switch {
		case c.Passed() && isKnown:
			problems = append(problems, fmt.Sprintf("%s now passes through the host (%s): remove it from %s (line %d: %s)", name, target, k.File, k.Line, k.Reason))
		case !c.Passed() && !isKnown:
			problems = append(problems, fmt.Sprintf("%s passes directly but not through the host (%s): %s %s (fix the host, or list it in the known failures with the reason)", name, target, c.Status, clip(c.Message, 300)))
		}
	}
	for _, k := range known {
		if !k.AppliesTo(target) {
			continue
		}
		if c, ok := direct.Checks[k.Check]; !ok || !c.Passed() {
			status := StatusMissing
			if ok {
				status = c.Status
			}
			problems = append(problems, fmt.Sprintf("%s:%d lists %s for %s, which does not pass against the everything-server directly (%s): remove it", k.File, k.Line, k.Check, target, status))
		}
	}
	return problems
}

// Best is the run of a server that did what any of runs did: every check
// of runs, in the order the first run that has it ran it, with the status
// of the first run where it passed (else of the first run that has it).
// It is the direct baseline of a host that serves both the revisions with
// sessions and those without (see conformance_test.go).
func Best(runs ...Run) Run {
	best := Run{Checks: map[string]Check{}}
	for _, r := range runs {
		for _, n := range r.Names {
			c := r.Checks[n]
			prev, seen := best.Checks[n]
			if !seen {
				best.Names = append(best.Names, n)
			}
			if !seen || !prev.Passed() && c.Passed() {
				best.Checks[n] = c
			}
		}
	}
	return best
}

// clip shortens s to at most n bytes (the suite's messages can list every
// tool).
func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "..."
}

// Table formats the runs as a text table: one row per check (the first
// run's order, then checks only later runs have), one column per run named
// by columns ("pass", "FAIL", "warn", "-" when the run has no such check),
// then a line of totals per run.
func Table(columns []string, runs []Run) string {
	var names []string
	seen := map[string]bool{}
	for _, r := range runs {
		for _, n := range r.Names {
			if !seen[n] {
				seen[n] = true
				names = append(names, n)
			}
		}
	}
	width := len("check")
	for _, n := range names {
		width = max(width, len(n))
	}
	colw := make([]int, len(columns))
	for i, c := range columns {
		colw[i] = max(len(c), len("MISSING"))
	}
	var sb strings.Builder
	row := func(first string, cells []string) {
		line := fmt.Sprintf("%-*s", width, first)
		for i, c := range cells {
			line += fmt.Sprintf("  %-*s", colw[i], c)
		}
		sb.WriteString(strings.TrimRight(line, " ") + "\n")
	}
	row("check", columns)
	for _, n := range names {
		cells := make([]string, len(runs))
		for i, r := range runs {
			cells[i] = "-"
			if c, ok := r.Checks[n]; ok {
				cells[i] = cellOf(c.Status)
			}
		}
		row(n, cells)
	}
	for i, r := range runs {
		fmt.Fprintf(&sb, "%s: %d passed, %d failed, %d warnings, %d of %d checks absent\n",
			columns[i], r.Passed(), r.Count(StatusFailure), r.Count(StatusWarning), len(names)-len(r.Names), len(names))
	}
	return sb.String()
}

// cellOf is the table's word for status.
func cellOf(status string) string {
	switch status {
	case StatusSuccess:
		return "pass"
	case StatusFailure:
		return "FAIL"
	case StatusWarning:
		return "warn"
	}
	return strings.ToLower(status)
}

// Expect holds a run with no baseline (the host serving its own fixtures,
// which implement every scenario) to known: it returns one problem for
// every check of run that does not pass (nor was skipped as not
// applicable, StatusSkipped) without being listed in known for target, for
// every listed check that passes, and for every listed check the run does
// not have.
func Expect(run Run, target string, known []KnownFailure) []string {
	var problems []string
	listed := map[string]bool{}
	for _, k := range known {
		if !k.AppliesTo(target) {
			continue
		}
		listed[k.Check] = true
		c, ok := run.Checks[k.Check]
		switch {
		case !ok:
			problems = append(problems, fmt.Sprintf("%s:%d lists %s for %s, which the run does not have: remove it", k.File, k.Line, k.Check, target))
		case c.Passed():
			problems = append(problems, fmt.Sprintf("%s now passes (%s): remove it from %s (line %d: %s)", k.Check, target, k.File, k.Line, k.Reason))
		}
	}
	for _, name := range run.Names {
		if c := run.Checks[name]; !c.Passed() && c.Status != StatusSkipped && !listed[name] {
			problems = append(problems, fmt.Sprintf("%s fails (%s): %s %s (fix the host or the fixture, or list it in the known failures with the reason)", name, target, c.Status, clip(c.Message, 300)))
		}
	}
	return problems
}
