package e2e_test

import (
	"bufio"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/opentool-host/opentool-host/testkit"
)

// listenMsgs posts a 2026-07-28 subscriptions/listen naming taskID as c
// and returns the data of the stream's events as they come (closed at
// its end).
func listenMsgs(t *testing.T, c *mtClient, taskID string) <-chan string {
	t.Helper()
	body := `{"jsonrpc":"2.0","id":"listen","method":"subscriptions/listen","params":{"notifications":{"taskIds":["` + taskID + `"]},` + c.meta(true) + `}}`
	req, err := http.NewRequest(http.MethodPost, c.url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range map[string]string{"Content-Type": "application/json", "Accept": "application/json, text/event-stream",
		"Authorization": "Bearer " + c.key, "Mcp-Protocol-Version": c.version, "Mcp-Method": "subscriptions/listen"} {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { resp.Body.Close() })
	if !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		t.Fatalf("listen: HTTP %d %s", resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	ch := make(chan string, 16)
	go func() {
		defer close(ch)
		sc := bufio.NewScanner(resp.Body)
		sc.Buffer(make([]byte, 1<<20), 1<<20)
		for sc.Scan() {
			if data, ok := strings.CutPrefix(sc.Text(), "data:"); ok { // the space is optional
				ch <- strings.TrimPrefix(data, " ")
			}
		}
	}()
	return ch
}

// TestMCPTaskStatusNotifications: a host process (--mcp-stateless,
// --task-after 0) pushes notifications/tasks, the task as tasks/get gives
// it, to the listen stream of the key that started the task, and nothing
// to another key's stream naming the same id.
func TestMCPTaskStatusNotifications(t *testing.T) {
	dir := t.TempDir()
	testkit.InstallPlugin(t, dir, "faulty", "./testkit/plugins/faulty")
	hp := startHostProc(t, dir, taskHostArgs("--task-after", "0", "--mcp-stateless")...)
	alice := mtStateless(hp.url, taskKeyA, "2026-07-28")
	bob := mtStateless(hp.url, taskKeyB, "2026-07-28")

	created, _ := startMCPTask(t, alice, 800)
	aliceCh := listenMsgs(t, alice, created.TaskID)
	bobCh := listenMsgs(t, bob, created.TaskID)
	var got string
	timeout := time.After(20 * time.Second)
	for got == "" {
		select {
		case data, ok := <-aliceCh:
			if !ok {
				t.Fatal("alice's stream ended without the notification")
			}
			if strings.Contains(data, `"method":"notifications/subscriptions/acknowledged"`) && !strings.Contains(data, `"taskIds":["`+created.TaskID+`"]`) {
				t.Errorf("alice's acknowledgement: %s", data)
			}
			if strings.Contains(data, `"method":"notifications/tasks"`) {
				got = data
			}
		case <-timeout:
			t.Fatal("no notifications/tasks on alice's stream within 20 s")
		}
	}
	var n struct {
		Params mtTask `json:"params"`
	}
	if err := json.Unmarshal([]byte(got), &n); err != nil {
		t.Fatal(err)
	}
	polled, raw := pollMCP(t, alice, created.TaskID, time.Second)
	if n.Params.TaskID != created.TaskID || n.Params.Status != "completed" || string(n.Params.Result) != string(polled.Result) ||
		!strings.Contains(string(n.Params.Result), `"structuredContent":{"slept_ms":800}`) {
		t.Errorf("notification %s, want the task of tasks/get: %s", got, raw)
	}
	// Alice's event came; bob's stream, agreed to nothing, has ended
	// with nothing of the task.
	end := time.After(10 * time.Second)
	for {
		select {
		case data, ok := <-bobCh:
			if !ok {
				return
			}
			if strings.Contains(data, "notifications/tasks") || strings.Contains(data, created.TaskID) {
				t.Errorf("bob's stream: %s", data)
			}
		case <-end:
			t.Fatal("bob's stream, agreed to no task, still open 10 s after alice's notification")
		}
	}
}
