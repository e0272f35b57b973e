package main_test

// End-to-end tests of the plugin SDKs for other languages through their
// example plugins, served by a real host process: real Python and Node
// processes, loopback HTTP only. pluginsdk/python's
// plugins/opentool-plugin-pyecho and pluginsdk/node's
// plugins/opentool-plugin-nodeecho declare the same functions (echo,
// sum_numbers, ticks, sleep, fail, stats, pid), so one test runs against
// each. A language whose runtime or SDK packages are missing skips, saying
// why (make deps-python, make deps-node).

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/opentool-host/opentool-host/internal/testutil"
)

// langPlugin is the example plugin of one language SDK.
type langPlugin struct {
	lang string // "python", "node": the subtest name
	name string // the plugin's name: the file is plugins/opentool-plugin-NAME
	sdk  string // the SDK folder, relative to the repository
	// version returns the example's source line that sets its version to v
	// (the replace test edits it).
	version func(v string) string
	// leak names the stats counter that must not grow once calls end
	// (Python threads, Node active handles).
	leak string
	// missing says why the runtime or the SDK cannot run here ("" when they
	// can).
	missing func(t *testing.T) string
}

// pyInterpreter is the interpreter the Python example's shebang names.
const pyInterpreter = "/usr/bin/python3"

var langPlugins = []langPlugin{
	{
		lang: "python", name: "pyecho", sdk: "pluginsdk/python", leak: "threads",
		version: func(v string) string { return `VERSION = "` + v + `"` },
		missing: func(t *testing.T) string {
			out, err := exec.Command(pyInterpreter, "-c", "import grpc, google.protobuf").CombinedOutput()
			if err != nil {
				return fmt.Sprintf("Python plugin SDK unavailable: %s cannot import grpc (run make deps-python as root to install python3-grpcio): %v %s",
					pyInterpreter, err, bytes.TrimSpace(out))
			}
			return ""
		},
	},
	{
		lang: "node", name: "nodeecho", sdk: "pluginsdk/node", leak: "handles",
		version: func(v string) string { return `const VERSION = '` + v + `';` },
		missing: func(t *testing.T) string {
			node, err := exec.LookPath("node")
			if err != nil {
				return "Node plugin SDK unavailable: no node on PATH (install Node.js >= 18, then make deps-node)"
			}
			sdk := filepath.Join(testutil.RepoRoot(t), "pluginsdk", "node")
			out, err := exec.Command(node, "-e", `require(process.argv[1])`, sdk).CombinedOutput()
			if err != nil {
				return fmt.Sprintf("Node plugin SDK unavailable: %s cannot load %s (run make deps-node to npm ci @grpc/grpc-js): %v %s",
					node, sdk, err, firstLine(out))
			}
			return ""
		},
	},
}

// firstLine is the first non-empty line of b.
func firstLine(b []byte) string {
	for _, l := range strings.Split(string(b), "\n") {
		if l = strings.TrimSpace(l); l != "" {
			return l
		}
	}
	return ""
}

// forEachLang runs f as one subtest per language, skipping a language that
// cannot run here with the reason.
func forEachLang(t *testing.T, f func(t *testing.T, lp langPlugin)) {
	for _, lp := range langPlugins {
		t.Run(lp.lang, func(t *testing.T) {
			if why := lp.missing(t); why != "" {
				t.Skip(why)
			}
			f(t, lp)
		})
	}
}

// install copies the example script into dir as opentool-plugin-NAME (edit,
// when not nil, changes its text first) and makes the plugin use this
// checkout's SDK (OPENTOOL_NAME_SDK, which the host passes on), not whatever
// make deps-python's .pth or make deps-node's link points at.
func (lp langPlugin) install(t *testing.T, dir string, edit func(string) string) string {
	t.Helper()
	file := "opentool-plugin-" + lp.name
	b, err := os.ReadFile(filepath.Join(testutil.RepoRoot(t), "plugins", file))
	if err != nil {
		t.Fatal(err)
	}
	text := string(b)
	if edit != nil {
		text = edit(text)
	}
	tmp := filepath.Join(t.TempDir(), file)
	if err := os.WriteFile(tmp, []byte(text), 0o755); err != nil {
		t.Fatal(err)
	}
	dst := filepath.Join(dir, file)
	testutil.CopyFile(t, tmp, dst, 0o755)
	t.Setenv("OPENTOOL_"+strings.ToUpper(lp.name)+"_SDK", filepath.Join(testutil.RepoRoot(t), filepath.FromSlash(lp.sdk)))
	return dst
}

// serve installs the example into dir and starts a host process serving
// it; it returns the host and the plugin's pid, running.
func (lp langPlugin) serve(t *testing.T, dir string) (*hostProc, int) {
	t.Helper()
	lp.install(t, dir, nil)
	hp := startHostProc(t, dir)
	pid := pluginPIDs(t, hp.url)[lp.name]
	if pid == 0 || !alive(pid) {
		t.Fatalf("%s pid %d not running", lp.name, pid)
	}
	return hp, pid
}

// langCall calls method with params (JSON text, "" for none) and returns the
// result object and the error object (one of them nil). Transport
// failures fail the test.
func langCall(t *testing.T, url, method, params string) (map[string]any, map[string]any) {
	t.Helper()
	body := `{"jsonrpc":"2.0","method":"` + method + `","id":1}`
	if params != "" {
		body = `{"jsonrpc":"2.0","method":"` + method + `","params":` + params + `,"id":1}`
	}
	code, m := rpc(t, url, body)
	if code != 200 {
		t.Fatalf("%s: HTTP %d %v", method, code, m)
	}
	e, _ := m["error"].(map[string]any)
	if e != nil {
		return nil, e
	}
	r, _ := m["result"].(map[string]any)
	return r, nil
}

// langStats returns the example's counters.
func langStats(t *testing.T, url string) map[string]any {
	t.Helper()
	r, e := langCall(t, url, "stats", "")
	if e != nil {
		t.Fatalf("stats: %v", e)
	}
	return r
}

// langEcho is one echo call for the load tests: the plugin's version, or an
// error for any failure (transport, HTTP status, JSON-RPC error).
func langEcho(client *http.Client, url string, i int) (string, error) {
	body := fmt.Sprintf(`{"jsonrpc":"2.0","method":"echo","params":{"text":"t%d"},"id":%d}`, i, i)
	resp, err := client.Post(url+"/opentool/call", "application/json", strings.NewReader(body))
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return "", err
	}
	var m struct {
		Result map[string]any
		Error  map[string]any
	}
	if err := json.Unmarshal(b, &m); err != nil || resp.StatusCode != 200 || m.Error != nil || m.Result["echo"] != fmt.Sprintf("t%d", i) {
		return "", fmt.Errorf("echo %d: HTTP %d %s", i, resp.StatusCode, b)
	}
	v, _ := m.Result["version"].(string)
	return v, nil
}

func TestLanguagePluginLoadCallErrorsStreamCancel(t *testing.T) {
	forEachLang(t, testLangLoadCallErrorsStreamCancel)
}

func testLangLoadCallErrorsStreamCancel(t *testing.T, lp langPlugin) {
	hp, _ := lp.serve(t, t.TempDir())

	// Load: every function of the example is served, with its schema.
	resp, err := http.Get(hp.url + "/opentool/load")
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Functions []struct {
			Name       string
			Parameters []struct{ Name string }
			Stream     map[string]any
		}
	}
	err = json.NewDecoder(resp.Body).Decode(&doc)
	resp.Body.Close()
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]bool{}
	for _, f := range doc.Functions {
		got[f.Name] = true
		if f.Name == "ticks" && f.Stream == nil {
			t.Errorf("ticks has no stream field: %+v", f)
		}
	}
	for _, want := range []string{"echo", "sum_numbers", "ticks", "sleep", "fail", "stats", "trace", "pid"} {
		if !got[want] {
			t.Errorf("/opentool/load lacks %s: %+v", want, doc.Functions)
		}
	}

	// The caller's traceparent reaches the function (ctx.traceparent): the
	// host continues the trace and passes its execute_tool span.
	const traceID = "4bf92f3577b34da6a3ce929d0e0e4736"
	treq, _ := http.NewRequest(http.MethodPost, hp.url+"/opentool/call", strings.NewReader(`{"jsonrpc":"2.0","method":"trace","id":1}`))
	treq.Header.Set("Content-Type", "application/json")
	treq.Header.Set("traceparent", "00-"+traceID+"-00f067aa0ba902b7-01")
	if tresp, err := http.DefaultClient.Do(treq); err != nil {
		t.Error(err)
	} else {
		tb, _ := io.ReadAll(tresp.Body)
		tresp.Body.Close()
		if !strings.Contains(string(tb), `"traceparent":"00-`+traceID+"-") {
			t.Errorf("trace: %s, want traceparent with trace id %s", tb, traceID)
		}
	}

	// Calls, the tool's own error code, any exception as 500.
	if r, e := langCall(t, hp.url, "echo", `{"text":"héllo \u2603"}`); e != nil || r["echo"] != "héllo ☃" || r["version"] != "1.0.0" {
		t.Errorf("echo = %v %v", r, e)
	}
	if r, e := langCall(t, hp.url, "sum_numbers", `{"values":[1.5,2,3]}`); e != nil || r["sum"] != 6.5 {
		t.Errorf("sum_numbers = %v %v", r, e)
	}
	for _, c := range []struct{ params, msg string }{
		{`{"values":[]}`, "must not be empty"},
		{`{"values":[1e308,1e308]}`, "overflows"},
	} {
		if r, e := langCall(t, hp.url, "sum_numbers", c.params); e == nil || e["code"] != 400.0 || !strings.Contains(fmt.Sprint(e["message"]), c.msg) {
			t.Errorf("sum_numbers(%s) = %v %v, want error 400 %q", c.params, r, e, c.msg)
		}
	}
	if r, e := langCall(t, hp.url, "fail", `{"message":"kaputt"}`); e == nil || e["code"] != 500.0 || e["message"] != "kaputt" {
		t.Errorf("fail = %v %v, want error 500 kaputt", r, e)
	}
	// Arguments the document does not declare are refused by the host.
	if code, m := rpc(t, hp.url, `{"jsonrpc":"2.0","method":"echo","params":{"text":"x","extra":1},"id":1}`); code != 200 || m["error"] == nil {
		t.Errorf("echo with an undeclared argument = %d %v, want an error", code, m)
	}

	// Streaming: one data event per item, in order.
	sresp, err := http.Post(hp.url+"/opentool/streamCall", "application/json",
		strings.NewReader(`{"jsonrpc":"2.0","method":"ticks","params":{"n":5},"id":"s"}`))
	if err != nil {
		t.Fatal(err)
	}
	sb, _ := io.ReadAll(sresp.Body)
	sresp.Body.Close()
	var items []string
	for _, line := range strings.Split(string(sb), "\n") {
		if strings.HasPrefix(line, "data:") && strings.Contains(line, `"result"`) {
			items = append(items, line)
		}
	}
	if len(items) != 5 || !strings.Contains(items[0], `{"i":1}`) || !strings.Contains(items[4], `{"i":5}`) || !strings.Contains(string(sb), "event:done") {
		t.Errorf("streamCall ticks: %d items:\n%s", len(items), sb)
	}

	// Cancellation reaches the function: a caller that gives up makes the
	// host send cancel; sleep's ctx.wait returns at once and counts it,
	// and the plugin keeps running (it was not killed after the grace).
	pidBefore := pluginPIDs(t, hp.url)[lp.name]
	before := langStats(t, hp.url)["cancelled"].(float64)
	client := &http.Client{Timeout: 300 * time.Millisecond}
	start := time.Now()
	_, err = client.Post(hp.url+"/opentool/call", "application/json", strings.NewReader(`{"jsonrpc":"2.0","method":"sleep","params":{"ms":20000},"id":1}`))
	if err == nil {
		t.Fatal("sleep 20 s answered before the client's 300 ms timeout")
	}
	testutil.Eventually(t, 5*time.Second, "the cancelled sleep is counted by the plugin", func() bool {
		s := langStats(t, hp.url)
		return s["cancelled"].(float64) == before+1 && s["sleeping"].(float64) == 0
	})
	t.Logf("cancel reached the %s function %v after the call started (the client gave up at 300 ms)", lp.lang, time.Since(start).Round(time.Millisecond))
	if pid := pluginPIDs(t, hp.url)[lp.name]; pid != pidBefore {
		t.Errorf("plugin pid %d -> %d: the cancelled call cost the process", pidBefore, pid)
	}

	// Concurrent calls run at once (the SDK's thread pool): 20 sleeps of
	// 300 ms end well before 20 x 300 ms. Two rounds: the second must not
	// add threads (each Invoke reads its request stream in a second thread
	// that must end with the call; the pool's workers are reused).
	batch := func() {
		var wg sync.WaitGroup
		var failed atomic.Int32
		start := time.Now()
		for i := 0; i < 20; i++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				resp, err := http.Post(hp.url+"/opentool/call", "application/json", strings.NewReader(`{"jsonrpc":"2.0","method":"sleep","params":{"ms":300},"id":1}`))
				if err != nil {
					failed.Add(1)
					return
				}
				b, _ := io.ReadAll(resp.Body)
				resp.Body.Close()
				if !strings.Contains(string(b), `"slept_ms":300`) {
					failed.Add(1)
				}
			}()
		}
		wg.Wait()
		if el := time.Since(start); failed.Load() != 0 || el > 3*time.Second {
			t.Errorf("20 concurrent sleeps of 300 ms: %d failed, took %v", failed.Load(), el)
		}
	}
	batch()
	time.Sleep(100 * time.Millisecond)
	first := langStats(t, hp.url)[lp.leak].(float64)
	batch()
	var last float64
	testutil.Eventually(t, 5*time.Second, "no "+lp.leak+" left behind by finished calls", func() bool {
		last = langStats(t, hp.url)[lp.leak].(float64)
		return last <= first
	})
	t.Logf("%s %s after 20 concurrent calls: %v, after 20 more: %v", lp.lang, lp.leak, first, last)
}

func TestLanguagePluginSIGKILLRestartAndReplaceUnderLoad(t *testing.T) {
	forEachLang(t, testLangSIGKILLRestartAndReplaceUnderLoad)
}

func testLangSIGKILLRestartAndReplaceUnderLoad(t *testing.T, lp langPlugin) {
	dir := t.TempDir()
	hp, pid := lp.serve(t, dir)

	// SIGKILL of the plugin process: the host restarts it and it serves.
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	killed := time.Now()
	var newPID int
	testutil.Eventually(t, 15*time.Second, lp.name+" restarted after SIGKILL", func() bool {
		newPID = pluginPIDs(t, hp.url)[lp.name]
		if newPID == 0 || newPID == pid {
			return false
		}
		_, err := langEcho(http.DefaultClient, hp.url, 1)
		return err == nil
	})
	t.Logf("%s SIGKILLed (pid %d): serving again as pid %d after %v", lp.name, pid, newPID, time.Since(killed).Round(time.Millisecond))

	// Replace under load: a modified script is copied over the plugin while
	// 8 clients call it; no call fails and the new version takes over.
	var (
		wg       sync.WaitGroup
		stop     atomic.Bool
		calls    atomic.Int64
		failures atomic.Int64
		sawNew   atomic.Bool
		firstErr atomic.Value
	)
	for w := 0; w < 8; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			client := &http.Client{Timeout: 20 * time.Second}
			for i := w * 1_000_000; !stop.Load(); i++ {
				v, err := langEcho(client, hp.url, i)
				calls.Add(1)
				if err != nil {
					failures.Add(1)
					firstErr.CompareAndSwap(nil, err.Error())
					continue
				}
				if v == "2.0.0" {
					sawNew.Store(true)
				}
			}
		}(w)
	}
	time.Sleep(300 * time.Millisecond)
	lp.install(t, dir, func(s string) string {
		if !strings.Contains(s, lp.version("1.0.0")) {
			t.Fatalf("the example has no line %q to edit", lp.version("1.0.0"))
		}
		return strings.Replace(s, lp.version("1.0.0"), lp.version("2.0.0"), 1)
	})
	replaced := time.Now()
	testutil.Eventually(t, 20*time.Second, "the replaced script serves", func() bool { return sawNew.Load() })
	switched := time.Since(replaced)
	time.Sleep(300 * time.Millisecond)
	stop.Store(true)
	wg.Wait()
	t.Logf("replace under load: %d calls, %d failed, new version answering %v after the copy", calls.Load(), failures.Load(), switched.Round(time.Millisecond))
	if failures.Load() != 0 {
		t.Fatalf("%d of %d calls failed during the replace; first: %v", failures.Load(), calls.Load(), firstErr.Load())
	}
	if p := pluginPIDs(t, hp.url)[lp.name]; p == newPID {
		t.Errorf("pid %d unchanged after the replace", p)
	}
	testutil.Eventually(t, 15*time.Second, "the replaced process exits", func() bool { return zombieOrGone(newPID) })
}

func TestLanguagePluginHostSIGKILLLeavesNoProcess(t *testing.T) {
	forEachLang(t, testLangHostSIGKILLLeavesNoProcess)
}

func testLangHostSIGKILLLeavesNoProcess(t *testing.T, lp langPlugin) {
	hp, pid := lp.serve(t, t.TempDir())
	// A call in flight, so the process is busy when its host dies.
	go func() {
		client := &http.Client{Timeout: 10 * time.Second}
		resp, err := client.Post(hp.url+"/opentool/call", "application/json", strings.NewReader(`{"jsonrpc":"2.0","method":"sleep","params":{"ms":5000},"id":1}`))
		if err == nil {
			resp.Body.Close()
		}
	}()
	testutil.Eventually(t, 5*time.Second, "the sleep reached the plugin", func() bool {
		return langStats(t, hp.url)["sleeping"].(float64) == 1
	})
	if err := hp.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	<-hp.done
	killed := time.Now()
	defer syscall.Kill(pid, syscall.SIGKILL)
	testutil.Eventually(t, 2*time.Second, "the "+lp.lang+" plugin exits after host SIGKILL", func() bool { return zombieOrGone(pid) })
	t.Logf("%s plugin %d gone %v after host SIGKILL", lp.lang, pid, time.Since(killed).Round(time.Millisecond))
}

// startLogLine matches the host's log lines "TIME [LEVEL] ...: MESSAGE: plugin=NAME".
var startLogLine = regexp.MustCompile(`^(\S+) \[\w+\]\s+\S+: (plugin found|plugin ready): plugin=(\S+)`)

// procRSS returns VmRSS of pid in KiB (0 when unknown).
func procRSS(pid int) int {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		if f := strings.Fields(line); len(f) >= 2 && f[0] == "VmRSS:" {
			n, _ := strconv.Atoi(f[1])
			return n
		}
	}
	return 0
}

// TestLanguagePluginMeasure measures every example plugin that can run here
// side by side in one host (one run; logged, not asserted beyond sanity):
// the Go calculator, the Python and Node examples, and the command-line
// declaration plugins/text.tools.json (the host binary as an adapter, wc
// per call). Per plugin: cold start (plugin found -> ready in the host's
// log: copy, spawn, handshake, Load), median latency of 200 sequential
// /opentool/call calls after 20 of warm-up, and RSS of the plugin process.
func TestLanguagePluginMeasure(t *testing.T) {
	dir := t.TempDir()
	type subject struct{ name, method, params string }
	subjects := []subject{{"calculator", "add", `{"a":1,"b":2}`}}
	testutil.InstallPlugin(t, dir, "calculator", "./plugins/calculator")
	testutil.CopyFile(t, filepath.Join(testutil.RepoRoot(t), "plugins", "text.tools.json"), filepath.Join(dir, "text.tools.json"), 0o644)
	subjects = append(subjects, subject{"text", "word_count", `{"text":"one two three\n"}`})
	for _, lp := range langPlugins {
		if why := lp.missing(t); why != "" {
			t.Logf("%s not measured: %s", lp.lang, why)
			continue
		}
		lp.install(t, dir, nil)
		subjects = append(subjects, subject{lp.name, "echo", `{"text":"hello"}`})
	}
	hp := startHostProc(t, dir)
	pids := pluginPIDs(t, hp.url)

	found, ready := map[string]time.Time{}, map[string]time.Time{}
	for _, line := range strings.Split(hp.logs.String(), "\n") {
		m := startLogLine.FindStringSubmatch(line)
		if m == nil {
			continue
		}
		ts, err := time.Parse(time.RFC3339Nano, m[1])
		if err != nil {
			continue
		}
		if m[2] == "plugin found" {
			found[m[3]] = ts
		} else if _, ok := ready[m[3]]; !ok {
			ready[m[3]] = ts
		}
	}

	median := func(method, params string) time.Duration {
		client := &http.Client{Timeout: 10 * time.Second}
		body := `{"jsonrpc":"2.0","method":"` + method + `","params":` + params + `,"id":1}`
		var ds []time.Duration
		for i := 0; i < 220; i++ {
			start := time.Now()
			resp, err := client.Post(hp.url+"/opentool/call", "application/json", strings.NewReader(body))
			if err != nil {
				t.Fatal(err)
			}
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != 200 || !strings.Contains(string(b), `"result":{"`) {
				t.Fatalf("%s: %d %s", method, resp.StatusCode, b)
			}
			if i >= 20 { // warm-up
				ds = append(ds, time.Since(start))
			}
		}
		sort.Slice(ds, func(i, j int) bool { return ds[i] < ds[j] })
		return ds[len(ds)/2]
	}
	for _, s := range subjects {
		lat := median(s.method, s.params)
		cold := ready[s.name].Sub(found[s.name])
		t.Logf("%-10s cold start (found -> ready) %v, median %s latency %v (200 sequential /opentool/call), RSS %.1f MiB",
			s.name, cold.Round(time.Millisecond), s.method, lat.Round(time.Microsecond), float64(procRSS(pids[s.name]))/1024)
		if found[s.name].IsZero() || ready[s.name].IsZero() {
			t.Errorf("no start lines for %s in the host log", s.name)
		}
	}
}

// TestNodeSDKUnitTests runs the Node SDK's own tests
// (pluginsdk/node/test, node --test): the Toolkit's document and checks,
// Context, and the example spoken to over gRPC as the host would (handshake,
// Health, Load, Invoke errors and cancel, Shutdown, SIGTERM killing the
// process group).
func TestNodeSDKUnitTests(t *testing.T) {
	for _, lp := range langPlugins {
		if lp.lang != "node" {
			continue
		}
		if why := lp.missing(t); why != "" {
			t.Skip(why)
		}
		cmd := exec.Command("node", "--test", "test/")
		cmd.Dir = filepath.Join(testutil.RepoRoot(t), filepath.FromSlash(lp.sdk))
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("node --test in %s: %v\n%s", cmd.Dir, err, out)
		}
		for _, line := range strings.Split(string(out), "\n") {
			if strings.HasPrefix(line, "ok ") || strings.HasPrefix(line, "# pass") || strings.HasPrefix(line, "# fail") {
				t.Log(line)
			}
		}
	}
}
