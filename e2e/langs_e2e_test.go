package e2e_test

// End-to-end tests of the plugin SDKs for other languages through their
// example plugins, served by a real host process: real Python and Node
// processes, loopback HTTP only. pluginsdk/python's
// plugins/opentool-plugin-pyecho and pluginsdk/node's
// plugins/opentool-plugin-nodeecho declare the same functions (echo,
// sum_numbers, ticks, sleep, fail, stats, trace, pid, and for plugin
// protocol 3 picture, an MCP result with an image block, steps, which
// reports progress and logs, and confirm, which asks the MCP client), so
// one test runs against each. A language whose runtime or SDK packages are
// missing skips, saying why (make deps-python, make deps-node).

import (
	"bytes"
	"context"
	"encoding/base64"
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

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/opentool-host/opentool-host/testkit"
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
	// (Python call threads, Node active handles).
	leak string
	// missing says why the runtime or the SDK cannot run here ("" when they
	// can).
	missing func(t *testing.T) string
}

// pyInterpreter is the interpreter the Python example's shebang names.
const pyInterpreter = "/usr/bin/python3"

var langPlugins = []langPlugin{
	{
		lang: "python", name: "pyecho", sdk: "pluginsdk/python", leak: "call_threads",
		version: func(v string) string { return `VERSION = "` + v + `"` },
		missing: func(t *testing.T) string {
			out, err := exec.Command(pyInterpreter, "-c", "import grpc, google.protobuf, cryptography").CombinedOutput()
			if err != nil {
				return fmt.Sprintf("Python plugin SDK unavailable: %s cannot import grpc or cryptography (run make deps-python as root to install python3-grpcio and python3-cryptography): %v %s",
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
			sdk := filepath.Join(testkit.RepoRoot(t), "pluginsdk", "node")
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
	b, err := os.ReadFile(filepath.Join(testkit.RepoRoot(t), "plugins", file))
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
	testkit.CopyFile(t, tmp, dst, 0o755)
	t.Setenv("OPENTOOL__"+strings.ToUpper(lp.name)+"__SDK", filepath.Join(testkit.RepoRoot(t), filepath.FromSlash(lp.sdk)))
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
	testkit.Eventually(t, 5*time.Second, "the cancelled sleep is counted by the plugin", func() bool {
		s := langStats(t, hp.url)
		return s["cancelled"].(float64) == before+1 && s["sleeping"].(float64) == 0
	})
	t.Logf("cancel reached the %s function %v after the call started (the client gave up at 300 ms)", lp.lang, time.Since(start).Round(time.Millisecond))
	if pid := pluginPIDs(t, hp.url)[lp.name]; pid != pidBefore {
		t.Errorf("plugin pid %d -> %d: the cancelled call cost the process", pidBefore, pid)
	}

	// Concurrent calls run at once (the SDK's thread pool): 20 long sleeps
	// are all running together, counted by the plugin itself, and all end
	// when their callers give up.
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	for i := 0; i < 20; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			req, _ := http.NewRequestWithContext(ctx, http.MethodPost, hp.url+"/opentool/call", strings.NewReader(`{"jsonrpc":"2.0","method":"sleep","params":{"ms":60000},"id":1}`))
			req.Header.Set("Content-Type", "application/json")
			if resp, err := http.DefaultClient.Do(req); err == nil {
				resp.Body.Close()
			}
		}()
	}
	var sleeping float64
	testkit.Eventually(t, 20*time.Second, "20 sleeps running at once in the plugin", func() bool {
		sleeping = langStats(t, hp.url)["sleeping"].(float64)
		return sleeping == 20
	})
	cancel()
	wg.Wait()
	testkit.Eventually(t, 10*time.Second, "the 20 cancelled sleeps end", func() bool {
		return langStats(t, hp.url)["sleeping"].(float64) == 0
	})

	// Two rounds of calls that finish: the second must not leave more
	// behind than the first (each Invoke reads its request stream in a
	// second thread that must end with the call).
	batch := func() {
		var wg sync.WaitGroup
		var failed atomic.Int32
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
		if failed.Load() != 0 {
			t.Errorf("20 concurrent sleeps of 300 ms: %d failed", failed.Load())
		}
	}
	batch()
	var first float64
	testkit.Eventually(t, 10*time.Second, "the first round's "+lp.leak+" settle", func() bool {
		a := langStats(t, hp.url)[lp.leak].(float64)
		b := langStats(t, hp.url)[lp.leak].(float64)
		first = b
		return a == b
	})
	batch()
	var last float64
	testkit.Eventually(t, 10*time.Second, "no "+lp.leak+" left behind by finished calls", func() bool {
		last = langStats(t, hp.url)[lp.leak].(float64)
		return last <= first
	})
	t.Logf("%s %s after 20 concurrent calls: %v, after 20 more: %v", lp.lang, lp.leak, first, last)
}

// langDotPNG is the 1x1 orange PNG the examples' picture returns.
const langDotPNG = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAIAAACQd1PeAAAADElEQVR42mP438EAAAQRAYhPXesHAAAAAElFTkSuQmCC"

// TestLanguagePluginMCPResultsAndMessages: what the Python and Node SDKs
// say beyond a result object (plugin protocol 3) reaches an MCP client of
// the host's /mcp as it is: picture's content blocks (a text and an image,
// type, data and mimeType exactly), steps' notifications/progress with the
// client's own token and its notifications/message at the level the
// client set, confirm's elicitation/create (answered by the client);
// OpenTool's /opentool/call gets the documented projection. Under
// protocol 2 (the SDKs before) picture reached MCP clients as one text
// block of JSON, steps' progress and log messages not at all, and no
// question could be asked.
func TestLanguagePluginMCPResultsAndMessages(t *testing.T) {
	forEachLang(t, testLangMCPResultsAndMessages)
}

func testLangMCPResultsAndMessages(t *testing.T, lp langPlugin) {
	hp, _ := lp.serve(t, t.TempDir())
	t.Run("content", func(t *testing.T) { testLangMCPContent(t, hp) })
	t.Run("progress", func(t *testing.T) { testLangMCPProgress(t, hp, lp) })
	t.Run("elicitation", func(t *testing.T) { testLangMCPElicitation(t, hp) })
}

// testLangMCPElicitation: confirm's elicitation/create through /mcp on
// host hp, answered by a client that can, refused for those that cannot.
func testLangMCPElicitation(t *testing.T, hp *hostProc) {
	asker := llAskerClient(t, &mcp.StreamableClientTransport{Endpoint: hp.url + "/mcp"})
	confirm := &mcp.CallToolParams{Name: "confirm", Arguments: map[string]any{"question": "sure?"}}
	if got := llCall(t, asker, confirm); !strings.Contains(got, `"structuredContent":{"action":"accept","answer":"yes: sure?"}`) {
		t.Errorf("confirm through the host = %s, want the client's answer", got)
	}
	// A client without the capability: the plugin hears why.
	plain := llHost(t, hp, &mcp.ClientOptions{Capabilities: &mcp.ClientCapabilities{}})
	if got := llCall(t, plain, confirm); !strings.Contains(got, `"isError":true`) || !strings.Contains(got, "did not declare the elicitation capability") {
		t.Errorf("confirm from a client without elicitation = %s", got)
	}
	// An OpenTool caller cannot answer either.
	if r, e := langCall(t, hp.url, "confirm", `{"question":"q"}`); e == nil || !strings.Contains(fmt.Sprint(e["message"]), "is not an MCP client that can answer it") {
		t.Errorf("/opentool/call confirm = %v %v", r, e)
	}
}

// testLangMCPContent: picture through /mcp and /opentool/call on host hp.
func testLangMCPContent(t *testing.T, hp *hostProc) {
	cs := llHost(t, hp, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()

	// The image block exactly, beside the text block.
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "picture", Arguments: map[string]any{"caption": "a dot"}})
	if err != nil {
		t.Fatalf("tools/call picture: %v", err)
	}
	raw, _ := json.Marshal(res)
	if res.IsError || res.StructuredContent != nil || len(res.Content) != 2 {
		t.Fatalf("picture over /mcp = %s, want a text block and an image block", raw)
	}
	if tc, ok := res.Content[0].(*mcp.TextContent); !ok || tc.Text != "a dot" {
		t.Errorf("picture's first block = %#v, want text \"a dot\"", res.Content[0])
	}
	img, ok := res.Content[1].(*mcp.ImageContent)
	if !ok {
		t.Fatalf("picture's second block = %#v, want an image (%s)", res.Content[1], raw)
	}
	if got := base64.StdEncoding.EncodeToString(img.Data); got != langDotPNG || img.MIMEType != "image/png" {
		t.Errorf("picture's image: data %s, mimeType %q; want %s, image/png", got, img.MIMEType, langDotPNG)
	}
	want := `{"content":[{"type":"text","text":"a dot"},{"type":"image","mimeType":"image/png","data":"` + langDotPNG + `"}]}`
	if string(raw) != want {
		t.Errorf("picture over /mcp:\n%s\nwant\n%s", raw, want)
	}

	// OpenTool callers: {"content": [the blocks as sent], "text": TEXT}.
	r, e := langCall(t, hp.url, "picture", `{"caption":"a dot"}`)
	got, _ := json.Marshal(r)
	wantObj := `{"content":[{"text":"a dot","type":"text"},{"data":"` + langDotPNG + `","mimeType":"image/png","type":"image"}],"text":"a dot"}`
	if e != nil || string(got) != wantObj {
		t.Errorf("/opentool/call picture = %s %v, want %s", got, e, wantObj)
	}
}

// testLangMCPProgress: steps' progress and log messages through /mcp on
// host hp, and ticks' progress on /opentool/streamCall.
func testLangMCPProgress(t *testing.T, hp *hostProc, lp langPlugin) {
	var col llCollector
	cs := llHost(t, hp, col.options())
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()

	// Progress with the client's token and log messages at its level.
	if err := cs.SetLoggingLevel(ctx, &mcp.SetLoggingLevelParams{Level: "info"}); err != nil {
		t.Fatal(err)
	}
	p := &mcp.CallToolParams{Name: "steps", Arguments: map[string]any{"n": 3}}
	p.SetProgressToken("tok-" + lp.lang)
	if out := llCall(t, cs, p); !strings.Contains(out, `"structuredContent":{"reported":3,"steps":3}`) {
		t.Errorf("steps with a progress token = %s, want reported 3", out)
	}
	progress, logs := col.take(3, 3)
	wantP := []string{"tok-" + lp.lang + " 1/3 step 1 of 3", "tok-" + lp.lang + " 2/3 step 2 of 3", "tok-" + lp.lang + " 3/3 step 3 of 3"}
	if fmt.Sprint(progress) != fmt.Sprint(wantP) {
		t.Errorf("steps' progress notifications %q, want %q", progress, wantP)
	}
	wantL := []string{`info steps "step 1 of 3"`, `info steps "step 2 of 3"`, `info steps "step 3 of 3"`}
	if fmt.Sprint(logs) != fmt.Sprint(wantL) {
		t.Errorf("steps' log messages %q, want %q", logs, wantL)
	}
	// No token: no progress; a level above info: no log messages.
	if err := cs.SetLoggingLevel(ctx, &mcp.SetLoggingLevelParams{Level: "warning"}); err != nil {
		t.Fatal(err)
	}
	if out := llCall(t, cs, &mcp.CallToolParams{Name: "steps", Arguments: map[string]any{"n": 2}}); !strings.Contains(out, `"reported":0`) {
		t.Errorf("steps without a progress token = %s, want reported 0", out)
	}
	time.Sleep(200 * time.Millisecond)
	if progress, logs := col.take(0, 0); len(progress) != 0 || len(logs) != 0 {
		t.Errorf("without a progress token at level warning: progress %q, log messages %q; want none", progress, logs)
	}
	// An OpenTool caller asked for no progress.
	if r, e := langCall(t, hp.url, "steps", `{"n":2}`); e != nil || r["reported"] != 0.0 || r["steps"] != 2.0 {
		t.Errorf("/opentool/call steps = %v %v", r, e)
	}
	// /opentool/streamCall asks for progress: ticks' progress arrives as
	// event:progress frames between its items.
	resp, err := http.Post(hp.url+"/opentool/streamCall", "application/json", strings.NewReader(`{"jsonrpc":"2.0","method":"ticks","params":{"n":2},"id":1}`))
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	var events []string
	for _, line := range strings.Split(string(body), "\n") {
		if ev, ok := strings.CutPrefix(line, "event:"); ok {
			events = append(events, ev)
		}
	}
	if want := "[start progress data progress data done]"; fmt.Sprint(events) != want || !strings.Contains(string(body), `data:{"progress":2,"total":2,"message":"tick 2"}`) {
		t.Errorf("streamCall ticks events %v, want %s:\n%s", events, want, body)
	}
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
	testkit.Eventually(t, 15*time.Second, lp.name+" restarted after SIGKILL", func() bool {
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
	testkit.Eventually(t, 20*time.Second, "the replaced script serves", func() bool { return sawNew.Load() })
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
	testkit.Eventually(t, 15*time.Second, "the replaced process exits", func() bool { return zombieOrGone(newPID) })
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
	testkit.Eventually(t, 5*time.Second, "the sleep reached the plugin", func() bool {
		return langStats(t, hp.url)["sleeping"].(float64) == 1
	})
	if err := hp.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	<-hp.done
	killed := time.Now()
	defer syscall.Kill(pid, syscall.SIGKILL)
	testkit.Eventually(t, 2*time.Second, "the "+lp.lang+" plugin exits after host SIGKILL", func() bool { return zombieOrGone(pid) })
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
	testkit.InstallPlugin(t, dir, "calculator", "./plugins/calculator")
	testkit.CopyFile(t, filepath.Join(testkit.RepoRoot(t), "plugins", "text.tools.json"), filepath.Join(dir, "text.tools.json"), 0o644)
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
		cmd.Dir = filepath.Join(testkit.RepoRoot(t), filepath.FromSlash(lp.sdk))
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

// TestPythonSDKUnitTests runs the Python SDK's own tests
// (pluginsdk/python/tests, unittest): content blocks and their projection,
// Context's progress and log messages, the protocol version answered, the
// call's outbox, and the example spoken to over gRPC as a host of protocol
// 3 and one of protocol 2 would.
func TestPythonSDKUnitTests(t *testing.T) {
	for _, lp := range langPlugins {
		if lp.lang != "python" {
			continue
		}
		if why := lp.missing(t); why != "" {
			t.Skip(why)
		}
		cmd := exec.Command(pyInterpreter, "-m", "unittest", "discover", "-s", "tests", "-v")
		cmd.Dir = filepath.Join(testkit.RepoRoot(t), filepath.FromSlash(lp.sdk))
		cmd.Env = append(os.Environ(), "PYTHONDONTWRITEBYTECODE=1")
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("python3 -m unittest in %s: %v\n%s", cmd.Dir, err, out)
		}
		for _, line := range strings.Split(string(out), "\n") {
			if strings.HasSuffix(line, " ... ok") || strings.HasPrefix(line, "Ran ") {
				t.Log(line)
			}
		}
	}
}
