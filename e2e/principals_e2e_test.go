package e2e_test

import (
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/opentool-host/opentool-host/host/access/oauth/oauthtest"
	"github.com/opentool-host/opentool-host/testkit"
)

// TestPrincipalsSeeOnlyTheirOwn (issue 45): two tokens of one rule that
// differ only in sub (alice, bob) are two callers on a real host. Bob
// cannot use alice's MCP session (POST, GET, DELETE: HTTP 404 or 403,
// her session still answers); bob's tasks/list shows none of alice's
// core tasks, and his tasks/get, tasks/result, tasks/cancel (core),
// tasks/get, tasks/cancel, tasks/update (extension) and GET, DELETE
// /opentool/tasks/ID of her task ids answer byte for byte as for an
// unknown id, and her tasks still run; a rule's rate (per_second 1,
// burst 1) holds per principal: alice's spent burst leaves bob's.
func TestPrincipalsSeeOnlyTheirOwn(t *testing.T) {
	is := oauthtest.New(t)
	dir := t.TempDir()
	testkit.InstallPlugin(t, dir, "faulty", "./testkit/plugins/faulty")
	keysFile := filepath.Join(t.TempDir(), "keys.json")
	rules := `{"keys": [], "tokens": [
   {"name": "users", "scopes": ["tools"], "allow": ["*"]},
   {"name": "metered", "scopes": ["metered"], "allow": ["*"], "rate": {"per_second": 1, "burst": 1}}
 ]}`
	if err := os.WriteFile(keysFile, []byte(rules), 0o600); err != nil {
		t.Fatal(err)
	}
	hp := startHostProc(t, dir, "--api-keys-file", keysFile, "--oauth-issuer", is.URL, "--task-after", "200ms", "--watch=false")
	token := func(sub, scope string) string {
		return is.Token(t, map[string]any{"iss": is.URL, "sub": sub, "aud": hp.url + "/mcp", "client_id": "agent", "scope": scope,
			"exp": time.Now().Add(time.Hour).Unix(), "iat": time.Now().Unix()})
	}
	aliceTok, bobTok := token("alice", "tools"), token("bob", "tools")
	alice, bob := mtSession(t, hp.url, aliceTok), mtSession(t, hp.url, bobTok)

	// Sessions: bob with alice's Mcp-Session-Id is refused; hers answers.
	list := `{"jsonrpc":"2.0","id":7,"method":"tools/list","params":{}}`
	for _, method := range []string{http.MethodPost, http.MethodGet, http.MethodDelete} {
		body := ""
		if method == http.MethodPost {
			body = list
		}
		req, err := http.NewRequest(method, hp.url+"/mcp", strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		for k, v := range map[string]string{"Authorization": "Bearer " + bobTok, "Content-Type": "application/json", "Accept": "application/json, text/event-stream",
			"Mcp-Protocol-Version": "2025-11-25", "Mcp-Session-Id": alice.session} {
			req.Header.Set(k, v)
		}
		// A refusal comes at once; a GET stream granted stays open (the
		// client's timeout ends it: an error here).
		resp, err := (&http.Client{Timeout: 5 * time.Second}).Do(req)
		if err != nil {
			t.Errorf("bob's %s /mcp in alice's session: %v, want HTTP 404 or 403", method, err)
			continue
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		t.Logf("bob's %s /mcp in alice's session: HTTP %d %s", method, resp.StatusCode, strings.TrimSpace(string(b)))
		if resp.StatusCode != http.StatusNotFound && resp.StatusCode != http.StatusForbidden {
			t.Errorf("bob's %s /mcp in alice's session: HTTP %d %s, want 404 or 403", method, resp.StatusCode, b)
		}
	}
	if _, out, raw := alice.post(t, "tools/list", "", list); out.Error != nil || !strings.Contains(string(out.Result), `"sleep"`) {
		t.Errorf("alice's session after bob's attempt: %s", raw)
	}

	// asUnknown wants c's answer to method of id to be its answer for an
	// id no one has (the id in the message replaced).
	const unknown = "0123456789abcdef0123456789abcdef"
	asUnknown := func(c *mtClient, method, id string, optIn bool) {
		t.Helper()
		out, raw := c.tasks(t, method, id, optIn)
		_, want := c.tasks(t, method, unknown, optIn)
		if out.Error == nil || strings.ReplaceAll(raw, id, unknown) != want {
			t.Errorf("bob's %s (opt-in %v) of alice's task: %s, want as for an unknown task: %s", method, optIn, raw, want)
		}
	}

	// Extension tasks.
	ext, _ := startMCPTask(t, alice, 3000)
	for _, method := range []string{"tasks/get", "tasks/cancel", "tasks/update"} {
		asUnknown(bob, method, ext.TaskID, true)
	}

	// Core tasks.
	_, out, raw := alice.post(t, "tools/call", "sleep", `{"jsonrpc":"2.0","id":8,"method":"tools/call","params":{"name":"sleep","arguments":{"ms":3000},"task":{}}}`)
	core, _, _ := strings.Cut(strings.TrimPrefix(string(out.Result), `{"task":{"taskId":"`), `"`)
	if out.Error != nil || !mtIDRe.MatchString(core) {
		t.Fatalf("alice's tools/call with params.task: %s, want a CreateTaskResult", raw)
	}
	tasksList := `{"jsonrpc":"2.0","id":9,"method":"tasks/list","params":{}}`
	if _, out, raw := bob.post(t, "tasks/list", "", tasksList); string(out.Result) != `{"tasks":[]}` {
		t.Errorf("bob's tasks/list: %s, want none", raw)
	}
	if _, out, raw := alice.post(t, "tasks/list", "", tasksList); !strings.Contains(string(out.Result), core) {
		t.Errorf("alice's tasks/list: %s, want her task %s", raw, core)
	}
	for _, method := range []string{"tasks/get", "tasks/result", "tasks/cancel"} {
		asUnknown(bob, method, core, false)
	}
	if out, raw := alice.tasks(t, "tasks/get", core, false); !strings.Contains(string(out.Result), `"status":"working"`) {
		t.Errorf("alice's core task after bob's cancel: %s, want working", raw)
	}
	if out, raw := alice.tasks(t, "tasks/get", ext.TaskID, true); asMTTask(t, out, raw, "complete").Status != "working" {
		t.Errorf("alice's extension task after bob's cancel: %s, want working", raw)
	}

	// OpenTool tasks (Prefer: respond-async).
	ot, _ := startTask(t, hp.url, aliceTok, 3000)
	for _, method := range []string{http.MethodGet, http.MethodDelete} {
		st, _, got := taskReq(t, method, hp.url+"/opentool/tasks/"+ot.Task.ID, bobTok, "")
		ust, _, want := taskReq(t, method, hp.url+"/opentool/tasks/"+unknown, bobTok, "")
		if st != ust || strings.ReplaceAll(got, ot.Task.ID, unknown) != want {
			t.Errorf("bob's %s /opentool/tasks of alice's task: HTTP %d %s, want as for an unknown task: HTTP %d %s", method, st, got, ust, want)
		}
	}
	if _, _, got := taskReq(t, http.MethodGet, hp.url+"/opentool/tasks/"+ot.Task.ID, aliceTok, ""); !strings.Contains(got, `"status":"working"`) {
		t.Errorf("alice's OpenTool task after bob's DELETE: %s, want working", got)
	}

	// Rate: one burst per principal. Alice's second request within the
	// second after her first finds her bucket empty; a stalled machine
	// (a second gone by) refills it, and the pair is tried again.
	aliceM, bobM := token("alice", "metered"), token("bob", "metered")
	load := func(tok string) (int, string) {
		st, _, body := httpDo(t, http.MethodGet, hp.url+"/opentool/load", tok, "")
		return st, body
	}
	spent := false
	for try := 0; try < 3 && !spent; try++ {
		start := time.Now()
		first, body := load(aliceM)
		if first != http.StatusOK && try == 0 {
			t.Fatalf("alice's first GET /opentool/load (per_second 1, burst 1): HTTP %d %s", first, body)
		}
		second, _ := load(aliceM)
		spent = first == http.StatusOK && second == http.StatusTooManyRequests
		if !spent && time.Since(start) < time.Second {
			t.Fatalf("alice's second GET /opentool/load at once: HTTP %d, want 429", second)
		}
		if !spent {
			time.Sleep(time.Second) // refill her bucket for another try
		}
	}
	if !spent {
		t.Fatal("alice's two GET /opentool/load never came within a second of each other")
	}
	if st, body := load(bobM); st != http.StatusOK {
		t.Errorf("bob's GET /opentool/load after alice spent her burst: HTTP %d %s, want 200", st, body)
	}
}
