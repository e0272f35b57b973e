package main_test

// End-to-end tests of the Python plugin SDK (pluginsdk/python) through its
// example, plugins/opentool-plugin-pyecho, served by a real host process:
// real Python processes, loopback HTTP only. They skip, saying why, when
// Debian's /usr/bin/python3 cannot import grpc (make deps-python).

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

// pyInterpreter is the interpreter the example's shebang names.
const pyInterpreter = "/usr/bin/python3"

// pySkipUnlessGRPC skips the test when /usr/bin/python3 cannot import grpc.
func pySkipUnlessGRPC(t *testing.T) {
	t.Helper()
	out, err := exec.Command(pyInterpreter, "-c", "import grpc, google.protobuf").CombinedOutput()
	if err != nil {
		t.Skipf("Python plugin SDK unavailable: %s cannot import grpc (run make deps-python as root to install python3-grpcio): %v %s",
			pyInterpreter, err, bytes.TrimSpace(out))
	}
}

// pyInstall copies the example script into dir as opentool-plugin-pyecho
// (edit, when not nil, changes its text first) and makes the plugin use
// this checkout's SDK (OPENTOOL_PYECHO_SDK, which the host passes on), not
// whatever the .pth of make deps-python points at.
func pyInstall(t *testing.T, dir string, edit func(string) string) string {
	t.Helper()
	src := filepath.Join(testutil.RepoRoot(t), "plugins", "opentool-plugin-pyecho")
	b, err := os.ReadFile(src)
	if err != nil {
		t.Fatal(err)
	}
	text := string(b)
	if edit != nil {
		text = edit(text)
	}
	tmp := filepath.Join(t.TempDir(), "opentool-plugin-pyecho")
	if err := os.WriteFile(tmp, []byte(text), 0o755); err != nil {
		t.Fatal(err)
	}
	dst := filepath.Join(dir, "opentool-plugin-pyecho")
	testutil.CopyFile(t, tmp, dst, 0o755)
	t.Setenv("OPENTOOL_PYECHO_SDK", filepath.Join(testutil.RepoRoot(t), "pluginsdk", "python"))
	return dst
}

// pyCall calls method with params (JSON text, "" for none) and returns the
// result object and the error object (one of them nil). Transport
// failures fail the test.
func pyCall(t *testing.T, url, method, params string) (map[string]any, map[string]any) {
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

// pyStats returns the example's counters.
func pyStats(t *testing.T, url string) map[string]any {
	t.Helper()
	r, e := pyCall(t, url, "stats", "")
	if e != nil {
		t.Fatalf("stats: %v", e)
	}
	return r
}

// pyEcho is one echo call for the load tests: the plugin's version, or an
// error for any failure (transport, HTTP status, JSON-RPC error).
func pyEcho(client *http.Client, url string, i int) (string, error) {
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

func TestPythonPluginLoadCallErrorsStreamCancel(t *testing.T) {
	pySkipUnlessGRPC(t)
	dir := t.TempDir()
	pyInstall(t, dir, nil)
	hp := startHostProc(t, dir)

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
	for _, want := range []string{"echo", "sum_numbers", "ticks", "sleep", "fail", "stats", "pid"} {
		if !got[want] {
			t.Errorf("/opentool/load lacks %s: %+v", want, doc.Functions)
		}
	}

	// Calls, the tool's own error code, any exception as 500.
	if r, e := pyCall(t, hp.url, "echo", `{"text":"héllo \u2603"}`); e != nil || r["echo"] != "héllo ☃" || r["version"] != "1.0.0" {
		t.Errorf("echo = %v %v", r, e)
	}
	if r, e := pyCall(t, hp.url, "sum_numbers", `{"values":[1.5,2,3]}`); e != nil || r["sum"] != 6.5 {
		t.Errorf("sum_numbers = %v %v", r, e)
	}
	for _, c := range []struct{ params, msg string }{
		{`{"values":[]}`, "must not be empty"},
		{`{"values":[1e308,1e308]}`, "overflows"},
	} {
		if r, e := pyCall(t, hp.url, "sum_numbers", c.params); e == nil || e["code"] != 400.0 || !strings.Contains(fmt.Sprint(e["message"]), c.msg) {
			t.Errorf("sum_numbers(%s) = %v %v, want error 400 %q", c.params, r, e, c.msg)
		}
	}
	if r, e := pyCall(t, hp.url, "fail", `{"message":"kaputt"}`); e == nil || e["code"] != 500.0 || e["message"] != "kaputt" {
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
	pidBefore := pluginPIDs(t, hp.url)["pyecho"]
	before := pyStats(t, hp.url)["cancelled"].(float64)
	client := &http.Client{Timeout: 300 * time.Millisecond}
	start := time.Now()
	_, err = client.Post(hp.url+"/opentool/call", "application/json", strings.NewReader(`{"jsonrpc":"2.0","method":"sleep","params":{"ms":20000},"id":1}`))
	if err == nil {
		t.Fatal("sleep 20 s answered before the client's 300 ms timeout")
	}
	testutil.Eventually(t, 5*time.Second, "the cancelled sleep is counted by the plugin", func() bool {
		s := pyStats(t, hp.url)
		return s["cancelled"].(float64) == before+1 && s["sleeping"].(float64) == 0
	})
	t.Logf("cancel reached the Python function %v after the call started (the client gave up at 300 ms)", time.Since(start).Round(time.Millisecond))
	if pid := pluginPIDs(t, hp.url)["pyecho"]; pid != pidBefore {
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
	first := pyStats(t, hp.url)["threads"].(float64)
	batch()
	var last float64
	testutil.Eventually(t, 5*time.Second, "no Python thread left behind by finished calls", func() bool {
		last = pyStats(t, hp.url)["threads"].(float64)
		return last <= first
	})
	t.Logf("Python threads after 20 concurrent calls: %v, after 20 more: %v", first, last)
}

func TestPythonPluginSIGKILLRestartAndReplaceUnderLoad(t *testing.T) {
	pySkipUnlessGRPC(t)
	dir := t.TempDir()
	pyInstall(t, dir, nil)
	hp := startHostProc(t, dir)

	// SIGKILL of the Python process: the host restarts it and it serves.
	pid := pluginPIDs(t, hp.url)["pyecho"]
	if pid == 0 || !alive(pid) {
		t.Fatalf("pyecho pid %d not running", pid)
	}
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	killed := time.Now()
	var newPID int
	testutil.Eventually(t, 15*time.Second, "pyecho restarted after SIGKILL", func() bool {
		newPID = pluginPIDs(t, hp.url)["pyecho"]
		if newPID == 0 || newPID == pid {
			return false
		}
		_, err := pyEcho(http.DefaultClient, hp.url, 1)
		return err == nil
	})
	t.Logf("pyecho SIGKILLed (pid %d): serving again as pid %d after %v", pid, newPID, time.Since(killed).Round(time.Millisecond))

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
				v, err := pyEcho(client, hp.url, i)
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
	pyInstall(t, dir, func(s string) string {
		return strings.Replace(s, `VERSION = "1.0.0"`, `VERSION = "2.0.0"`, 1)
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
	if p := pluginPIDs(t, hp.url)["pyecho"]; p == newPID {
		t.Errorf("pid %d unchanged after the replace", p)
	}
	testutil.Eventually(t, 15*time.Second, "the replaced process exits", func() bool { return zombieOrGone(newPID) })
}

func TestPythonPluginHostSIGKILLLeavesNoPythonProcess(t *testing.T) {
	pySkipUnlessGRPC(t)
	dir := t.TempDir()
	pyInstall(t, dir, nil)
	hp := startHostProc(t, dir)
	pid := pluginPIDs(t, hp.url)["pyecho"]
	if pid == 0 || !alive(pid) {
		t.Fatalf("pyecho pid %d not running", pid)
	}
	// A call in flight, so the process is busy when its host dies.
	go func() {
		client := &http.Client{Timeout: 10 * time.Second}
		resp, err := client.Post(hp.url+"/opentool/call", "application/json", strings.NewReader(`{"jsonrpc":"2.0","method":"sleep","params":{"ms":5000},"id":1}`))
		if err == nil {
			resp.Body.Close()
		}
	}()
	testutil.Eventually(t, 5*time.Second, "the sleep reached the plugin", func() bool {
		return pyStats(t, hp.url)["sleeping"].(float64) == 1
	})
	if err := hp.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	<-hp.done
	killed := time.Now()
	defer syscall.Kill(pid, syscall.SIGKILL)
	testutil.Eventually(t, 2*time.Second, "the Python plugin exits after host SIGKILL", func() bool { return zombieOrGone(pid) })
	t.Logf("Python plugin %d gone %v after host SIGKILL", pid, time.Since(killed).Round(time.Millisecond))
}

// pyLogTime matches the host's log lines "TIME [LEVEL] ...: MESSAGE: plugin=NAME".
var pyLogTime = regexp.MustCompile(`^(\S+) \[\w+\]\s+\S+: (plugin found|plugin ready): plugin=(\S+)`)

// pyRSS returns VmRSS of pid in KiB (0 when unknown).
func pyRSS(pid int) int {
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

// TestPythonPluginMeasure measures the Python example beside the Go
// calculator in one host (one run; logged, not asserted beyond sanity):
// cold start (plugin found -> ready in the host's log: copy, spawn,
// handshake, Load), median latency of 200 sequential calls, RSS.
func TestPythonPluginMeasure(t *testing.T) {
	pySkipUnlessGRPC(t)
	dir := t.TempDir()
	pyInstall(t, dir, nil)
	testutil.InstallPlugin(t, dir, "calculator", "./plugins/calculator")
	hp := startHostProc(t, dir)
	pids := pluginPIDs(t, hp.url)

	found, ready := map[string]time.Time{}, map[string]time.Time{}
	for _, line := range strings.Split(hp.logs.String(), "\n") {
		m := pyLogTime.FindStringSubmatch(line)
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
	pyLat := median("echo", `{"text":"hello"}`)
	goLat := median("add", `{"a":1,"b":2}`)

	for _, c := range []struct {
		name string
		lat  time.Duration
	}{{"pyecho", pyLat}, {"calculator", goLat}} {
		cold := ready[c.name].Sub(found[c.name])
		t.Logf("%-10s cold start (found -> ready) %v, median call latency %v (200 sequential /opentool/call), RSS %d KiB",
			c.name, cold.Round(time.Millisecond), c.lat.Round(time.Microsecond), pyRSS(pids[c.name]))
		if found[c.name].IsZero() || ready[c.name].IsZero() {
			t.Errorf("no start lines for %s in the host log", c.name)
		}
	}
}
