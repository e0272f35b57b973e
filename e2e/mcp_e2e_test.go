package e2e_test

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/opentool-host/opentool-host/testkit"
)

// mcpStdio is a real `opentool-host mcp` process and the SDK client
// session connected to it over its stdin/stdout.
type mcpStdio struct {
	cs       *mcp.ClientSession
	cmd      *exec.Cmd
	stderr   *testkit.SyncBuffer
	stateDir string
}

// startMCPStdio runs `opentool-host mcp --dir dir`, connects to it with
// mcp.CommandTransport and returns once every plugin started.
func startMCPStdio(t *testing.T, dir string, opts *mcp.ClientOptions) *mcpStdio {
	t.Helper()
	m := &mcpStdio{stderr: &testkit.SyncBuffer{}, stateDir: t.TempDir()}
	m.cmd = exec.Command(testkit.Build(t, "./cmd/opentool-host"), "mcp", "--dir", dir, "--log-level", "debug", "--state-dir", m.stateDir, "--call-timeout", "20s")
	m.cmd.Stderr = m.stderr
	started := mcpStarted(m.cmd)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "e2e", Version: "1"}, opts).Connect(ctx, &mcp.CommandTransport{Command: m.cmd}, nil)
	if err != nil {
		t.Fatalf("connect: %v\n%s", err, m.stderr.String())
	}
	waitMCPStarted(t, started)
	m.cs = cs
	t.Cleanup(func() {
		_ = cs.Close()
		if t.Failed() {
			t.Logf("mcp stderr:\n%s", m.stderr.String())
		}
	})
	return m
}

// mcpStarted makes cmd, an `opentool-host mcp` not yet started and
// logging at info level or finer, copy its stderr to the writer it had
// and close the returned channel once it logs that every plugin started.
// The stdio front end serves each plugin as it comes up, so a test that
// wants the whole tools/list waits for this (waitMCPStarted).
func mcpStarted(cmd *exec.Cmd) <-chan struct{} {
	started := make(chan struct{})
	var once sync.Once
	seen := &testkit.SyncBuffer{}
	prev := cmd.Stderr
	cmd.Stderr = msWriter(func(s string) {
		if prev != nil {
			_, _ = io.WriteString(prev, s)
		}
		_, _ = seen.Write([]byte(s))
		if strings.Contains(seen.String(), "plugins started") {
			once.Do(func() { close(started) })
		}
	})
	return started
}

// waitMCPStarted waits up to 30 s for started (mcpStarted).
func waitMCPStarted(t *testing.T, started <-chan struct{}) {
	t.Helper()
	select {
	case <-started:
	case <-time.After(30 * time.Second):
		t.Fatal("opentool-host mcp did not log 'plugins started' within 30 s")
	}
}

// callTool calls name with args; it fails the test on a protocol error.
func callTool(t *testing.T, cs *mcp.ClientSession, name string, args any) *mcp.CallToolResult {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: name, Arguments: args})
	if err != nil {
		t.Fatalf("tools/call %s: %v", name, err)
	}
	return res
}

// structured returns the result object of a successful call.
func structured(t *testing.T, res *mcp.CallToolResult) map[string]any {
	t.Helper()
	m, ok := res.StructuredContent.(map[string]any)
	if res.IsError || !ok {
		t.Fatalf("call failed: %+v", res.Content)
	}
	return m
}

// errorText returns the text and error kind of an isError result.
func errorText(t *testing.T, res *mcp.CallToolResult) (string, any) {
	t.Helper()
	if !res.IsError || len(res.Content) != 1 {
		t.Fatalf("want one isError text block, got %+v", res)
	}
	meta, _ := res.Meta["opentool-host/error"].(map[string]any)
	return res.Content[0].(*mcp.TextContent).Text, meta["kind"]
}

// toolNames lists the tools of cs, sorted.
func toolNames(t *testing.T, cs *mcp.ClientSession) []string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	res, err := cs.ListTools(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, tool := range res.Tools {
		names = append(names, tool.Name)
	}
	slices.Sort(names)
	return names
}

// TestMCPStdio runs a desktop client's session over stdio against the
// example plugins: list, calls, errors, progress, cancellation, a plugin
// killed mid-call, hot reload, and a clean exit at the end of input.
func TestMCPStdio(t *testing.T) {
	dir := t.TempDir()
	for _, p := range []string{"mock", "files"} {
		testkit.InstallPlugin(t, dir, p, "./plugins/"+p)
	}
	testkit.InstallPlugin(t, dir, "faulty", "./testkit/plugins/faulty")
	var mu sync.Mutex
	var progress []float64
	changed := make(chan struct{}, 16)
	m := startMCPStdio(t, dir, &mcp.ClientOptions{
		ToolListChangedHandler: func(context.Context, *mcp.ToolListChangedRequest) { changed <- struct{}{} },
		ProgressNotificationHandler: func(_ context.Context, r *mcp.ProgressNotificationClientRequest) {
			mu.Lock()
			defer mu.Unlock()
			progress = append(progress, r.Params.Progress)
		},
	})
	cs := m.cs

	want := []string{"alloc", "count", "create", "delete", "echo", "env", "exit", "hang", "list_dir", "panic", "pid", "read", "read_text", "run", "search_text",
		"sequentiallyRead", "sleep", "sleeps", "spawn", "spawnSetsid", "spin", "stuckStream", "ticks", "trace", "update"}
	if got := toolNames(t, cs); !slices.Equal(got, want) {
		t.Fatalf("tools = %v\nwant %v", got, want)
	}

	// CRUD round trip, a tool error, invalid arguments.
	id := structured(t, callTool(t, cs, "create", map[string]any{"text": "Hi"}))["id"]
	if got := structured(t, callTool(t, cs, "read", map[string]any{"id": id}))["text"]; got != "Hi" {
		t.Errorf("read = %v", got)
	}
	if txt, kind := errorText(t, callTool(t, cs, "run", nil)); kind != "tool_error" || !strings.Contains(txt, "run failed") {
		t.Errorf("run: %q %v", txt, kind)
	}
	if txt, kind := errorText(t, callTool(t, cs, "read", map[string]any{"id": "x"})); kind != "invalid_params" || !strings.HasPrefix(txt, "invalid params: id:") {
		t.Errorf("invalid params: %q %v", txt, kind)
	}

	// The client's trace context in params._meta reaches the plugin.
	const traceID = "4bf92f3577b34da6a3ce929d0e0e4736"
	tctx, tcancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer tcancel()
	tres, err := cs.CallTool(tctx, &mcp.CallToolParams{Name: "trace", Arguments: map[string]any{},
		Meta: mcp.Meta{"traceparent": "00-" + traceID + "-00f067aa0ba902b7-01"}})
	if err != nil {
		t.Fatal(err)
	}
	if got := structured(t, tres)["trace_id"]; got != traceID {
		t.Errorf("the plugin saw trace %v, want %s (params._meta.traceparent)", got, traceID)
	}

	// A streaming function with a progress token.
	params := &mcp.CallToolParams{Name: "sequentiallyRead", Arguments: map[string]any{}}
	params.SetProgressToken("s")
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	res, err := cs.CallTool(ctx, params)
	if err != nil {
		t.Fatal(err)
	}
	items := structured(t, res)["items"].([]any)
	testkit.Eventually(t, 10*time.Second, "a progress notification per item", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(progress) == len(items) && progress[len(progress)-1] == float64(len(items))
	})

	checkStdioCancel(t, cs)
	checkStdioKill(t, cs)

	// Hot reload: a binary dropped into --dir.
	testkit.InstallPlugin(t, dir, "calculator", "./plugins/calculator")
	deadline := time.After(20 * time.Second)
	for !slices.Contains(toolNames(t, cs), "add") {
		select {
		case <-changed:
		case <-deadline:
			t.Fatal("no tools/list_changed listing add")
		}
	}
	if got := structured(t, callTool(t, cs, "add", map[string]any{"a": 2, "b": 3}))["result"]; got != 5.0 {
		t.Errorf("add = %v", got)
	}

	checkStdioExit(t, m)
}

// checkStdioCancel: notifications/cancelled over stdio cancels the call
// in the plugin.
func checkStdioCancel(t *testing.T, cs *mcp.ClientSession) {
	t.Helper()
	before := structured(t, callTool(t, cs, "sleeps", nil))["cancelled"].(float64)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	errc := make(chan error, 1)
	go func() {
		_, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "sleep", Arguments: map[string]any{"ms": 60000}})
		errc <- err
	}()
	testkit.Eventually(t, 10*time.Second, "the sleep runs in the plugin", func() bool {
		return structured(t, callTool(t, cs, "sleeps", nil))["active"] == 1.0
	})
	cancel()
	if err := <-errc; !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled call: %v", err)
	}
	testkit.Eventually(t, 10*time.Second, "the plugin sees the call cancelled", func() bool {
		s := structured(t, callTool(t, cs, "sleeps", nil))
		return s["cancelled"].(float64) > before && s["active"] == 0.0
	})
}

// checkStdioKill: a plugin SIGKILLed mid-call gives an isError result and
// the next call succeeds.
func checkStdioKill(t *testing.T, cs *mcp.ClientSession) {
	t.Helper()
	pid := int(structured(t, callTool(t, cs, "pid", nil))["pid"].(float64))
	done := make(chan *mcp.CallToolResult, 1)
	go func() { done <- callTool(t, cs, "sleep", map[string]any{"ms": 60000}) }()
	testkit.Eventually(t, 10*time.Second, "the sleep runs in the plugin", func() bool {
		return structured(t, callTool(t, cs, "sleeps", nil))["active"] == 1.0
	})
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	if txt, kind := errorText(t, <-done); kind != "plugin_exited" || !strings.Contains(txt, "signal: killed") {
		t.Errorf("killed mid-call: %q %v", txt, kind)
	}
	if again := structured(t, callTool(t, cs, "pid", nil))["pid"].(float64); int(again) == pid {
		t.Errorf("the next call ran in the killed process %d", pid)
	}
}

// checkStdioExit: at the end of input the process exits 0 and leaves no
// plugin process (nor a plugin's child) and no state folder behind.
func checkStdioExit(t *testing.T, m *mcpStdio) {
	t.Helper()
	pid := int(structured(t, callTool(t, m.cs, "pid", nil))["pid"].(float64))
	child := int(structured(t, callTool(t, m.cs, "spawn", nil))["pid"].(float64))
	defer syscall.Kill(child, syscall.SIGKILL)
	if err := m.cs.Close(); err != nil { // closes stdin and waits for the exit
		t.Errorf("close: %v (exit status %v)", err, m.cmd.ProcessState)
	}
	if code := m.cmd.ProcessState.ExitCode(); code != 0 {
		t.Errorf("exit code %d at the end of input", code)
	}
	testkit.Eventually(t, 5*time.Second, "no plugin process left", func() bool { return zombieOrGone(pid) && zombieOrGone(child) })
	left, _ := os.ReadDir(m.stateDir)
	left = slices.DeleteFunc(left, func(e os.DirEntry) bool { // the remembered owners of names stay, on purpose
		return strings.HasPrefix(e.Name(), "owners-") && strings.HasSuffix(e.Name(), ".json")
	})
	if len(left) != 0 {
		t.Errorf("state folder left behind: %v", left)
	}
	if !strings.Contains(m.stderr.String(), "end of input") {
		t.Errorf("no orderly stop in the log:\n%s", m.stderr.String())
	}
}

// TestMCPStdioOnlyMCPOnStdoutAndSIGTERM speaks raw newline-delimited
// JSON-RPC (the 2025-06-18 initialize handshake) to `opentool-host mcp`:
// every stdout line is one JSON-RPC message, and SIGTERM drains the call
// in flight, answers it and exits 0.
func TestMCPStdioOnlyMCPOnStdoutAndSIGTERM(t *testing.T) {
	dir := t.TempDir()
	testkit.InstallPlugin(t, dir, "faulty", "./testkit/plugins/faulty")
	cmd := exec.Command(testkit.Build(t, "./cmd/opentool-host"), "mcp", "--dir", dir, "--log-level", "trace", "--state-dir", t.TempDir())
	stderr := &testkit.SyncBuffer{}
	cmd.Stderr = stderr
	stdin, _ := cmd.StdinPipe()
	stdout, _ := cmd.StdoutPipe()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	lines := make(chan string, 100)
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			lines <- sc.Text()
		}
		close(lines)
		_ = cmd.Wait()
		close(done)
	}()
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		<-done
		if t.Failed() {
			t.Logf("stderr:\n%s", stderr.String())
		}
	})
	send := func(msg string) {
		if _, err := io.WriteString(stdin, msg+"\n"); err != nil {
			t.Fatal(err)
		}
	}
	// next is the next answer on stdout; notifications (tools/list_changed
	// as the plugins come up) are skipped.
	next := func() map[string]any {
		for {
			select {
			case l, ok := <-lines:
				var m map[string]any
				if !ok || json.Unmarshal([]byte(l), &m) != nil || m["jsonrpc"] != "2.0" {
					t.Fatalf("stdout line %q (open %v) is not a JSON-RPC message", l, ok)
				}
				if method, _ := m["method"].(string); strings.HasPrefix(method, "notifications/") {
					continue
				}
				return m
			case <-time.After(20 * time.Second):
				t.Fatal("no answer on stdout")
			}
			return nil
		}
	}
	send(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}`)
	if res, _ := next()["result"].(map[string]any); res["protocolVersion"] != "2025-06-18" || fmt.Sprint(res["serverInfo"]) == "" {
		t.Fatalf("initialize: %v", res)
	}
	send(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	send(`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"sleep","arguments":{"ms":1000}}}`)
	id := 3
	testkit.Eventually(t, 10*time.Second, "the sleep call runs in the plugin", func() bool {
		id++
		send(fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"sleeps","arguments":{}}}`, id))
		res, _ := next()["result"].(map[string]any)
		return fmt.Sprint(res["structuredContent"]) == "map[active:1 cancelled:0]"
	})
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	m := next()
	if res, _ := m["result"].(map[string]any); m["id"] != 2.0 || res["isError"] == true || fmt.Sprint(res["structuredContent"]) != "map[slept_ms:1000]" {
		t.Fatalf("the call in flight at SIGTERM: %v", m)
	}
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("no exit after SIGTERM")
	}
	if code := cmd.ProcessState.ExitCode(); code != 0 {
		t.Fatalf("exit code %d after SIGTERM", code)
	}
	if l, ok := <-lines; ok {
		t.Fatalf("stdout after the answers: %q", l)
	}
}

// TestRunServesMCP: `run` serves /mcp next to /opentool behind the same
// API keys, with sessions (the default) or --mcp-stateless; a client
// holding a stream open for notifications does not delay SIGTERM.
func TestRunServesMCP(t *testing.T) {
	dir := t.TempDir()
	testkit.InstallPlugin(t, dir, "calculator", "./plugins/calculator")
	for _, sessions := range []bool{false, true} {
		args := []string{"--api-key", "k1"}
		if !sessions {
			args = append(args, "--mcp-stateless")
		}
		hp := startHostProc(t, dir, args...)
		resp, err := http.Post(hp.url+"/mcp", "application/json", strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"tools/list"}`))
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusUnauthorized {
			t.Errorf("sessions %v: /mcp without a key: %d, want 401", sessions, resp.StatusCode)
		}
		tr := &mcp.StreamableClientTransport{Endpoint: hp.url + "/mcp", HTTPClient: &http.Client{Transport: bearer("k1")}, MaxRetries: -1}
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		// With a list_changed handler the client holds a stream open:
		// subscriptions/listen (stateless) or the session's GET.
		opts := &mcp.ClientOptions{ToolListChangedHandler: func(context.Context, *mcp.ToolListChangedRequest) {}}
		cs, err := mcp.NewClient(&mcp.Implementation{Name: "e2e", Version: "1"}, opts).Connect(ctx, tr, nil)
		cancel()
		if err != nil {
			t.Fatalf("sessions %v: connect: %v", sessions, err)
		}
		if got := structured(t, callTool(t, cs, "add", map[string]any{"a": 2, "b": 3}))["result"]; got != 5.0 {
			t.Errorf("sessions %v: add = %v", sessions, got)
		}
		start := time.Now()
		if err := hp.cmd.Process.Signal(syscall.SIGTERM); err != nil {
			t.Fatal(err)
		}
		select {
		case <-hp.done:
		case <-time.After(20 * time.Second):
			t.Fatalf("sessions %v: no exit after SIGTERM", sessions)
		}
		if d := time.Since(start); d > 5*time.Second {
			t.Errorf("sessions %v: SIGTERM took %v", sessions, d)
		}
		cs.Close()
	}
}

// bearer is a RoundTripper that sends key as a Bearer token.
type bearer string

func (b bearer) RoundTrip(req *http.Request) (*http.Response, error) {
	req = req.Clone(req.Context())
	req.Header.Set("Authorization", "Bearer "+string(b))
	return http.DefaultTransport.RoundTrip(req)
}
