package opentoolapi_test

import (
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/opentool-host/opentool-host/frontend/opentoolapi"
	"github.com/opentool-host/opentool-host/frontend/route"
	"github.com/opentool-host/opentool-host/host/access"
	"github.com/opentool-host/opentool-host/host/tasks"
	"github.com/opentool-host/opentool-host/testkit"
)

// startTaskAPI serves a real host running the faulty test plugin (its
// sleep honours cancellation, sleeps counts cancelled sleeps) with the
// task extension on a MemoryStore (nil tm: none), behind access keys
// "alice-key" and "bob-key".
func startTaskAPI(t *testing.T, tm *tasks.Manager) string {
	t.Helper()
	h := testkit.StartHost(t, nil, "./testkit/plugins/faulty")
	guard, err := access.New(access.Config{Keys: []string{"alice-key", "bob-key"}})
	if err != nil {
		t.Fatal(err)
	}
	api := opentoolapi.New(h, opentoolapi.Config{Version: "1.2.3", Logger: testkit.Logger(t), Tasks: tm})
	return testkit.Serve(t, guard.Middleware(route.Mux(api.Routes())))
}

func newTaskManager(t *testing.T, after time.Duration) *tasks.Manager {
	t.Helper()
	tm, err := tasks.NewManager(tasks.Config{After: after, PollInterval: 100 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(tm.Close)
	return tm
}

// taskRe matches the "task" member of a body.
var taskRe = regexp.MustCompile(`^\{"task":\{"id":"([0-9a-f]{32})","status":"(\w+)",(?:"statusMessage":"(?:[^"\\]|\\.)*",)?"createdAt":"[^"]+","lastUpdatedAt":"[^"]+","ttlMs":900000,"pollIntervalMs":100\}`)

// parseTask returns the id and status of the task a body starts with.
func parseTask(t *testing.T, body string) (id, status string) {
	t.Helper()
	m := taskRe.FindStringSubmatch(body)
	if m == nil {
		t.Fatalf("body does not start with a task: %s", body)
	}
	return m[1], m[2]
}

// pollTask GETs the task with the Authorization header auth until its
// status is not working and returns the last body.
func pollTask(t *testing.T, base, id, auth string) string {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		st, _, body := rawRequest(t, http.MethodGet, base+opentoolapi.TasksPath+"/"+id, "", auth)
		if st != http.StatusOK {
			t.Fatalf("GET task: HTTP %d %s", st, body)
		}
		if _, status := parseTask(t, body); status != "working" {
			return body
		}
		if time.Now().After(deadline) {
			t.Fatalf("task %s still working after 20 s", id)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

const (
	alice = "Authorization: Bearer alice-key"
	bob   = "Authorization: Bearer bob-key"
	async = "Prefer: respond-async"
)

// TestTaskExtension drives the OpenTool task extension through HTTP: no
// Prefer, nothing changes; a call that ends within --task-after is
// answered plainly; a longer one gets 202 and a task whose completed body
// is the call's own JSON-RPC response; another key sees nothing; DELETE
// reaches the plugin; a JSON-RPC error fails the task.
func TestTaskExtension(t *testing.T) {
	base := startTaskAPI(t, newTaskManager(t, 150*time.Millisecond))
	call := base + "/opentool/call"

	st, h, body := postJSON(t, call, `{"jsonrpc":"2.0","method":"sleep","params":{"ms":400},"id":"plain"}`, alice)
	wantResponse(t, "without Prefer", st, body, http.StatusOK, `{"jsonrpc":"2.0","result":{"slept_ms":400},"id":"plain"}`)
	st, h, body = postJSON(t, call, `{"jsonrpc":"2.0","method":"sleep","params":{"ms":10},"id":"quick"}`, alice, async)
	wantResponse(t, "quick call with Prefer", st, body, http.StatusOK, `{"jsonrpc":"2.0","result":{"slept_ms":10},"id":"quick"}`)
	if h.Get("Preference-Applied") != "" {
		t.Errorf("a plain answer says Preference-Applied: %s", h.Get("Preference-Applied"))
	}

	start := time.Now()
	st, h, body = postJSON(t, call, `{"jsonrpc":"2.0","method":"sleep","params":{"ms":2000},"id":"long-1"}`, alice, async)
	took := time.Since(start)
	if st != http.StatusAccepted {
		t.Fatalf("long call with Prefer: HTTP %d %s, want 202", st, body)
	}
	if took > 1500*time.Millisecond { // --task-after is 150 ms; the call takes 2 s
		t.Errorf("202 after %v: the host waited for the call", took)
	}
	id, status := parseTask(t, body)
	if status != "working" || h.Get("Location") != "/opentool/tasks/"+id || h.Get("Preference-Applied") != "respond-async" || h.Get("Retry-After") != "1" {
		t.Errorf("202: status %s, headers %v", status, h)
	}
	st, h, body = rawRequest(t, http.MethodGet, base+"/opentool/tasks/"+id, "", bob)
	wantResponse(t, "bob's GET of alice's task", st, body, http.StatusNotFound,
		`{"jsonrpc":"2.0","result":{},"error":{"code":-32602,"message":"invalid params: task \"`+id+`\" not found (no such task for this API key, or it expired)"},"id":null}`)
	if st, _, _ := rawRequest(t, http.MethodDelete, base+"/opentool/tasks/"+id, "", bob); st != http.StatusNotFound {
		t.Errorf("bob's DELETE of alice's task: HTTP %d, want 404", st)
	}
	done := pollTask(t, base, id, alice)
	if want := `"status":"completed",`; !strings.Contains(done, want) || !strings.HasSuffix(done, `},"jsonrpc":"2.0","result":{"slept_ms":2000},"id":"long-1"}`) {
		t.Errorf("completed task: %s", done)
	}
	var resp struct {
		JSONRPC string
		Result  map[string]any
		ID      string
	}
	if err := json.Unmarshal([]byte(done), &resp); err != nil || resp.Result["slept_ms"] != float64(2000) || resp.ID != "long-1" {
		t.Errorf("the completed body is not the call's JSON-RPC response: %+v %v", resp, err)
	}

	// DELETE reaches the plugin.
	st, _, body = postJSON(t, call, `{"jsonrpc":"2.0","method":"sleep","params":{"ms":20000},"id":2}`, alice, async)
	if st != http.StatusAccepted {
		t.Fatalf("HTTP %d %s, want 202", st, body)
	}
	id, _ = parseTask(t, body)
	if st, _, body := rawRequest(t, http.MethodDelete, base+"/opentool/tasks/"+id, "", alice); st != http.StatusAccepted {
		t.Errorf("DELETE: HTTP %d %s, want 202", st, body)
	}
	ended := pollTask(t, base, id, alice)
	if !strings.Contains(ended, `"status":"cancelled","statusMessage":"cancelled at the client's request"`) || strings.Contains(ended, `"jsonrpc"`) {
		t.Errorf("cancelled task: %s", ended)
	}
	_, _, body = postJSON(t, call, `{"jsonrpc":"2.0","method":"sleeps","id":3}`, alice)
	if body != `{"jsonrpc":"2.0","result":{"active":0,"cancelled":1},"id":3}` {
		t.Errorf("sleeps after the DELETE: %s, want one cancelled", body)
	}
	if st, _, _ := rawRequest(t, http.MethodDelete, base+"/opentool/tasks/"+id, "", alice); st != http.StatusOK {
		t.Errorf("DELETE of an ended task: HTTP %d, want 200", st)
	}

	// wait=0 makes a task at once; the call's JSON-RPC error fails it.
	st, _, body = postJSON(t, call, `{"jsonrpc":"2.0","method":"nosuch","id":null}`, alice, "Prefer: respond-async, wait=0")
	if st != http.StatusAccepted {
		t.Fatalf("wait=0: HTTP %d %s, want 202", st, body)
	}
	id, _ = parseTask(t, body)
	failed := pollTask(t, base, id, alice)
	if !strings.Contains(failed, `"status":"failed","statusMessage":"method not found: function \"nosuch\" is not served"`) ||
		!strings.HasSuffix(failed, `},"jsonrpc":"2.0","result":{},"error":{"code":-32601,"message":"method not found: function \"nosuch\" is not served"},"id":null}`) {
		t.Errorf("failed task: %s", failed)
	}

	for _, bad := range []string{"nothex", strings.Repeat("A", 32), strings.Repeat("0", 32)} {
		if st, _, body := rawRequest(t, http.MethodGet, base+"/opentool/tasks/"+bad, "", alice); st != http.StatusNotFound || !strings.Contains(body, `"code":-32602`) {
			t.Errorf("GET task %s: HTTP %d %s, want 404 -32602", bad, st, body)
		}
	}
}

// TestTaskExtensionOff: without a task manager the preference is
// ignored and the task routes answer 404.
func TestTaskExtensionOff(t *testing.T) {
	base := startTaskAPI(t, nil)
	st, _, body := postJSON(t, base+"/opentool/call", `{"jsonrpc":"2.0","method":"sleep","params":{"ms":300},"id":"x"}`, alice, "Prefer: respond-async, wait=0")
	wantResponse(t, "Prefer without tasks", st, body, http.StatusOK, `{"jsonrpc":"2.0","result":{"slept_ms":300},"id":"x"}`)
	st, _, body = rawRequest(t, http.MethodGet, base+"/opentool/tasks/"+strings.Repeat("0", 32), "", alice)
	if st != http.StatusNotFound || !strings.Contains(body, "does not run calls as tasks") {
		t.Errorf("GET task without tasks: HTTP %d %s", st, body)
	}
}

// TestTaskOfRevokedKey: a task's call outlives its request, so the
// revocation of its key (removed from the keys file) cancels it by
// itself, as it would have ended the request.
func TestTaskOfRevokedKey(t *testing.T) {
	h := testkit.StartHost(t, nil, "./testkit/plugins/faulty")
	file := filepath.Join(t.TempDir(), "keys.json")
	write := func(body string) {
		if err := os.WriteFile(file, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	const bobOnly = `{"keys":[{"name":"bob","key":"bob-key","allow":["*"]}]}`
	write(`{"keys":[{"name":"alice","key":"alice-key","allow":["*"]},{"name":"bob","key":"bob-key","allow":["*"]}]}`)
	guard, err := access.New(access.Config{File: file})
	if err != nil {
		t.Fatal(err)
	}
	base := testkit.Serve(t, guard.Middleware(route.Mux(opentoolapi.New(h, opentoolapi.Config{Logger: testkit.Logger(t), Tasks: newTaskManager(t, 0)}).Routes())))
	st, _, body := postJSON(t, base+"/opentool/call", `{"jsonrpc":"2.0","method":"sleep","params":{"ms":20000},"id":1}`, alice, async)
	if st != http.StatusAccepted {
		t.Fatalf("HTTP %d %s, want 202", st, body)
	}
	sleeps := func() string {
		_, _, body := postJSON(t, base+"/opentool/call", `{"jsonrpc":"2.0","method":"sleeps","id":2}`, bob)
		return body
	}
	testkit.Eventually(t, 10*time.Second, "the sleep runs", func() bool { return strings.Contains(sleeps(), `"active":1`) })
	write(bobOnly)
	if err := guard.Reload(); err != nil {
		t.Fatal(err)
	}
	testkit.Eventually(t, 10*time.Second, "the revoked key's task cancelled in the plugin", func() bool {
		return sleeps() == `{"jsonrpc":"2.0","result":{"active":0,"cancelled":1},"id":2}`
	})
}
