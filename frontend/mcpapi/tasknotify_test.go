package mcpapi_test

import (
	"bufio"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/opentool-host/opentool-host/frontend/mcpapi"
)

// notifications/tasks on subscriptions/listen streams (tasklayer, listen.go),
// with raw JSON-RPC over HTTP on a real host.

// newMeta is the _meta of a 2026-07-28 request; optIn adds the
// extension to its client capabilities.
func newMeta(optIn bool) string {
	ext := ""
	if optIn {
		ext = `"extensions":{"io.modelcontextprotocol/tasks":{}}`
	}
	return `"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientInfo":{"name":"raw","version":"1"},` +
		`"io.modelcontextprotocol/clientCapabilities":{` + ext + `}}`
}

// newHeaders are the headers of a 2026-07-28 request of method.
func newHeaders(method string) []string {
	return []string{"Mcp-Protocol-Version: 2026-07-28", "Mcp-Method: " + method}
}

// sseMsg is one JSON-RPC message read from an event stream.
type sseMsg struct {
	ID     json.RawMessage `json:"id"`
	Method string          `json:"method"`
	Params json.RawMessage `json:"params"`
	Result json.RawMessage `json:"result"`
	Error  json.RawMessage `json:"error"`
	raw    string
}

// openStream posts body to url with key and headers and returns the
// messages of its event stream as they come (closed at the stream's
// end), or the whole body of an answer that is not a stream.
func openStream(t *testing.T, url, key, body string, headers ...string) (<-chan sseMsg, string) {
	t.Helper()
	resp, err := http.DefaultClient.Do(mcpPost(t, url, key, body, headers...))
	if err != nil {
		t.Fatalf("POST %s: %v", url, err)
	}
	t.Cleanup(func() { resp.Body.Close() })
	if !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		return nil, responseOf(t, resp)
	}
	ch := make(chan sseMsg, 16)
	go func() {
		defer close(ch)
		sc := bufio.NewScanner(resp.Body)
		sc.Buffer(make([]byte, 1<<20), 1<<20)
		event := ""
		for sc.Scan() {
			line := sc.Text()
			if name, ok := strings.CutPrefix(line, "event:"); ok { // the space is optional
				event = strings.TrimPrefix(name, " ")
				continue
			}
			data, ok := strings.CutPrefix(line, "data:") // the space is optional
			data = strings.TrimPrefix(data, " ")
			if !ok {
				continue
			}
			var m sseMsg
			if event != "message" || json.Unmarshal([]byte(data), &m) != nil {
				m = sseMsg{Method: "(not a message event)"}
			}
			m.raw = data
			event = ""
			ch <- m
		}
	}()
	return ch, ""
}

// next returns the next message of ch, failing after within; ok is false
// at the stream's end.
func next(t *testing.T, ch <-chan sseMsg, within time.Duration, what string) (sseMsg, bool) {
	t.Helper()
	select {
	case m, ok := <-ch:
		return m, ok
	case <-time.After(within):
		t.Fatalf("%s: nothing within %v", what, within)
	}
	return sseMsg{}, false
}

// listenBody is a subscriptions/listen request naming ids, with meta.
func listenBody(id int, ids []string, extra, meta string) string {
	b, _ := json.Marshal(ids)
	return fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"subscriptions/listen","params":{"notifications":{"taskIds":%s%s},%s}}`, id, b, extra, meta)
}

// ackedTaskIDs returns the taskIds of an acknowledgement, failing if m
// is not one.
func ackedTaskIDs(t *testing.T, m sseMsg) []string {
	t.Helper()
	var p struct {
		Notifications map[string]json.RawMessage `json:"notifications"`
	}
	if m.Method != "notifications/subscriptions/acknowledged" || json.Unmarshal(m.Params, &p) != nil || p.Notifications == nil {
		t.Fatalf("not an acknowledgement: %s", m.raw)
	}
	var ids []string
	if raw, ok := p.Notifications["taskIds"]; ok {
		if err := json.Unmarshal(raw, &ids); err != nil {
			t.Fatalf("taskIds of %s: %v", m.raw, err)
		}
	}
	return ids
}

// startNewTask calls sleep(ms) as a 2026-07-28 client with the opt-in and
// returns the task it is answered with.
func startNewTask(t *testing.T, u, key string, ms int) wireTask {
	t.Helper()
	_, out, raw := mcpRaw(t, u, key, callReq(1, "sleep", fmt.Sprintf(`{"ms":%d}`, ms), newMeta(true)), append(newHeaders("tools/call"), "Mcp-Name: sleep")...)
	if out.Error != nil {
		t.Fatalf("tools/call: %s", raw)
	}
	return asTask(t, out.Result, "task")
}

// TestTaskStatusNotifications: a listen stream naming a task of its key
// is acknowledged with that id and gets one notifications/tasks when the
// task ends (the DetailedTask tasks/get gives, result inlined), then the
// listen ends; another key's stream naming the same task is agreed to
// nothing and gets nothing; an id that ended before the stream opened is
// notified right after the acknowledgement; a cancelled task is
// notified cancelled; taskIds without the extension are refused -32021.
func TestTaskStatusNotifications(t *testing.T) {
	r := startTaskRig(t, 0)
	u := r.url + mcpapi.Path
	listen := newHeaders("subscriptions/listen")

	w := startNewTask(t, u, aliceKey, 700)
	if w.Status != "working" {
		t.Fatalf("created %+v", w)
	}
	alice, raw := openStream(t, u, aliceKey, listenBody(2, []string{w.TaskID, strings.Repeat("0", 32), "../x"}, "", newMeta(true)), listen...)
	if alice == nil {
		t.Fatalf("alice's listen is not a stream: %s", raw)
	}
	bob, raw := openStream(t, u, bobKey, listenBody(2, []string{w.TaskID}, "", newMeta(true)), listen...)
	if bob == nil {
		t.Fatalf("bob's listen is not a stream: %s", raw)
	}
	ack, _ := next(t, alice, 10*time.Second, "alice's acknowledgement")
	if ids := ackedTaskIDs(t, ack); len(ids) != 1 || ids[0] != w.TaskID {
		t.Errorf("alice's acknowledgement agrees to %v, want only %s: %s", ids, w.TaskID, ack.raw)
	}
	ack, _ = next(t, bob, 10*time.Second, "bob's acknowledgement")
	if ids := ackedTaskIDs(t, ack); len(ids) != 0 {
		t.Errorf("bob's acknowledgement agrees to alice's task: %s", ack.raw)
	}

	n, ok := next(t, alice, 20*time.Second, "alice's notifications/tasks")
	if !ok || n.Method != "notifications/tasks" || len(n.ID) > 0 {
		t.Fatalf("alice's stream after the acknowledgement: %q", n.raw)
	}
	var got wireTask
	if err := json.Unmarshal(n.Params, &got); err != nil {
		t.Fatal(err)
	}
	_, out, getRaw := mcpRaw(t, u, aliceKey, taskReq(3, "tasks/get", w.TaskID, newMeta(true)), append(newHeaders("tasks/get"), "Mcp-Name: "+w.TaskID)...)
	if out.Error != nil {
		t.Fatal(getRaw)
	}
	polled := asTask(t, out.Result, "complete")
	if got.TaskID != w.TaskID || got.Status != "completed" || got.ResultType != "" || got.LastUpdatedAt != polled.LastUpdatedAt ||
		string(got.Result) != string(polled.Result) || !strings.Contains(string(got.Result), `"structuredContent":{"slept_ms":700}`) ||
		got.TTLMs == nil || got.PollIntervalMs != 100 {
		t.Errorf("notification %s, want the task as tasks/get gives it: %s", n.raw, getRaw)
	}
	// Every agreed task has ended: the listen ends with its result.
	end, ok := next(t, alice, 10*time.Second, "the end of alice's listen")
	if !ok || end.Method != "" || string(end.ID) != "2" || end.Result == nil {
		t.Errorf("after the notification: %q, want the listen's result", end.raw)
	}
	// Bob's stream, agreed to nothing, ended; it carried no notification.
	for m := range bob {
		if m.Method == "notifications/tasks" || strings.Contains(m.raw, w.TaskID) {
			t.Errorf("bob's stream got %s", m.raw)
		}
	}

	// A task that has already ended is notified right after the
	// acknowledgement.
	again, raw := openStream(t, u, aliceKey, listenBody(4, []string{w.TaskID}, "", newMeta(true)), listen...)
	if again == nil {
		t.Fatal(raw)
	}
	if ack, _ := next(t, again, 10*time.Second, "acknowledgement"); len(ackedTaskIDs(t, ack)) != 1 {
		t.Errorf("acknowledgement of an ended task: %s", ack.raw)
	}
	if n, _ := next(t, again, 10*time.Second, "notification of an ended task"); n.Method != "notifications/tasks" || !strings.Contains(string(n.Params), `"status":"completed"`) {
		t.Errorf("after the acknowledgement: %s", n.raw)
	}

	// A cancelled task is notified cancelled.
	doomed := startNewTask(t, u, aliceKey, 60000)
	st, raw := openStream(t, u, aliceKey, listenBody(5, []string{doomed.TaskID}, `,"toolsListChanged":true`, newMeta(true)), listen...)
	if st == nil {
		t.Fatal(raw)
	}
	if ack, _ := next(t, st, 10*time.Second, "acknowledgement"); !strings.Contains(ack.raw, `"toolsListChanged":true`) || len(ackedTaskIDs(t, ack)) != 1 {
		t.Errorf("acknowledgement with toolsListChanged: %s", ack.raw)
	}
	if _, out, raw := mcpRaw(t, u, aliceKey, taskReq(6, "tasks/cancel", doomed.TaskID, newMeta(true)), append(newHeaders("tasks/cancel"), "Mcp-Name: "+doomed.TaskID)...); out.Error != nil {
		t.Fatal(raw)
	}
	if n, _ := next(t, st, 20*time.Second, "notification of a cancelled task"); n.Method != "notifications/tasks" ||
		!strings.Contains(string(n.Params), `"status":"cancelled"`) || strings.Contains(string(n.Params), `"result"`) {
		t.Errorf("cancelled: %s", n.raw)
	}

	// taskIds without the extension: -32021.
	ch, raw := openStream(t, u, aliceKey, listenBody(7, []string{w.TaskID}, "", newMeta(false)), listen...)
	if ch != nil {
		for m := range ch {
			if len(m.ID) > 0 {
				raw = m.raw
			}
		}
	}
	if !strings.Contains(raw, `"code":-32021`) || !strings.Contains(raw, `"requiredCapabilities":{"extensions":{"io.modelcontextprotocol/tasks":{}}}`) {
		t.Errorf("taskIds without the extension: %s, want -32021", raw)
	}
}

// TestTaskStatusNotificationsOlderRevisions: a 2025-11-25 client's listen
// stream (Mcp-Method: subscriptions/listen), stateless and on a session,
// gets the notification too.
func TestTaskStatusNotificationsOlderRevisions(t *testing.T) {
	r := startTaskRig(t, 0)
	for _, path := range []string{mcpapi.Path, "/sessions" + mcpapi.Path} {
		u := r.url + path
		headers := []string{v25, "Mcp-Method: subscriptions/listen"}
		if path != mcpapi.Path {
			st, h, body := httpDo(t, http.MethodPost, u, aliceKey, `{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}`,
				"Accept: application/json, text/event-stream")
			sid := h.Get("Mcp-Session-Id")
			if sid == "" {
				t.Fatalf("%s: initialize: HTTP %d, no session: %s", path, st, body)
			}
			headers = append(headers, "Mcp-Session-Id: "+sid)
			if st, _, raw := mcpRaw(t, u, aliceKey, `{"jsonrpc":"2.0","method":"notifications/initialized"}`, headers[0], headers[2]); st != http.StatusAccepted {
				t.Fatalf("initialized: %d %s", st, raw)
			}
		}
		_, out, raw := mcpRaw(t, r.url+mcpapi.Path, aliceKey, callReq(1, "sleep", `{"ms":500}`, optIn), v25)
		if out.Error != nil {
			t.Fatal(raw)
		}
		w := asTask(t, out.Result, "task")
		ch, raw := openStream(t, u, aliceKey, listenBody(2, []string{w.TaskID}, "", optIn), headers...)
		if ch == nil {
			t.Fatalf("%s: listen: %s", path, raw)
		}
		if ack, _ := next(t, ch, 10*time.Second, path+": acknowledgement"); len(ackedTaskIDs(t, ack)) != 1 {
			t.Errorf("%s: acknowledgement %s", path, ack.raw)
		}
		if n, _ := next(t, ch, 20*time.Second, path+": notification"); n.Method != "notifications/tasks" || !strings.Contains(string(n.Params), `"slept_ms":500`) {
			t.Errorf("%s: notification %s", path, n.raw)
		}
	}
}
