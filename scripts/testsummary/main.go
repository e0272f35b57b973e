// Command testsummary runs `go test -json ARGS...` and prints what a plain
// `go test ARGS...` prints (one line per package, the output of failed
// tests, build errors), then every skipped test with its reason, so a
// skip never passes unseen, and the slowest top-level tests (what to
// look at when make test nears its 10 minutes). `make test` runs it.
//
// Usage: go run ./scripts/testsummary [go test flags] [packages]
//
// It exits with go test's exit status (1 when go test could not be run).
package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"sort"
	"strings"
)

// event is one line of `go test -json` (cmd/test2json's TestEvent).
type event struct {
	Action  string
	Package string
	Test    string
	Output  string
	Elapsed float64
}

// skip is one skipped test and the lines it logged (its reason).
type skip struct {
	pkg, test string
	reason    []string
}

// summary keeps the output of running tests until they end.
type summary struct {
	out     io.Writer
	running map[string][]string // package + "\x00" + test -> output lines
	skips   []skip
	counts  map[string]int // "pass", "fail", "skip" -> tests
	slow    []timed        // top-level tests that passed or failed, with their time
}

// timed is one top-level test and how long it ran, in seconds.
type timed struct {
	name    string // package's last element + "." + test
	elapsed float64
}

// slowest is how many of the slowest tests report prints.
const slowest = 10

func main() {
	args := append([]string{"test", "-json"}, os.Args[1:]...)
	cmd := exec.Command(goCommand(), args...)
	cmd.Stderr = os.Stderr
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		fmt.Fprintln(os.Stderr, "testsummary:", err)
		os.Exit(1)
	}
	if err := cmd.Start(); err != nil {
		fmt.Fprintln(os.Stderr, "testsummary:", err)
		os.Exit(1)
	}
	s := &summary{out: os.Stdout, running: map[string][]string{}, counts: map[string]int{}}
	s.read(stdout)
	err = cmd.Wait()
	s.report()
	if err != nil {
		if ee, ok := err.(*exec.ExitError); ok {
			os.Exit(ee.ExitCode())
		}
		fmt.Fprintln(os.Stderr, "testsummary:", err)
		os.Exit(1)
	}
}

// goCommand is $GO when set (the Makefile's variable), else "go".
func goCommand() string {
	if g := os.Getenv("GO"); g != "" {
		return g
	}
	return "go"
}

// read consumes the event stream; a line that is not JSON is printed as is.
func (s *summary) read(r io.Reader) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 1<<20), 16<<20)
	for sc.Scan() {
		var ev event
		if err := json.Unmarshal(sc.Bytes(), &ev); err != nil || ev.Action == "" {
			fmt.Fprintln(s.out, sc.Text())
			continue
		}
		s.handle(ev)
	}
}

func (s *summary) handle(ev event) {
	key := ev.Package + "\x00" + ev.Test
	switch {
	case ev.Action == "build-output":
		fmt.Fprint(s.out, ev.Output)
	case ev.Test == "" && ev.Action == "output":
		if packageLine(ev.Output) {
			fmt.Fprint(s.out, ev.Output)
		}
	case ev.Test == "":
		// package start/pass/fail: its summary line came as output
	case ev.Action == "output":
		s.running[key] = append(s.running[key], ev.Output)
	case ev.Action == "fail":
		s.counts["fail"]++
		s.timeTop(ev)
		for _, line := range s.running[key] {
			fmt.Fprint(s.out, line)
		}
		delete(s.running, key)
	case ev.Action == "skip":
		s.counts["skip"]++
		s.skips = append(s.skips, skip{pkg: ev.Package, test: ev.Test, reason: reasonLines(s.running[key])})
		delete(s.running, key)
	case ev.Action == "pass":
		s.counts["pass"]++
		s.timeTop(ev)
		delete(s.running, key)
	}
}

// timeTop records how long ev's test ran when it is a top-level test.
func (s *summary) timeTop(ev event) {
	if strings.Contains(ev.Test, "/") {
		return
	}
	s.slow = append(s.slow, timed{name: ev.Package[strings.LastIndex(ev.Package, "/")+1:] + "." + ev.Test, elapsed: ev.Elapsed})
}

// packageLine reports whether a package-level output line belongs in the
// plain output ("ok ...", "FAIL ...", "? ...", panics), not the -v noise.
func packageLine(line string) bool {
	t := strings.TrimSpace(line)
	return t != "" && t != "PASS" && !strings.HasPrefix(t, "=== ") && !strings.HasPrefix(t, "--- PASS")
}

// reasonLines keeps what a skipped test logged, without the RUN/SKIP
// framing lines.
func reasonLines(lines []string) []string {
	var out []string
	for _, l := range lines {
		t := strings.TrimSpace(l)
		if t == "" || strings.HasPrefix(t, "=== ") || strings.HasPrefix(t, "--- SKIP") {
			continue
		}
		out = append(out, t)
	}
	return out
}

// report prints the counts and every skip with its reason.
func (s *summary) report() {
	fmt.Fprintf(s.out, "\ntests: %d passed, %d failed, %d skipped\n", s.counts["pass"], s.counts["fail"], s.counts["skip"])
	sort.Slice(s.slow, func(i, j int) bool { return s.slow[i].elapsed > s.slow[j].elapsed })
	var top []string
	for _, t := range s.slow[:min(slowest, len(s.slow))] {
		top = append(top, fmt.Sprintf("%s %.1fs", t.name, t.elapsed))
	}
	if len(top) > 0 {
		fmt.Fprintf(s.out, "slowest: %s\n", strings.Join(top, ", "))
	}
	if len(s.skips) == 0 {
		return
	}
	sort.Slice(s.skips, func(i, j int) bool {
		if s.skips[i].pkg != s.skips[j].pkg {
			return s.skips[i].pkg < s.skips[j].pkg
		}
		return s.skips[i].test < s.skips[j].test
	})
	fmt.Fprintln(s.out, "skipped tests and why:")
	for _, sk := range s.skips {
		reason := strings.Join(sk.reason, " / ")
		if reason == "" {
			reason = "(no reason given)"
		}
		fmt.Fprintf(s.out, "  SKIP %s %s: %s\n", sk.pkg, sk.test, reason)
	}
}
