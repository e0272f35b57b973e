package e2e_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/opentool-host/opentool-host/testkit"
)

// TestCodeModeOverFrontEnds: the real binary with --code-mode serves
// run_code on /mcp, /opentool/call and /otc. Over /mcp a program of 100
// add calls returns 100; a key allowed only plugin:calculator is shown
// run_code with the calculator's declarations and none of the mock's,
// and inside its program the mock's create is "not served", as outside;
// a key of burst 3 pays for its session's requests, run_code's and one
// per inner call, so an inner call before the fifth is refused with 429.
func TestCodeModeOverFrontEnds(t *testing.T) {
	dir := t.TempDir()
	for _, p := range []string{"calculator", "mock"} {
		testkit.InstallPlugin(t, dir, p, "./plugins/"+p)
	}
	keys := filepath.Join(t.TempDir(), "keys.json")
	if err := os.WriteFile(keys, []byte(`{"keys":[{"name":"all","key":"k-all","allow":["*"]},`+
		`{"name":"calc","key":"k-calc","allow":["plugin:calculator"]},`+
		`{"name":"rated","key":"k-rated","allow":["*"],"rate":{"per_second":0.001,"burst":3}}]}`), 0o600); err != nil {
		t.Fatal(err)
	}
	hp := startHostProc(t, dir, "--api-keys-file", keys, "--code-mode", "--code-runner", testkit.Build(t, "./cmd/opentool-host-coderunner"))

	all := connectMCP(t, hp.url, "k-all")
	res, err := all.CallTool(context.Background(), &mcp.CallToolParams{Name: "run_code", Arguments: map[string]any{
		"code": "let s = 0\nfor (let i = 0; i < 100; i++) s = tools.add({a: s, b: 1}).result\ns"}})
	if err != nil || res.IsError {
		t.Fatalf("run_code over /mcp: %v %s", err, mustJSON(t, res))
	}
	if got := mustJSON(t, res.StructuredContent); !strings.Contains(got, `"result":100`) || !strings.Contains(got, `"calls":100`) {
		t.Fatalf("run_code over /mcp = %s, want result 100 after 100 calls", got)
	}

	calc := connectMCP(t, hp.url, "k-calc")
	desc := runCodeDescription(t, calc)
	if !strings.Contains(desc, "add(args: {a: number; b: number}): any;") || strings.Contains(desc, "create(args") {
		t.Errorf("run_code's description for key calc declares not (only) the calculator:\n%s", desc)
	}
	res, err = calc.CallTool(context.Background(), &mcp.CallToolParams{Name: "run_code", Arguments: map[string]any{
		"code": `try { tools.create({text: "hi"}); "served" } catch (e) { e.code + " " + e.message }`}})
	if err != nil || res.IsError || !strings.Contains(mustJSON(t, res.StructuredContent), `-32601 tools.create: method not found: function \"create\" is not served`) {
		t.Fatalf("create inside calc's program: %v %s", err, mustJSON(t, res))
	}

	rated := connectMCP(t, hp.url, "k-rated")
	res, err = rated.CallTool(context.Background(), &mcp.CallToolParams{Name: "run_code", Arguments: map[string]any{
		"code": `let n = 0; try { for (let i = 0; i < 5; i++) { tools.add({a: 1, b: 1}); n++ } } catch (e) { return [n, e.code] }`}})
	if err != nil || res.IsError || !strings.Contains(mustJSON(t, res.StructuredContent), `,429]`) {
		t.Fatalf("rated key's inner calls: %v %s, want at most 2 calls, then 429", err, mustJSON(t, res))
	}

	for _, fe := range frontEnds(t, hp) {
		if fe.name == "mcp" {
			continue
		}
		answer, result := fe.call(t, "k-all", "run_code", map[string]any{"code": "tools.add({a: 2, b: 3}).result * 2"})
		var out struct{ Result int }
		if json.Unmarshal(result, &out); out.Result != 10 {
			t.Errorf("%s: run_code = %s, want result 10", fe.name, answer)
		}
	}
}

// TestCodeModeDeclaredOnEveryListing: run_code's description carries
// the TypeScript declarations of the caller's own tools on every front
// end that lists tools, not only /mcp: GET /opentool/load (the
// function's description) and GET /otc/tools for a key allowed only
// plugin:calculator declare add and not the mock's create, for a key
// allowed everything both; tools/list of `opentool-host mcp` over stdio
// (the operator's view) both.
func TestCodeModeDeclaredOnEveryListing(t *testing.T) {
	dir := t.TempDir()
	for _, p := range []string{"calculator", "mock"} {
		testkit.InstallPlugin(t, dir, p, "./plugins/"+p)
	}
	keys := filepath.Join(t.TempDir(), "keys.json")
	if err := os.WriteFile(keys, []byte(`{"keys":[{"name":"all","key":"k-all","allow":["*"]},`+
		`{"name":"calc","key":"k-calc","allow":["plugin:calculator"]}]}`), 0o600); err != nil {
		t.Fatal(err)
	}
	runner := testkit.Build(t, "./cmd/opentool-host-coderunner")
	hp := startHostProc(t, dir, "--api-keys-file", keys, "--code-mode", "--code-runner", runner)
	const add, create = "add(args: {a: number; b: number}): any;", "create(args"
	check := func(where, desc string, wantCreate bool) {
		t.Helper()
		if !strings.Contains(desc, "declare const tools: {") || !strings.Contains(desc, add) || strings.Contains(desc, create) != wantCreate {
			t.Errorf("%s: run_code's description (create declared: want %v):\n%s", where, wantCreate, desc)
		}
	}
	for _, k := range []struct {
		key        string
		wantCreate bool
	}{{"k-calc", false}, {"k-all", true}} {
		st, _, body := httpDo(t, http.MethodGet, hp.url+"/opentool/load", k.key, "")
		var doc struct {
			Functions []struct{ Name, Description string }
		}
		if err := json.Unmarshal([]byte(body), &doc); st != http.StatusOK || err != nil {
			t.Fatalf("GET /opentool/load as %s: %d %v %s", k.key, st, err, body)
		}
		listed := 0
		for _, f := range doc.Functions {
			if f.Name == "run_code" {
				listed++
				check("/opentool/load as "+k.key, f.Description, k.wantCreate)
			}
		}
		st, _, body = httpDo(t, http.MethodGet, hp.url+"/otc/tools", k.key, "")
		var tools struct {
			Tools []struct{ Name, Description string }
		}
		if err := json.Unmarshal([]byte(body), &tools); st != http.StatusOK || err != nil {
			t.Fatalf("GET /otc/tools as %s: %d %v %s", k.key, st, err, body)
		}
		for _, tl := range tools.Tools {
			if tl.Name == "run_code" {
				listed++
				check("/otc/tools as "+k.key, tl.Description, k.wantCreate)
			}
		}
		if listed != 2 {
			t.Errorf("run_code is listed %d times of 2 (/opentool/load, /otc/tools) to %s", listed, k.key)
		}
	}

	cmd := exec.Command(testkit.Build(t, "./cmd/opentool-host"), "mcp", "--dir", dir, "--state-dir", t.TempDir(), "--code-mode", "--code-runner", runner)
	var mu sync.Mutex
	var progress []string
	opts := &mcp.ClientOptions{ProgressNotificationHandler: func(_ context.Context, r *mcp.ProgressNotificationClientRequest) {
		mu.Lock()
		defer mu.Unlock()
		progress = append(progress, fmt.Sprintf("%v %s", r.Params.Progress, r.Params.Message))
	}}
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "e2e", Version: "1"}, opts).Connect(context.Background(), &mcp.CommandTransport{Command: cmd}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	check("stdio tools/list", runCodeDescription(t, cs), true)

	// With a progressToken: one notification per inner call completed.
	params := &mcp.CallToolParams{Name: "run_code", Arguments: map[string]any{"code": "tools.add({a: 1, b: 2}); tools.add({a: 3, b: 4}).result"}}
	params.SetProgressToken("p1")
	res, err := cs.CallTool(context.Background(), params)
	if err != nil || res.IsError {
		t.Fatalf("run_code over stdio: %v %s", err, mustJSON(t, res))
	}
	want := `[1 {"call":1,"tool":"add","ok":true} 2 {"call":2,"tool":"add","ok":true}]`
	testkit.Eventually(t, 10*time.Second, "two progress notifications", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(progress) >= 2
	})
	mu.Lock()
	defer mu.Unlock()
	if got := fmt.Sprint(progress); got != want {
		t.Errorf("run_code's progress over stdio = %s, want %s", got, want)
	}
}

// TestCodeModeSandboxedRunner: under --sandbox, --sandbox-deny-network
// and --plugin-user 65534 the runners of run_code are confined as a
// plugin: the launcher applied Landlock to them (its line under
// plugin.run_code in the host's log), each warm runner runs as user
// 65534 with no new privileges and a seccomp filter (/proc/PID/status),
// and a program finds no way to a file or a socket (no require, no
// process, no fetch), while its inner calls are served.
func TestCodeModeSandboxedRunner(t *testing.T) {
	landlockOrSkip(t)
	rootOrSkip(t)
	dir := t.TempDir()
	if err := os.Chmod(dir, 0o755); err != nil { // --plugin-user reads it
		t.Fatal(err)
	}
	testkit.InstallPlugin(t, dir, "calculator", "./plugins/calculator")
	bin := t.TempDir()
	if err := os.Chmod(bin, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(filepath.Dir(bin), 0o711); err != nil { // t.TempDir's folders are 0700
		t.Fatal(err)
	}
	runner := filepath.Join(bin, "opentool-host-coderunner")
	testkit.CopyFile(t, testkit.Build(t, "./cmd/opentool-host-coderunner"), runner, 0o755)
	state := t.TempDir()
	if err := os.Chmod(filepath.Dir(state), 0o711); err != nil {
		t.Fatal(err)
	}
	hp := startHostProc(t, dir, "--sandbox", "--sandbox-deny-network", "--plugin-user", "65534", "--state-dir", state,
		"--code-mode", "--code-runner", runner)

	// The runners run from the host's copy of the runner, named by its
	// sha256 in the state folder.
	raw, err := os.ReadFile(runner)
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(raw)
	var pids []int
	testkit.Eventually(t, 20*time.Second, "two warm runners", func() bool {
		pids = pids[:0]
		ents, _ := os.ReadDir("/proc")
		for _, e := range ents {
			if exe, err := os.Readlink("/proc/" + e.Name() + "/exe"); err == nil && filepath.Base(exe) == hex.EncodeToString(sum[:]) {
				pid, _ := strconv.Atoi(e.Name())
				pids = append(pids, pid)
			}
		}
		return len(pids) == 2
	})
	for _, pid := range pids {
		status, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
		if err != nil {
			t.Fatal(err)
		}
		for _, want := range []string{"Uid:\t65534\t65534", "NoNewPrivs:\t1", "Seccomp:\t2"} {
			if !strings.Contains(string(status), want) {
				t.Errorf("runner %d: /proc/%d/status lacks %q:\n%s", pid, pid, want, status)
			}
		}
	}
	if !strings.Contains(hp.logs.String(), "plugin.run_code: sandbox: Landlock ABI") {
		t.Errorf("no Landlock line of the runner's launcher in the host's log:\n%s", hp.logs.String())
	}
	b := callBody(t, hp.url, "run_code", `{"code":"[typeof require, typeof process, typeof fetch, typeof XMLHttpRequest, tools.add({a: 2, b: 3}).result]"}`)
	if !strings.Contains(b, `"result":["undefined","undefined","undefined","undefined",5]`) {
		t.Errorf("run_code under the sandbox: %s", b)
	}
}

// runCodeDescription is run_code's description in cs's tools/list, ""
// when it is not listed.
func runCodeDescription(t *testing.T, cs *mcp.ClientSession) string {
	t.Helper()
	lr, err := cs.ListTools(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, tl := range lr.Tools {
		if tl.Name == "run_code" {
			return tl.Description
		}
	}
	return ""
}

// TestRunCodeAsTask: a program run as an MCP task (2025-11-25 core
// tasks, params.task): tools/call of run_code is answered with a
// CreateTaskResult, tasks/get reaches completed, and tasks/result is the
// program's result (100 after 100 inner adds); another key's tasks/get of
// it is -32602.
func TestRunCodeAsTask(t *testing.T) {
	dir := t.TempDir()
	testkit.InstallPlugin(t, dir, "calculator", "./plugins/calculator")
	hp := startHostProc(t, dir, taskHostArgs("--code-mode", "--code-runner", testkit.Build(t, "./cmd/opentool-host-coderunner"))...)
	alice := mtSession(t, hp.url, taskKeyA)
	body := `{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"run_code","arguments":{"code":"let s = 0\nfor (let i = 0; i < 100; i++) s = tools.add({a: s, b: 1}).result\ns"},"task":{}}}`
	_, o, raw := alice.post(t, "tools/call", "run_code", body)
	var created struct {
		Task struct {
			TaskID string `json:"taskId"`
		} `json:"task"`
	}
	if o.Error != nil || json.Unmarshal(o.Result, &created) != nil || created.Task.TaskID == "" {
		t.Fatalf("tools/call of run_code with params.task: %s, want a CreateTaskResult", raw)
	}
	id := created.Task.TaskID
	testkit.Eventually(t, 60*time.Second, "run_code's task completes", func() bool {
		o, raw := alice.tasks(t, "tasks/get", id, false)
		if o.Error != nil || strings.Contains(string(o.Result), `"status":"failed"`) {
			t.Fatalf("tasks/get: %s", raw)
		}
		return strings.Contains(string(o.Result), `"status":"completed"`)
	})
	o, raw = alice.tasks(t, "tasks/result", id, false)
	if o.Error != nil || !strings.Contains(string(o.Result), `"result":100`) || strings.Contains(string(o.Result), `"isError":true`) {
		t.Fatalf("tasks/result: %s, want the program's result 100", raw)
	}
	bob := mtSession(t, hp.url, taskKeyB)
	if o, raw := bob.tasks(t, "tasks/get", id, false); o.Error == nil || o.Error.Code != -32602 {
		t.Errorf("another key's tasks/get of the program's task: %s, want -32602", raw)
	}
}
