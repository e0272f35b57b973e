package tasks_test

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/opentool-host/opentool-host/host/tasks"
	"github.com/opentool-host/opentool-host/testkit"
)

// replicaEnv, set to a Redis URL, makes the test binary a replica that
// starts one task whose call never ends, prints its id and waits to be
// killed (TestReplicaKilledMidTask).
const replicaEnv = "OPENTOOL_TASKS_TEST_REPLICA"

func TestMain(m *testing.M) {
	if url := os.Getenv(replicaEnv); url != "" {
		os.Exit(runReplica(url))
	}
	os.Exit(m.Run())
}

// runReplica is the killed replica of TestReplicaKilledMidTask.
func runReplica(url string) int {
	ctx := context.Background()
	store, err := tasks.NewRedisStore(ctx, url)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	m, err := tasks.NewManager(tasks.Config{Store: store, Replica: "doomed", Lease: 300 * time.Millisecond})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	rec, err := m.Start(ctx, "k", func(ctx context.Context) (json.RawMessage, error) {
		<-ctx.Done()
		return nil, ctx.Err()
	})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	fmt.Println(rec.ID)
	select {}
}

// startRedis is testkit.StartRedis: a redis-server of the test's own,
// or a skip saying why there is none.
func startRedis(t *testing.T) string { return testkit.StartRedis(t) }

// stores runs f against a MemoryStore and a RedisStore.
func stores(t *testing.T, f func(t *testing.T, newStore func() tasks.Store)) {
	t.Run("memory", func(t *testing.T) {
		f(t, func() tasks.Store { return tasks.NewMemoryStore() })
	})
	t.Run("redis", func(t *testing.T) {
		url := startRedis(t)
		f(t, func() tasks.Store {
			s, err := tasks.NewRedisStore(context.Background(), url)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { s.Close() })
			return s
		})
	})
}

// waitStatus polls owner's task id on m until it has status want.
func waitStatus(t *testing.T, m *tasks.Manager, owner, id string, want tasks.Status) tasks.Record {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		rec, err := m.Get(context.Background(), owner, id)
		if err != nil {
			t.Fatalf("get %s: %v", id, err)
		}
		if rec.Status == want {
			return rec
		}
		if time.Now().After(deadline) {
			t.Fatalf("task %s is %s after 10 s, want %s (%s)", id, rec.Status, want, rec.StatusMessage)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func newManager(t *testing.T, cfg tasks.Config) *tasks.Manager {
	t.Helper()
	m, err := tasks.NewManager(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(m.Close)
	return m
}

// TestLifecycle: working → completed with the result; a JSON-RPC error →
// failed with it; an owner sees only its own tasks.
func TestLifecycle(t *testing.T) {
	stores(t, func(t *testing.T, newStore func() tasks.Store) {
		m := newManager(t, tasks.Config{Store: newStore(), Lease: 300 * time.Millisecond})
		release := make(chan struct{})
		rec, err := m.Start(context.Background(), "alice", func(ctx context.Context) (json.RawMessage, error) {
			<-release
			return json.RawMessage(`{"content":[{"type":"text","text":"done"}],"isError":false}`), nil
		})
		if err != nil {
			t.Fatal(err)
		}
		if len(rec.ID) != 32 || rec.Status != tasks.Working {
			t.Fatalf("created %+v", rec)
		}
		got, err := m.Get(context.Background(), "alice", rec.ID)
		if err != nil || got.Status != tasks.Working {
			t.Fatalf("get right after Start: %+v %v", got, err)
		}
		if _, err := m.Get(context.Background(), "mallory", rec.ID); !errors.Is(err, tasks.ErrNotFound) {
			t.Errorf("another owner's get: %v, want ErrNotFound", err)
		}
		if err := m.Cancel(context.Background(), "mallory", rec.ID); !errors.Is(err, tasks.ErrNotFound) {
			t.Errorf("another owner's cancel: %v, want ErrNotFound", err)
		}
		close(release)
		done := waitStatus(t, m, "alice", rec.ID, tasks.Completed)
		d := done.Detailed()
		if string(d.Result) != `{"content":[{"type":"text","text":"done"}],"isError":false}` || d.TTLMs != tasks.DefaultTTL.Milliseconds() || d.PollIntervalMs != 1000 {
			t.Errorf("completed task %+v", d)
		}

		failing, err := m.Start(context.Background(), "alice", func(ctx context.Context) (json.RawMessage, error) {
			return nil, &tasks.RPCError{Code: -32603, Message: "plugin exited"}
		})
		if err != nil {
			t.Fatal(err)
		}
		f := waitStatus(t, m, "alice", failing.ID, tasks.Failed)
		if string(f.Detailed().Error) != `{"code":-32603,"message":"plugin exited"}` || f.Detailed().Result != nil {
			t.Errorf("failed task %+v", f.Detailed())
		}
	})
}

// TestCancelReachesTheCall: tasks/cancel cancels the running call, and
// the task ends cancelled.
func TestCancelReachesTheCall(t *testing.T) {
	stores(t, func(t *testing.T, newStore func() tasks.Store) {
		m := newManager(t, tasks.Config{Store: newStore(), Lease: 300 * time.Millisecond})
		cancelled := make(chan struct{})
		rec, err := m.Start(context.Background(), "k", func(ctx context.Context) (json.RawMessage, error) {
			<-ctx.Done()
			close(cancelled)
			return nil, ctx.Err()
		})
		if err != nil {
			t.Fatal(err)
		}
		if err := m.Cancel(context.Background(), "k", rec.ID); err != nil {
			t.Fatal(err)
		}
		select {
		case <-cancelled:
		case <-time.After(10 * time.Second):
			t.Fatal("the call was not cancelled")
		}
		if got := waitStatus(t, m, "k", rec.ID, tasks.Cancelled); got.StatusMessage != tasks.ErrCancelled.Error() {
			t.Errorf("status message %q, want %q", got.StatusMessage, tasks.ErrCancelled.Error())
		}
		if err := m.Cancel(context.Background(), "k", rec.ID); err != nil {
			t.Errorf("cancel of a terminal task: %v, want nil (acknowledged)", err)
		}
	})
}

// TestLimitsAndExpiry: an owner's task count is capped, other owners are
// not affected, and tasks are gone after their TTL.
func TestLimitsAndExpiry(t *testing.T) {
	stores(t, func(t *testing.T, newStore func() tasks.Store) {
		m := newManager(t, tasks.Config{Store: newStore(), MaxPerOwner: 2, TTL: 700 * time.Millisecond, Lease: 300 * time.Millisecond})
		quick := func(ctx context.Context) (json.RawMessage, error) { return json.RawMessage(`{}`), nil }
		var first tasks.Record
		for i := range 2 {
			rec, err := m.Start(context.Background(), "a", quick)
			if err != nil {
				t.Fatal(err)
			}
			if i == 0 {
				first = rec
			}
		}
		if _, err := m.Start(context.Background(), "a", quick); !errors.Is(err, tasks.ErrLimit) {
			t.Errorf("third task of a: %v, want ErrLimit", err)
		}
		if _, err := m.Start(context.Background(), "b", quick); err != nil {
			t.Errorf("b is limited by a's tasks: %v", err)
		}
		deadline := time.Now().Add(10 * time.Second)
		for {
			_, err := m.Get(context.Background(), "a", first.ID)
			if errors.Is(err, tasks.ErrNotFound) {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("task still there 10 s after a 700 ms TTL: %v", err)
			}
			time.Sleep(20 * time.Millisecond)
		}
		if _, err := m.Start(context.Background(), "a", quick); err != nil {
			t.Errorf("after the TTL a may start tasks again: %v", err)
		}
	})
}

// TestTwoReplicasShareTasks: a task created on one replica is polled and
// cancelled from another sharing the Redis store.
func TestTwoReplicasShareTasks(t *testing.T) {
	url := startRedis(t)
	open := func() tasks.Store {
		s, err := tasks.NewRedisStore(context.Background(), url)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Close() })
		return s
	}
	a := newManager(t, tasks.Config{Store: open(), Replica: "a", Lease: 300 * time.Millisecond})
	b := newManager(t, tasks.Config{Store: open(), Replica: "b", Lease: 300 * time.Millisecond})
	release := make(chan struct{})
	rec, err := a.Start(context.Background(), "k", func(ctx context.Context) (json.RawMessage, error) {
		select {
		case <-release:
			return json.RawMessage(`{"ok":true}`), nil
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	if got := waitStatus(t, b, "k", rec.ID, tasks.Working); got.Replica != "a" {
		t.Errorf("replica %q, want a", got.Replica)
	}
	close(release)
	if got := waitStatus(t, b, "k", rec.ID, tasks.Completed); string(got.Result) != `{"ok":true}` {
		t.Errorf("result %s", got.Result)
	}

	cancelled := make(chan struct{})
	long, err := a.Start(context.Background(), "k", func(ctx context.Context) (json.RawMessage, error) {
		<-ctx.Done()
		close(cancelled)
		return nil, ctx.Err()
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := b.Cancel(context.Background(), "k", long.ID); err != nil {
		t.Fatal(err)
	}
	select {
	case <-cancelled: // at a's next renewal, Lease/3 = 100 ms
	case <-time.After(10 * time.Second):
		t.Fatal("a cancel on replica b did not reach the call on replica a")
	}
	waitStatus(t, b, "k", long.ID, tasks.Cancelled)
}

// TestReplicaKilledMidTask: the replica running a task is SIGKILLed; the
// task turns failed, naming the replica, within its lease, on another
// replica.
func TestReplicaKilledMidTask(t *testing.T) {
	url := startRedis(t)
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(exe, "-test.run=^$")
	cmd.Env = append(os.Environ(), replicaEnv+"="+url)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil {
		t.Fatalf("replica printed no task id: %v", err)
	}
	id := strings.TrimSpace(line)
	store, err := tasks.NewRedisStore(context.Background(), url)
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	b := newManager(t, tasks.Config{Store: store, Replica: "b"})
	watched := make(chan tasks.Record, 4)
	defer b.Watch(func(r tasks.Record) { watched <- r })()
	if rec, err := b.Get(context.Background(), "k", id); err != nil || rec.Status != tasks.Working {
		t.Fatalf("while the replica lives: %+v %v", rec, err)
	}
	killed := time.Now()
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_ = cmd.Wait()
	rec := waitStatus(t, b, "k", id, tasks.Failed)
	if !strings.Contains(rec.StatusMessage, "doomed") || !strings.Contains(string(rec.Error), "-32603") {
		t.Errorf("failed task %+v", rec.Detailed())
	}
	t.Logf("task failed %v after its replica was SIGKILLed (lease 300 ms)", time.Since(killed).Round(time.Millisecond))
	// The Get that failed it reported it to Watch, once.
	if w := <-watched; w.ID != id || w.Status != tasks.Failed {
		t.Errorf("watched %+v, want task %s failed", w.Detailed(), id)
	}
	if _, err := b.Get(context.Background(), "k", id); err != nil {
		t.Fatal(err)
	}
	select {
	case w := <-watched:
		t.Errorf("a second Get reported the task again: %+v", w.Detailed())
	default:
	}
}

// TestWatch: Watch reports each task as it ends, once, terminal and as
// stored (completed with its result, failed with its error, cancelled
// with its reason); after stop it reports nothing.
func TestWatch(t *testing.T) {
	stores(t, func(t *testing.T, newStore func() tasks.Store) {
		m := newManager(t, tasks.Config{Store: newStore(), Lease: 300 * time.Millisecond})
		watched := make(chan tasks.Record, 8)
		stop := m.Watch(func(r tasks.Record) { watched <- r })
		next := func(id string) tasks.Record {
			t.Helper()
			select {
			case r := <-watched:
				if r.ID != id {
					t.Fatalf("watched task %s, want %s", r.ID, id)
				}
				return r
			case <-time.After(10 * time.Second):
				t.Fatalf("task %s: not reported within 10 s", id)
			}
			return tasks.Record{}
		}
		release := make(chan struct{})
		ok, err := m.Start(context.Background(), "alice", func(ctx context.Context) (json.RawMessage, error) {
			<-release
			return json.RawMessage(`{"isError":false}`), nil
		})
		if err != nil {
			t.Fatal(err)
		}
		select {
		case r := <-watched:
			t.Fatalf("a working task was reported: %+v", r.Detailed())
		default:
		}
		close(release)
		if r := next(ok.ID); r.Status != tasks.Completed || string(r.Result) != `{"isError":false}` || r.Owner != "alice" {
			t.Errorf("completed: %+v", r.Detailed())
		}
		bad, err := m.Start(context.Background(), "alice", func(ctx context.Context) (json.RawMessage, error) {
			return nil, &tasks.RPCError{Code: -32000, Message: "no"}
		})
		if err != nil {
			t.Fatal(err)
		}
		if r := next(bad.ID); r.Status != tasks.Failed || string(r.Error) != `{"code":-32000,"message":"no"}` {
			t.Errorf("failed: %+v", r.Detailed())
		}
		long, err := m.Start(context.Background(), "alice", func(ctx context.Context) (json.RawMessage, error) {
			<-ctx.Done()
			return nil, ctx.Err()
		})
		if err != nil {
			t.Fatal(err)
		}
		if err := m.Cancel(context.Background(), "alice", long.ID); err != nil {
			t.Fatal(err)
		}
		if r := next(long.ID); r.Status != tasks.Cancelled || r.StatusMessage != tasks.ErrCancelled.Error() {
			t.Errorf("cancelled: %+v", r.Detailed())
		}
		stop()
		stop()
		after, err := m.Start(context.Background(), "alice", func(ctx context.Context) (json.RawMessage, error) { return json.RawMessage(`{}`), nil })
		if err != nil {
			t.Fatal(err)
		}
		waitStatus(t, m, "alice", after.ID, tasks.Completed)
		m.Close() // the outcome is stored, and reported if it would be, before Close returns
		select {
		case r := <-watched:
			t.Errorf("reported after stop: %+v", r.Detailed())
		default:
		}
	})
}

// ctxKey carries a value from the request's context to the call's.
type ctxKey struct{}

// TestStartAfter: a call that ends within After is answered as is and
// leaves no task; one that runs longer becomes a task that carries the
// request's values and Origin, survives the request's end and completes;
// before it is a task, the request's end cancels the call; over the
// owner's limit the call is answered plainly.
func TestStartAfter(t *testing.T) {
	stores(t, func(t *testing.T, newStore func() tasks.Store) {
		store := newStore()
		m := newManager(t, tasks.Config{Store: store, Lease: 300 * time.Millisecond, MaxPerOwner: 1})
		ctx := context.WithValue(context.Background(), ctxKey{}, "alice's request")

		res, rec, err := m.StartAfter(ctx, "alice", tasks.Origin{}, time.Second, func(ctx context.Context) (json.RawMessage, error) {
			return json.RawMessage(`{"quick":true}`), nil
		})
		if err != nil || rec != nil || string(res) != `{"quick":true}` {
			t.Fatalf("quick call: %s %+v %v", res, rec, err)
		}
		if n, _, _ := store.Usage(context.Background(), "alice"); n != 0 {
			t.Errorf("a quick call left %d tasks", n)
		}

		reqCtx, endRequest := context.WithCancel(ctx)
		release := make(chan struct{})
		var seen any
		start := time.Now()
		res, rec, err = m.StartAfter(reqCtx, "alice", tasks.Origin{FrontEnd: "test", Function: "slow", RequestID: json.RawMessage(`"r1"`)}, 100*time.Millisecond,
			func(ctx context.Context) (json.RawMessage, error) {
				seen = ctx.Value(ctxKey{})
				select {
				case <-release:
					return json.RawMessage(`{"slow":true}`), nil
				case <-ctx.Done():
					return nil, ctx.Err()
				}
			})
		if err != nil || rec == nil || res != nil {
			t.Fatalf("slow call: %s %+v %v", res, rec, err)
		}
		if d := time.Since(start); d < 100*time.Millisecond || d > 5*time.Second {
			t.Errorf("the task came after %v, want about 100 ms", d)
		}
		endRequest() // the client has its task id and goes: the call goes on
		time.Sleep(50 * time.Millisecond)
		close(release)
		done := waitStatus(t, m, "alice", rec.ID, tasks.Completed)
		if string(done.Result) != `{"slow":true}` || seen != "alice's request" {
			t.Errorf("task %+v, the call saw %v", done, seen)
		}
		if done.Origin.FrontEnd != "test" || done.Origin.Function != "slow" || string(done.Origin.RequestID) != `"r1"` {
			t.Errorf("origin %+v", done.Origin)
		}

		// alice holds 1 task, her limit: the next call is answered plainly.
		res, rec, err = m.StartAfter(ctx, "alice", tasks.Origin{}, 0, func(ctx context.Context) (json.RawMessage, error) {
			time.Sleep(50 * time.Millisecond)
			return json.RawMessage(`{"plain":true}`), nil
		})
		if err != nil || rec != nil || string(res) != `{"plain":true}` {
			t.Errorf("over the limit: %s %+v %v, want the plain answer", res, rec, err)
		}

		// Before it is a task, the request's end cancels the call.
		reqCtx, endRequest = context.WithCancel(ctx)
		cancelled := make(chan struct{})
		go func() { time.Sleep(50 * time.Millisecond); endRequest() }()
		_, rec, err = m.StartAfter(reqCtx, "bob", tasks.Origin{}, 10*time.Second, func(ctx context.Context) (json.RawMessage, error) {
			<-ctx.Done()
			close(cancelled)
			return nil, ctx.Err()
		})
		if rec != nil || !errors.Is(err, context.Canceled) {
			t.Errorf("request gone before the task: %+v %v", rec, err)
		}
		select {
		case <-cancelled:
		default:
			t.Error("the call was not cancelled with its request")
		}
	})
}
