package e2e_test

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/opentool-host/opentool-host/testkit"
)

// hostProc is a real `opentool-host run` process on a free loopback port.
type hostProc struct {
	cmd  *exec.Cmd
	url  string // http://127.0.0.1:PORT
	logs *testkit.SyncBuffer
	done chan struct{}
	// logged is closed once every line the host wrote is in logs (after
	// done).
	logged chan struct{}
}

func startHostProc(t *testing.T, dir string, extra ...string) *hostProc {
	t.Helper()
	return startHostProcUntil(t, dir, "serving:", extra...)
}

// startHostProcUntil starts a host process and returns once it logged a
// line containing marker ("serving:" once every plugin started,
// "listening;" once the listener answers).
func startHostProcUntil(t *testing.T, dir, marker string, extra ...string) *hostProc {
	t.Helper()
	return startHostProcUnder(t, nil, dir, marker, extra...)
}

// startHostProcUnder is startHostProcUntil with the host started by the
// command wrap (its argv, the host's command line appended: setpriv ...
// --), or directly for nil.
func startHostProcUnder(t *testing.T, wrap []string, dir, marker string, extra ...string) *hostProc {
	t.Helper()
	return startHostProcAs(t, hostLaunch{bin: testkit.Build(t, "./cmd/opentool-host"), wrap: wrap}, dir, marker, extra...)
}

// hostLaunch is how startHostProcAs starts a host: its binary, the
// command that wraps it (nil: none) and its environment (nil: the test's).
type hostLaunch struct {
	bin  string
	wrap []string
	env  []string
}

// startHostProcAs starts `run` of the host as l says, and returns once it
// logged a line containing marker (as startHostProcUntil).
func startHostProcAs(t *testing.T, l hostLaunch, dir, marker string, extra ...string) *hostProc {
	t.Helper()
	bin, wrap := l.bin, l.wrap
	addr := testkit.FreeAddr(t)
	// No --drain-delay: the host's default (0) stops at once on SIGTERM
	// (drain_e2e_test.go and replicas_e2e_test.go set the delay).
	args := []string{"run", "--dir", dir, "--addr", addr, "--log-level", "debug"}
	if !slices.Contains(extra, "--state-dir") { // a test that restarts a host keeps its state folder
		args = append(args, "--state-dir", t.TempDir())
	}
	args = append(args, extra...)
	argv := append(slices.Clone(wrap), append([]string{bin}, args...)...)
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Env = l.env
	logs := &testkit.SyncBuffer{}
	pr, pw := io.Pipe()
	cmd.Stderr = pw
	hp := &hostProc{cmd: cmd, url: "http://" + addr, logs: logs, done: make(chan struct{}), logged: make(chan struct{})}
	ready := make(chan struct{})
	go func() {
		defer close(hp.logged)
		sc := bufio.NewScanner(pr)
		sc.Buffer(make([]byte, 1<<20), 1<<20)
		once := false
		for sc.Scan() {
			_, _ = io.WriteString(logs, sc.Text()+"\n")
			if !once && strings.Contains(sc.Text(), marker) {
				once = true
				close(ready)
			}
		}
	}()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { _ = cmd.Wait(); pw.Close(); close(hp.done) }()
	// The scanner goroutine owns the pipe's read side until EOF.
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		<-hp.done
		if t.Failed() {
			t.Logf("host log:\n%s", logs.String())
		}
	})
	select {
	case <-ready:
	case <-hp.done:
		t.Fatalf("host exited before serving:\n%s", logs.String())
	case <-time.After(30 * time.Second):
		t.Fatalf("host not serving after 30 s:\n%s", logs.String())
	}
	return hp
}

// rpc posts a JSON-RPC request and returns the HTTP status and decoded body.
func rpc(t *testing.T, url, body string) (int, map[string]any) {
	t.Helper()
	resp, err := http.Post(url+"/opentool/call", "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var m map[string]any
	if err := json.NewDecoder(resp.Body).Decode(&m); err != nil {
		t.Fatalf("decode response: %v", err)
	}
	return resp.StatusCode, m
}

// pluginPIDs returns each plugin's pid from GET /health, sending the API
// key when one is given.
func pluginPIDs(t *testing.T, url string, key ...string) map[string]int {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, url+"/health", nil)
	if len(key) > 0 {
		req.Header.Set("Authorization", "Bearer "+key[0])
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var h struct {
		Plugins []struct {
			Name string
			PID  int
		}
	}
	if err := json.NewDecoder(resp.Body).Decode(&h); err != nil {
		t.Fatal(err)
	}
	out := map[string]int{}
	for _, p := range h.Plugins {
		out[p.Name] = p.PID
	}
	return out
}

func alive(pid int) bool { return syscall.Kill(pid, 0) == nil }

// zombieOrGone reports whether pid no longer runs (gone, or a zombie
// waiting to be reaped by init).
func zombieOrGone(pid int) bool {
	if !alive(pid) {
		return true
	}
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return true
	}
	f := strings.Fields(string(b))
	return len(f) > 2 && f[2] == "Z"
}

func TestRunServesExamplePluginsOverHTTP(t *testing.T) {
	dir := t.TempDir()
	testkit.InstallPlugin(t, dir, "mock", "./plugins/mock")
	testkit.InstallPlugin(t, dir, "calculator", "./plugins/calculator")
	testkit.InstallPlugin(t, dir, "files", "./plugins/files")
	testkit.InstallPlugin(t, dir, "baddoc", "./testkit/plugins/baddoc")
	hp := startHostProc(t, dir)

	resp, err := http.Get(hp.url + "/opentool/version")
	if err != nil {
		t.Fatal(err)
	}
	var v map[string]string
	_ = json.NewDecoder(resp.Body).Decode(&v)
	resp.Body.Close()
	if v["version"] == "" {
		t.Fatalf("version = %v", v)
	}

	steps := []struct{ body, want string }{
		{`{"jsonrpc":"2.0","method":"count","id":"1"}`, `"result":{"count":2}`},
		{`{"jsonrpc":"2.0","method":"create","params":{"text":"Hi"},"id":"2"}`, `"result":{"id":2}`},
		{`{"jsonrpc":"2.0","method":"read","params":{"id":2},"id":3}`, `"result":{"text":"Hi"}`},
		{`{"jsonrpc":"2.0","method":"update","params":{"id":2,"text":"Yo"},"id":"4"}`, `"result":{"result":"Update successfully."}`},
		{`{"jsonrpc":"2.0","method":"delete","params":{"id":2},"id":"5"}`, `"result":{"result":"Delete successfully."}`},
		{`{"jsonrpc":"2.0","method":"run","id":"6"}`, `"error":{"code":500`},
		{`{"jsonrpc":"2.0","method":"add","params":{"a":2,"b":3},"id":"7"}`, `"result":{"result":5}`},
		{`{"jsonrpc":"2.0","method":"divide","params":{"a":2,"b":0},"id":"8"}`, `"error":{"code":400`},
		{`{"jsonrpc":"2.0","method":"read_text","params":{"path":"../../etc/passwd"},"id":"9"}`, `outside the root`},
		{`{"jsonrpc":"2.0","method":"missing","id":"10"}`, `"code":-32601`},
	}
	for _, s := range steps {
		resp, err := http.Post(hp.url+"/opentool/call", "application/json", strings.NewReader(s.body))
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 || !strings.Contains(string(b), s.want) {
			t.Errorf("%s\n -> %d %s\n want %s", s.body, resp.StatusCode, b, s.want)
		}
	}
	code, m := rpc(t, hp.url, `{"jsonrpc":"2.0","method":`)
	if code != 400 || m["error"].(map[string]any)["code"] != -32700.0 {
		t.Errorf("parse error: %d %v", code, m)
	}

	// The broken plugin is reported by name with its reason.
	list := exec.Command(testkit.Build(t, "./cmd/opentool-host"), "list", "--url", hp.url)
	out, err := list.CombinedOutput()
	if err != nil {
		t.Fatalf("list --url: %v\n%s", err, out)
	}
	for _, want := range []string{"calculator  add", "baddoc", "failed", "functions[0].name"} {
		if !strings.Contains(string(out), want) {
			t.Errorf("list output lacks %q:\n%s", want, out)
		}
	}
}

func TestHostSIGKILLLeavesNoPluginProcess(t *testing.T) {
	dir := t.TempDir()
	testkit.InstallPlugin(t, dir, "faulty", "./testkit/plugins/faulty")
	testkit.InstallPlugin(t, dir, "calculator", "./plugins/calculator")
	hp := startHostProc(t, dir)
	pids := pluginPIDs(t, hp.url)
	// The faulty plugin starts a grandchild (sleep 600) in the plugin's
	// process group.
	_, m := rpc(t, hp.url, `{"jsonrpc":"2.0","method":"spawn","id":1}`)
	child := int(m["result"].(map[string]any)["pid"].(float64))
	all := []int{pids["faulty"], pids["calculator"]}
	for _, pid := range all {
		if pid == 0 || !alive(pid) {
			t.Fatalf("plugin pids %v not running", pids)
		}
	}
	if err := hp.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	<-hp.done
	killed := time.Now()
	testkit.Eventually(t, 2*time.Second, "plugin processes exit after host SIGKILL", func() bool {
		for _, pid := range all {
			if !zombieOrGone(pid) {
				return false
			}
		}
		return true
	})
	t.Logf("plugins %v gone %v after host SIGKILL", all, time.Since(killed))
	// The grandchild is in the faulty plugin's process group, which the
	// plugin kills when the parent-death signal arrives.
	defer syscall.Kill(child, syscall.SIGKILL)
	testkit.Eventually(t, 2*time.Second, "plugin's own child exits after host SIGKILL", func() bool { return zombieOrGone(child) })
}

func TestSIGTERMDrainsInFlightCalls(t *testing.T) {
	dir := t.TempDir()
	testkit.InstallPlugin(t, dir, "faulty", "./testkit/plugins/faulty")
	hp := startHostProc(t, dir)
	pids := pluginPIDs(t, hp.url)
	type result struct {
		code int
		body string
		err  error
	}
	res := make(chan result, 1)
	go func() {
		resp, err := http.Post(hp.url+"/opentool/call", "application/json", strings.NewReader(`{"jsonrpc":"2.0","method":"sleep","params":{"ms":1000},"id":"slow"}`))
		if err != nil {
			res <- result{err: err}
			return
		}
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		res <- result{resp.StatusCode, string(b), err}
	}()
	testkit.Eventually(t, 10*time.Second, "the call reached the plugin", func() bool {
		_, m := rpc(t, hp.url, `{"jsonrpc":"2.0","method":"sleeps","id":1}`)
		r, _ := m["result"].(map[string]any)
		return r["active"] == 1.0
	})
	if err := hp.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	r := <-res
	if r.err != nil || r.code != 200 || !strings.Contains(r.body, `"result":{"slept_ms":1000}`) {
		t.Fatalf("in-flight call during SIGTERM: %d %q %v", r.code, r.body, r.err)
	}
	select {
	case <-hp.done:
	case <-time.After(10 * time.Second):
		t.Fatal("host did not exit after SIGTERM")
	}
	if code := hp.cmd.ProcessState.ExitCode(); code != 0 {
		t.Fatalf("exit code %d after SIGTERM", code)
	}
	if !zombieOrGone(pids["faulty"]) {
		t.Fatalf("plugin %d still running after host exit", pids["faulty"])
	}
	if !strings.Contains(hp.logs.String(), "stopped") {
		t.Fatalf("no orderly stop in log:\n%s", hp.logs.String())
	}
}

func TestValidateCommand(t *testing.T) {
	bin := testkit.Build(t, "./cmd/opentool-host")
	good := testkit.FixturePath(t, "reference-mock-tool.json")
	bad := filepath.Join(t.TempDir(), "bad.json")
	if err := os.WriteFile(bad, []byte(`{"opentool":"1.0.0","info":{"title":"x"},"functions":[{"name":"a b","description":"d","parameters":[{"name":"p","schema":{"type":"array"},"required":true}]}]}`), 0o644); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(bin, "validate", good).CombinedOutput()
	if err != nil || !strings.Contains(string(out), "ok") {
		t.Fatalf("validate fixture: %v\n%s", err, out)
	}
	out, err = exec.Command(bin, "validate", bad).CombinedOutput()
	ee, ok := err.(*exec.ExitError)
	if !ok || ee.ExitCode() != 1 {
		t.Fatalf("validate bad: err %v, want exit 1\n%s", err, out)
	}
	for _, want := range []string{"info.version", "functions[0].name", "functions[0].parameters[0].schema.items"} {
		if !strings.Contains(string(out), want) {
			t.Errorf("validate output lacks %q:\n%s", want, out)
		}
	}
	if n := strings.Count(strings.TrimSpace(string(out)), "\n") + 1; n < 3 {
		t.Errorf("want one fault per line, got %d lines:\n%s", n, out)
	}
}

func TestCallCommand(t *testing.T) {
	bin := testkit.Build(t, "./cmd/opentool-host")
	dir := t.TempDir()
	testkit.InstallPlugin(t, dir, "calculator", "./plugins/calculator")
	out, err := exec.Command(bin, "call", "--dir", dir, "--state-dir", t.TempDir(), "multiply", "--params", `{"a":6,"b":7}`).Output()
	if err != nil {
		t.Fatalf("call: %v", err)
	}
	var m map[string]any
	if err := json.Unmarshal(out, &m); err != nil || m["result"] != 42.0 {
		t.Fatalf("call output %q: %v", out, err)
	}
	cmd := exec.Command(bin, "call", "--dir", dir, "--state-dir", t.TempDir(), "divide", "--params", `{"a":1,"b":0}`)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	err = cmd.Run()
	if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 1 || !strings.Contains(stderr.String(), "400") {
		t.Fatalf("divide by zero: err %v stderr %q", err, stderr.String())
	}
}

func TestSIGHUPRescansWithoutWatch(t *testing.T) {
	dir := t.TempDir()
	testkit.InstallPlugin(t, dir, "calculator", "./plugins/calculator")
	hp := startHostProc(t, dir, "--watch=false")
	// Without --watch no watcher runs (the log is complete up to "serving"),
	// so the new file is not seen until SIGHUP.
	if strings.Contains(hp.logs.String(), "watching plugins dir") {
		t.Fatalf("--watch=false still watches:\n%s", hp.logs.String())
	}
	testkit.InstallPlugin(t, dir, "mock", "./plugins/mock")
	if _, m := rpc(t, hp.url, `{"jsonrpc":"2.0","method":"count","id":1}`); m["error"] == nil {
		t.Fatalf("mock served without watch or SIGHUP: %v", m)
	}
	if err := hp.cmd.Process.Signal(syscall.SIGHUP); err != nil {
		t.Fatal(err)
	}
	testkit.Eventually(t, 10*time.Second, "mock served after SIGHUP", func() bool {
		_, m := rpc(t, hp.url, `{"jsonrpc":"2.0","method":"count","id":1}`)
		return m["error"] == nil
	})
}
