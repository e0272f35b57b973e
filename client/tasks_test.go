package client_test

import (
	"errors"
	"testing"
	"time"

	"github.com/opentool-host/opentool-host/client"
	"github.com/opentool-host/opentool-host/frontend/opentoolapi"
	"github.com/opentool-host/opentool-host/frontend/route"
	"github.com/opentool-host/opentool-host/host/access"
	"github.com/opentool-host/opentool-host/host/tasks"
	"github.com/opentool-host/opentool-host/testkit"
)

// startTaskServer serves a real host running the faulty test plugin
// behind keys "alice-key" and "bob-key", with tasks after 100 ms (none
// when withTasks is false), and returns the OpenTool base URL.
func startTaskServer(t *testing.T, withTasks bool) string {
	t.Helper()
	h := testkit.StartHost(t, nil, "./testkit/plugins/faulty")
	guard, err := access.New(access.Config{Keys: []string{"alice-key", "bob-key"}})
	if err != nil {
		t.Fatal(err)
	}
	cfg := opentoolapi.Config{Version: "1.2.3", Logger: testkit.Logger(t)}
	if withTasks {
		tm, err := tasks.NewManager(tasks.Config{After: 100 * time.Millisecond, PollInterval: 50 * time.Millisecond})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(tm.Close)
		cfg.Tasks = tm
	}
	return testkit.Serve(t, guard.Middleware(route.Mux(opentoolapi.New(h, cfg).Routes()))) + opentoolapi.BasePath
}

// TestCallTask: a quick call is done at once; a long one is a task that
// Wait polls to its result, that a new client resumes by id, that another
// key cannot see, and that Cancel cancels; a failed call's error comes
// out of Wait; a server without tasks answers plainly.
func TestCallTask(t *testing.T) {
	base := startTaskServer(t, true)
	c := client.New(client.WithBaseURL(base), client.WithAPIKey("alice-key"))
	ctx := testCtx(t)

	quick, err := c.CallTask(ctx, client.FunctionCall{ID: "q", Name: "sleep", Arguments: map[string]any{"ms": 1}})
	if err != nil || quick.ID != "" || !quick.Done() {
		t.Fatalf("quick call: %+v %v", quick, err)
	}
	if ret, err := quick.Result(); err != nil || ret.ID != "q" || ret.Result["slept_ms"] != float64(1) {
		t.Errorf("quick result: %+v %v", ret, err)
	}

	long, err := c.CallTask(ctx, client.FunctionCall{ID: "l", Name: "sleep", Arguments: map[string]any{"ms": 800}})
	if err != nil {
		t.Fatal(err)
	}
	if len(long.ID) != 32 || long.Status != client.TaskWorking || long.PollInterval != 50*time.Millisecond || long.TTL != tasks.DefaultTTL {
		t.Fatalf("long call: %+v", long)
	}
	if _, err := long.Result(); err == nil {
		t.Error("Result of a working task: nil error")
	}
	var nf *client.TaskNotFoundError
	bob := client.New(client.WithBaseURL(base), client.WithAPIKey("bob-key"))
	if err := bob.Task(long.ID).Refresh(ctx); !errors.As(err, &nf) || nf.ID != long.ID {
		t.Errorf("bob's Refresh of alice's task: %v, want *TaskNotFoundError", err)
	}
	ret, err := long.Wait(ctx)
	if err != nil || ret.ID != "l" || ret.Result["slept_ms"] != float64(800) {
		t.Errorf("Wait: %+v %v", ret, err)
	}
	resumed := client.New(client.WithBaseURL(base), client.WithAPIKey("alice-key")).Task(long.ID)
	if ret, err := resumed.Wait(ctx); err != nil || ret.ID != "l" || ret.Result["slept_ms"] != float64(800) || resumed.Status != client.TaskCompleted {
		t.Errorf("resumed Wait: %+v %v (%+v)", ret, err, resumed)
	}

	doomed, err := c.CallTask(ctx, client.FunctionCall{Name: "sleep", Arguments: map[string]any{"ms": 20000}}, client.TaskWait(0))
	if err != nil || doomed.ID == "" {
		t.Fatalf("TaskWait(0): %+v %v", doomed, err)
	}
	// Cancelled once it runs in the plugin (a task cancelled before its
	// call reached the plugin is never sent, and counts no cancelled sleep).
	testkit.Eventually(t, 10*time.Second, "the task's sleep running", func() bool {
		got, err := c.Call(ctx, client.FunctionCall{Name: "sleeps"})
		return err == nil && got.Result["active"] == float64(1)
	})
	if err := doomed.Cancel(ctx); err != nil {
		t.Fatal(err)
	}
	var ce *client.TaskCancelledError
	if _, err := doomed.Wait(ctx); !errors.As(err, &ce) || ce.ID != doomed.ID {
		t.Errorf("Wait after Cancel: %v, want *TaskCancelledError", err)
	}
	if got, err := c.Call(ctx, client.FunctionCall{Name: "sleeps"}); err != nil || got.Result["cancelled"] != float64(1) {
		t.Errorf("sleeps after Cancel: %+v %v, want 1 cancelled", got, err)
	}

	missing, err := c.CallTask(ctx, client.FunctionCall{Name: "nosuch"}, client.TaskWait(0))
	if err != nil || missing.ID == "" {
		t.Fatalf("nosuch: %+v %v", missing, err)
	}
	var callErr *client.CallError
	if _, err := missing.Wait(ctx); !errors.As(err, &callErr) || callErr.Code != -32601 {
		t.Errorf("Wait of a failed call: %v, want *CallError -32601", err)
	}
	if err := c.Task("0123456789abcdef0123456789abcdef").Refresh(ctx); !errors.As(err, &nf) {
		t.Errorf("Refresh of an unknown task: %v, want *TaskNotFoundError", err)
	}

	plain := client.New(client.WithBaseURL(startTaskServer(t, false)), client.WithAPIKey("alice-key"))
	start := time.Now()
	done, err := plain.CallTask(ctx, client.FunctionCall{Name: "sleep", Arguments: map[string]any{"ms": 300}}, client.TaskWait(0))
	if err != nil || done.ID != "" || done.Status != client.TaskCompleted || time.Since(start) < 300*time.Millisecond {
		t.Errorf("a server without tasks: %+v %v", done, err)
	}
}
