package e2e_test

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"regexp"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/opentool-host/opentool-host/testkit"
)

// The OpenTool task extension through real host processes: the faulty
// test plugin's sleep honours cancellation and its sleeps reports the
// sleeps in flight and those ended by cancellation.

const (
	taskKeyA = "alice-key" // --api-key 1: key name api-key-1
	taskKeyB = "bob-key"   // --api-key 2: key name api-key-2
)

// taskHTTP bounds every request of these tests.
var taskHTTP = &http.Client{Timeout: 30 * time.Second}

// taskReq sends one request with key and returns the status, headers and
// body.
func taskReq(t *testing.T, method, url, key, body string, headers ...string) (int, http.Header, string) {
	t.Helper()
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, err := http.NewRequest(method, url, rd)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+key)
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	for _, h := range headers {
		k, v, _ := strings.Cut(h, ": ")
		req.Header.Set(k, v)
	}
	resp, err := taskHTTP.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, url, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, resp.Header, string(b)
}

// taskBody is what the task routes answer: the task, and once it ended
// the call's JSON-RPC response.
type taskBody struct {
	Task struct {
		ID, Status, StatusMessage string
		TTLMs, PollIntervalMs     int64
	}
	JSONRPC string
	Result  map[string]any
	Error   *struct {
		Code    int
		Message string
	}
	ID any
}

func decodeTask(t *testing.T, body string) taskBody {
	t.Helper()
	var tb taskBody
	if err := json.Unmarshal([]byte(body), &tb); err != nil || tb.Task.ID == "" {
		t.Fatalf("not a task body: %s (%v)", body, err)
	}
	return tb
}

// startTask posts a call of sleep(ms) with "Prefer: respond-async" to
// base, wants HTTP 202 with a task, and returns it and how long the 202
// took.
func startTask(t *testing.T, base, key string, ms int) (taskBody, time.Duration) {
	t.Helper()
	start := time.Now()
	st, h, body := taskReq(t, http.MethodPost, base+"/opentool/call", key,
		fmt.Sprintf(`{"jsonrpc":"2.0","method":"sleep","params":{"ms":%d},"id":"sleep-%d"}`, ms, ms), "Prefer: respond-async")
	took := time.Since(start)
	if st != http.StatusAccepted {
		t.Fatalf("sleep %d ms with Prefer: respond-async: HTTP %d %s, want 202", ms, st, body)
	}
	tb := decodeTask(t, body)
	if tb.Task.Status != "working" || h.Get("Location") != "/opentool/tasks/"+tb.Task.ID {
		t.Fatalf("202: %s, Location %q", body, h.Get("Location"))
	}
	return tb, took
}

// pollUntilEnded GETs the task on base until it is no longer working
// (at most within), and returns the last body and when it ended.
func pollUntilEnded(t *testing.T, base, key, id string, within time.Duration) (taskBody, string) {
	t.Helper()
	deadline := time.Now().Add(within)
	for {
		st, _, body := taskReq(t, http.MethodGet, base+"/opentool/tasks/"+id, key, "")
		if st != http.StatusOK {
			t.Fatalf("GET task %s: HTTP %d %s", id, st, body)
		}
		if tb := decodeTask(t, body); tb.Task.Status != "working" {
			return tb, body
		}
		if time.Now().After(deadline) {
			t.Fatalf("task %s still working after %v", id, within)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// sleeps returns the faulty plugin's sleeps in flight and cancelled on
// the host at base.
func sleeps(t *testing.T, base, key string) (active, cancelled float64) {
	t.Helper()
	_, _, body := taskReq(t, http.MethodPost, base+"/opentool/call", key, `{"jsonrpc":"2.0","method":"sleeps","id":"s"}`)
	var r struct{ Result map[string]float64 }
	if err := json.Unmarshal([]byte(body), &r); err != nil {
		t.Fatalf("sleeps: %s", body)
	}
	return r.Result["active"], r.Result["cancelled"]
}

// pollLatency GETs task id on base n times and returns the median and
// the 99th percentile of the round trips.
func pollLatency(t *testing.T, base, key, id string, n int) (p50, p99 time.Duration) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, base+"/opentool/tasks/"+id, nil)
	req.Header.Set("Authorization", "Bearer "+key)
	d := make([]time.Duration, n)
	for i := range d {
		start := time.Now()
		resp, err := taskHTTP.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		d[i] = time.Since(start)
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("GET task: HTTP %d", resp.StatusCode)
		}
	}
	sort.Slice(d, func(i, j int) bool { return d[i] < d[j] })
	return d[n/2], d[n*99/100]
}

func taskHostArgs(extra ...string) []string {
	return append([]string{"--api-key", taskKeyA, "--api-key", taskKeyB, "--task-after", "200ms", "--watch=false"}, extra...)
}

// TestTasksOnOneHost: a 3 s sleep called with "Prefer: respond-async"
// and --task-after 200ms is answered 202 at once and polled to its
// result; another key cannot see the task; DELETE cancels the sleep in
// the plugin; without the header nothing changes.
func TestTasksOnOneHost(t *testing.T) {
	dir := t.TempDir()
	testkit.InstallPlugin(t, dir, "faulty", "./testkit/plugins/faulty")
	hp := startHostProc(t, dir, taskHostArgs()...)

	st, h, body := taskReq(t, http.MethodPost, hp.url+"/opentool/call", taskKeyA, `{"jsonrpc":"2.0","method":"sleep","params":{"ms":400},"id":"plain"}`)
	if st != http.StatusOK || body != `{"jsonrpc":"2.0","result":{"slept_ms":400},"id":"plain"}` || h.Get("Location") != "" {
		t.Errorf("without Prefer: HTTP %d %s", st, body)
	}

	created, took := startTask(t, hp.url, taskKeyA, 3000)
	if took > 1500*time.Millisecond {
		t.Errorf("the 202 took %v with --task-after 200ms", took)
	}
	t.Logf("202 after %v (--task-after 200ms)", took.Round(time.Millisecond))
	id := created.Task.ID
	if st, _, body := taskReq(t, http.MethodGet, hp.url+"/opentool/tasks/"+id, taskKeyB, ""); st != http.StatusNotFound || !strings.Contains(body, `"code":-32602`) {
		t.Errorf("another key's GET: HTTP %d %s, want 404 -32602", st, body)
	}
	if st, _, _ := taskReq(t, http.MethodDelete, hp.url+"/opentool/tasks/"+id, taskKeyB, ""); st != http.StatusNotFound {
		t.Errorf("another key's DELETE: HTTP %d, want 404", st)
	}
	p50, p99 := pollLatency(t, hp.url, taskKeyA, id, 300)
	t.Logf("GET /opentool/tasks/{id} (working), one host, memory store: p50 %v, p99 %v over 300 polls", p50, p99)
	done, raw := pollUntilEnded(t, hp.url, taskKeyA, id, 20*time.Second)
	if done.Task.Status != "completed" || done.Result["slept_ms"] != float64(3000) || done.ID != "sleep-3000" ||
		!strings.HasSuffix(raw, `,"jsonrpc":"2.0","result":{"slept_ms":3000},"id":"sleep-3000"}`) {
		t.Errorf("completed task: %s", raw)
	}
	if active, cancelled := sleeps(t, hp.url, taskKeyA); active != 0 || cancelled != 0 {
		t.Errorf("sleeps before the cancel: active %v cancelled %v", active, cancelled)
	}

	doomed, _ := startTask(t, hp.url, taskKeyA, 60000)
	testkit.Eventually(t, 10*time.Second, "the sleep runs in the plugin", func() bool {
		active, _ := sleeps(t, hp.url, taskKeyA)
		return active == 1
	})
	if st, _, body := taskReq(t, http.MethodDelete, hp.url+"/opentool/tasks/"+doomed.Task.ID, taskKeyA, ""); st != http.StatusAccepted {
		t.Errorf("DELETE: HTTP %d %s, want 202", st, body)
	}
	ended, raw := pollUntilEnded(t, hp.url, taskKeyA, doomed.Task.ID, 10*time.Second)
	if ended.Task.Status != "cancelled" || ended.JSONRPC != "" {
		t.Errorf("cancelled task: %s", raw)
	}
	if active, cancelled := sleeps(t, hp.url, taskKeyA); active != 0 || cancelled != 1 {
		t.Errorf("sleeps after the DELETE: active %v cancelled %v, want 0 and 1 (the cancel reached the plugin)", active, cancelled)
	}
}

// TestTasksAcrossReplicas: two host processes share one real
// redis-server: a task created on A is polled to completion and
// cancelled from B; another key sees nothing on B; A SIGKILLed mid-task
// leaves its task failed on B, naming A, within the lease.
func TestTasksAcrossReplicas(t *testing.T) {
	url := testkit.StartRedis(t)
	dir := t.TempDir()
	testkit.InstallPlugin(t, dir, "faulty", "./testkit/plugins/faulty")
	const lease = time.Second
	args := taskHostArgs("--task-store", url, "--task-lease", lease.String())
	a := startHostProc(t, dir, args...)
	b := startHostProc(t, dir, args...)

	created, _ := startTask(t, a.url, taskKeyA, 2000)
	id := created.Task.ID
	if st, _, body := taskReq(t, http.MethodGet, b.url+"/opentool/tasks/"+id, taskKeyB, ""); st != http.StatusNotFound {
		t.Errorf("another key's GET on B: HTTP %d %s, want 404", st, body)
	}
	done, raw := pollUntilEnded(t, b.url, taskKeyA, id, 20*time.Second)
	if done.Task.Status != "completed" || done.Result["slept_ms"] != float64(2000) || done.ID != "sleep-2000" {
		t.Errorf("completed task polled on B: %s", raw)
	}

	// A cancel on B reaches the call on A at A's next renewal (lease/3).
	doomed, _ := startTask(t, a.url, taskKeyA, 60000)
	testkit.Eventually(t, 10*time.Second, "the sleep runs on A", func() bool {
		active, _ := sleeps(t, a.url, taskKeyA)
		return active == 1
	})
	for _, r := range []struct {
		name string
		hp   *hostProc
	}{{"B, of a task running on A", b}, {"A, of its own task", a}} {
		p50, p99 := pollLatency(t, r.hp.url, taskKeyA, doomed.Task.ID, 300)
		t.Logf("GET /opentool/tasks/{id} (working) on %s, Redis store: p50 %v, p99 %v over 300 polls", r.name, p50, p99)
	}
	cancelAt := time.Now()
	if st, _, body := taskReq(t, http.MethodDelete, b.url+"/opentool/tasks/"+doomed.Task.ID, taskKeyA, ""); st != http.StatusAccepted {
		t.Errorf("DELETE on B: HTTP %d %s, want 202", st, body)
	}
	ended, raw := pollUntilEnded(t, b.url, taskKeyA, doomed.Task.ID, 10*time.Second)
	t.Logf("cancel on B of a call on A: cancelled %v later", time.Since(cancelAt).Round(time.Millisecond))
	if ended.Task.Status != "cancelled" {
		t.Errorf("task cancelled on B: %s", raw)
	}
	if active, cancelled := sleeps(t, a.url, taskKeyA); active != 0 || cancelled != 1 {
		t.Errorf("A's sleeps after the DELETE on B: active %v cancelled %v, want 0 and 1", active, cancelled)
	}

	// A dies mid-task: the task fails on B within the lease, naming A.
	orphan, _ := startTask(t, a.url, taskKeyA, 60000)
	testkit.Eventually(t, 10*time.Second, "the sleep runs on A", func() bool {
		active, _ := sleeps(t, a.url, taskKeyA)
		return active == 1
	})
	killed := time.Now()
	if err := a.cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	<-a.done
	failed, raw := pollUntilEnded(t, b.url, taskKeyA, orphan.Task.ID, 10*time.Second)
	after := time.Since(killed)
	t.Logf("A SIGKILLed mid-task: the task was failed on B %v later (--task-lease %v): %s", after.Round(time.Millisecond), lease, failed.Task.StatusMessage)
	pid := fmt.Sprintf("pid %d", a.cmd.Process.Pid)
	if failed.Task.Status != "failed" || !strings.Contains(failed.Task.StatusMessage, pid) || failed.Error == nil || failed.Error.Code != -32603 ||
		failed.ID != "sleep-60000" || !regexp.MustCompile(`stopped renewing its lease`).MatchString(failed.Task.StatusMessage) {
		t.Errorf("task of the killed replica (%s): %s", pid, raw)
	}
	if after > lease+time.Second {
		t.Errorf("failed %v after the kill, want within the %v lease (and a poll)", after, lease)
	}
}
