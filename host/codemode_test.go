package host_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/opentool-host/opentool-host/host"
	"github.com/opentool-host/opentool-host/host/access"
	"github.com/opentool-host/opentool-host/host/core"
	"github.com/opentool-host/opentool-host/testkit"
)

// startCodeHost starts a host serving calculator and faulty with code
// mode: real runner processes behind the real sandbox launcher.
func startCodeHost(t *testing.T, mod func(*core.Config)) (*host.Host, *records) {
	t.Helper()
	dir := t.TempDir()
	testkit.InstallPlugin(t, dir, "calculator", "./plugins/calculator")
	testkit.InstallPlugin(t, dir, "faulty", "./testkit/plugins/faulty")
	recs := &records{}
	h := startHost(t, dir, func(c *core.Config) {
		c.CodeMode, c.CodeRunner = true, testkit.Build(t, "./cmd/opentool-host-coderunner")
		c.Launcher = []string{testkit.Build(t, "./cmd/opentool-host"), "launch"}
		c.OnCall = recs.add
		if mod != nil {
			mod(c)
		}
	})
	testkit.Eventually(t, 20*time.Second, "the warm runners are up", func() bool { return len(h.CodeRunners().Warm) == 2 })
	return h, recs
}

// records keeps the host's call records (Config.OnCall).
type records struct {
	mu   sync.Mutex
	list []core.CallRecord
}

func (r *records) add(_ context.Context, rec core.CallRecord) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.list = append(r.list, rec)
}

func (r *records) all() []core.CallRecord {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]core.CallRecord(nil), r.list...)
}

// runCode calls run_code with program code.
func runCode(ctx context.Context, h *host.Host, code string) ([]byte, error) {
	args, _ := json.Marshal(map[string]string{"code": code})
	return h.Call(ctx, host.RunCodeName, args)
}

// TestRunCodeLoopOfAdds: a program of 100 dependent add calls returns
// 100, each call recorded with run_code's Run id; the runners are
// confined (seccomp filter, no new privileges).
func TestRunCodeLoopOfAdds(t *testing.T) {
	h, recs := startCodeHost(t, nil)
	for _, pid := range h.CodeRunners().Warm {
		status, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
		if err != nil {
			t.Fatal(err)
		}
		for _, want := range []string{"NoNewPrivs:\t1", "Seccomp:\t2"} {
			if !strings.Contains(string(status), want) {
				t.Errorf("runner %d: /proc status lacks %q", pid, want)
			}
		}
	}
	res, err := runCode(context.Background(), h, `let s = 0; for (let i = 0; i < 100; i++) s = tools.add({a: s, b: 1}).result; console.log("done", s); s`)
	if err != nil {
		t.Fatal(err)
	}
	var out struct {
		Result  int    `json:"result"`
		Console string `json:"console"`
		Calls   int    `json:"calls"`
	}
	if err := json.Unmarshal(res, &out); err != nil || out.Result != 100 || out.Calls != 100 || out.Console != "done 100\n" {
		t.Fatalf("run_code = %s (%v), want result 100 after 100 calls", res, err)
	}
	var run string
	adds := 0
	for _, r := range recs.all() {
		if r.Function == host.RunCodeName {
			run = r.Caller.Run
		}
	}
	for _, r := range recs.all() {
		if r.Function == "add" && r.Caller.Run == run && run != "" {
			adds++
		}
	}
	if adds != 100 {
		t.Errorf("%d add records carry run_code's Run %q, want 100", adds, run)
	}
}

// TestRunCodeKeyIsTheCallers: a key allowed only plugin:calculator calls
// add inside its program, but faulty's echo is "not served" there, as
// outside, and the refusal is recorded under the key and the run.
func TestRunCodeKeyIsTheCallers(t *testing.T) {
	h, recs := startCodeHost(t, nil)
	ctx := core.WithCaller(access.WithGrant(context.Background(), access.NewGrant("calc-only", []string{"plugin:calculator"})), core.Caller{FrontEnd: "mcp"})
	res, err := runCode(ctx, h, `const s = tools.add({a: 2, b: 3}).result
try { tools.echo({x: "hi"}); return "served" } catch (e) { return [s, e.code, e.message] }`)
	if err != nil {
		t.Fatal(err)
	}
	var out struct{ Result []any }
	if err := json.Unmarshal(res, &out); err != nil || len(out.Result) != 3 || out.Result[0] != 5.0 || out.Result[1] != -32601.0 ||
		!strings.Contains(out.Result[2].(string), `"echo" is not served`) {
		t.Fatalf("run_code = %s, want [5, -32601, not served]", res)
	}
	if _, err := h.Call(ctx, "echo", []byte(`{"x":"hi"}`)); !errors.Is(err, core.KindNotFound) {
		t.Fatalf("echo outside = %v, want not found", err)
	}
	found := false
	for _, r := range recs.all() {
		if r.Function == "echo" && r.Kind == core.KindNotFound && r.Caller.Key == "calc-only" && r.Caller.Run != "" {
			found = true
		}
	}
	if !found {
		t.Errorf("no record of the refused inner echo under key calc-only with a Run: %+v", recs.all())
	}
}

// TestRunCodeTimeLimit: while (true) {} ends at the time limit, saying
// so, and its runner is replaced by a new one.
func TestRunCodeTimeLimit(t *testing.T) {
	h, _ := startCodeHost(t, func(c *core.Config) { c.CodeTimeout = time.Second })
	before := h.CodeRunners().Started
	// One line: the limit may fire anywhere in it (on a loaded machine,
	// before the loop is reached), and the error names that line and
	// shows its text.
	_, err := runCode(context.Background(), h, "let n = 0; while (true) { n++ }")
	if e := core.AsError(err); e == nil || e.Kind != core.KindTool || !strings.Contains(e.Message, "the limit timeout_ms is 1000 ms") ||
		!strings.Contains(e.Message, "line 1") || !strings.Contains(e.Message, "while (true) { n++ }") {
		t.Fatalf("run_code = %v, want the time limit's error at line 1, showing the line", err)
	}
	testkit.Eventually(t, 10*time.Second, "a runner replaces the one used", func() bool {
		return h.CodeRunners().Started > before && len(h.CodeRunners().Warm) == 2
	})
	if _, err := runCode(context.Background(), h, "tools.add({a: 1, b: 1}).result"); err != nil {
		t.Fatalf("the next program: %v", err)
	}
}

// TestRunCodeErrorsSayWhere: a syntax error and a runtime error name
// line, column and the line's text; a tool error is a catchable Error.
func TestRunCodeErrorsSayWhere(t *testing.T) {
	h, _ := startCodeHost(t, nil)
	for code, want := range map[string]string{
		"let x = 1\nlet = = 2":             "syntax error at line 2",
		"let x = 1\nreturn x.y.z":          "runtime error at line 2, column 12",
		"tools.add({a: 'not a number'})":   "tools.add: invalid params",
		"for (;;) tools.add({a: 1, b: 1})": "the limit max_calls is 1000",
	} {
		_, err := runCode(context.Background(), h, code)
		if e := core.AsError(err); e == nil || !strings.Contains(e.Message, want) {
			t.Errorf("run_code(%q) = %v, want %q", code, err, want)
		}
	}
}

// TestRunCodeMemoryExhaustion: a program that exhausts its runner's
// memory fails with the limit named; the host serves on.
func TestRunCodeMemoryExhaustion(t *testing.T) {
	h, _ := startCodeHost(t, func(c *core.Config) { c.CodeMemoryBytes = 800 << 20 })
	_, err := runCode(context.Background(), h, `let a = []; for (;;) a.push("x".repeat(1 << 16) + a.length)`)
	if e := core.AsError(err); e == nil || !strings.Contains(e.Message, "memory limit is 838860800 bytes") {
		t.Fatalf("run_code = %v, want the runner's end with its memory limit", err)
	}
	if _, err := h.Call(context.Background(), "add", []byte(`{"a":1,"b":2}`)); err != nil {
		t.Fatalf("the host after: %v", err)
	}
}

// TestRunCodeCancelStopsInnerCalls: cancelling run_code cancels the
// inner call under way (faulty's sleep sees its context end).
func TestRunCodeCancelStopsInnerCalls(t *testing.T) {
	h, _ := startCodeHost(t, nil)
	sleeps := func() (active, cancelled float64) {
		res, err := h.Call(context.Background(), "sleeps", nil)
		if err != nil {
			t.Fatal(err)
		}
		var out struct{ Active, Cancelled float64 }
		_ = json.Unmarshal(res, &out)
		return out.Active, out.Cancelled
	}
	ctx, cancel := context.WithCancel(context.Background())
	errc := make(chan error, 1)
	go func() { _, err := runCode(ctx, h, `tools.sleep({ms: 60000}); tools.sleep({ms: 60000})`); errc <- err }()
	testkit.Eventually(t, 10*time.Second, "the inner sleep runs", func() bool { a, _ := sleeps(); return a == 1 })
	cancel()
	if err := <-errc; !errors.Is(err, core.KindCanceled) {
		t.Fatalf("run_code = %v, want canceled", err)
	}
	testkit.Eventually(t, 10*time.Second, "the inner sleep is cancelled", func() bool { a, c := sleeps(); return a == 0 && c == 1 })
}

// TestRunCodeProgressPerInnerCall: a caller that asked for progress
// (Exchange.Item) is told of each inner call completed, in order, with
// the tool's name and whether it failed; the inner tools' own progress
// is not passed on (Notify sees no notifications/progress).
func TestRunCodeProgressPerInnerCall(t *testing.T) {
	h, _ := startCodeHost(t, nil)
	var mu sync.Mutex
	var ns []int
	var notes []string
	var progress int
	x := &core.Exchange{
		Item: func(n int, item []byte) {
			mu.Lock()
			defer mu.Unlock()
			ns, notes = append(ns, n), append(notes, string(item))
		},
		Notify: func(method string, _ []byte) {
			if method == "notifications/progress" {
				mu.Lock()
				progress++
				mu.Unlock()
			}
		},
	}
	args, _ := json.Marshal(map[string]string{"code": `tools.add({a: 1, b: 2}); try { tools.nothing_here({}) } catch (e) {}; tools.add({a: 3, b: 4}); "ok"`})
	if _, err := h.CallResult(context.Background(), x, host.RunCodeName, args); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	want := []string{`{"call":1,"tool":"add","ok":true}`, `{"call":2,"tool":"nothing_here","ok":false}`, `{"call":3,"tool":"add","ok":true}`}
	if fmt.Sprint(ns) != "[1 2 3]" || fmt.Sprint(notes) != fmt.Sprint(want) || progress != 0 {
		t.Fatalf("progress %v %v (inner progress passed on: %d), want [1 2 3] %v", ns, notes, progress, want)
	}
}

// TestRunCodeOutputBounds: a result over --max-result-bytes ends the
// program with the limit named and its value; console output past
// max_console_bytes (64 KiB) is cut, saying so with the limit's value,
// and the program goes on to its result.
func TestRunCodeOutputBounds(t *testing.T) {
	h, _ := startCodeHost(t, func(c *core.Config) { c.MaxResultBytes = 4096 })
	_, err := runCode(context.Background(), h, `"x".repeat(5000)`)
	if e := core.AsError(err); e == nil || e.Kind != core.KindTool ||
		!strings.Contains(e.Message, "the program's result is 5002 bytes of JSON, over the limit max_output_bytes of 4096 bytes") {
		t.Fatalf("run_code of a 5000-byte string = %v, want the limit max_output_bytes of 4096 bytes", err)
	}
	res, err := runCode(context.Background(), h, `for (let i = 0; i < 100; i++) console.log("y".repeat(1000)); "after"`)
	if err != nil {
		t.Fatal(err)
	}
	var out struct{ Result, Console string }
	if err := json.Unmarshal(res, &out); err != nil || out.Result != "after" ||
		!strings.HasSuffix(out.Console, "[console output cut: the limit max_console_bytes is 65536 bytes]\n") || len(out.Console) > 65536+100 {
		t.Fatalf("run_code's console: %d bytes, ends %q, result %q (%v)", len(out.Console), out.Console[max(len(out.Console)-80, 0):], out.Result, err)
	}
}
