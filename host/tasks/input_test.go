package tasks_test

import (
	"context"
	"encoding/json"
	"errors"
	"testing"

	"github.com/opentool-host/opentool-host/host/tasks"
)

// TestAskAndAnswer: a task's call that asks (Manager.Ask) makes the task
// input_required with the request under its key; a response to another
// key changes nothing, the response to its key resumes the call (working
// again, then completed with what the call made of it); a call cannot
// have more than MaxInputRequests waiting; a task cancelled while it
// waits ends cancelled without its requests. Another replica cannot
// deliver a response (ErrElsewhere) but ignores unknown keys.
func TestAskAndAnswer(t *testing.T) {
	stores(t, func(t *testing.T, newStore func() tasks.Store) {
		store := newStore()
		m := newManager(t, tasks.Config{Store: store, Replica: "a"})
		other := newManager(t, tasks.Config{Store: store, Replica: "b"})
		ctx := context.Background()
		request := json.RawMessage(`{"method":"elicitation/create","params":{"message":"name?"}}`)
		ids := make(chan string, 1)
		rec, err := m.Start(ctx, "k", func(ctx context.Context) (json.RawMessage, error) {
			return m.Ask(ctx, <-ids, request)
		})
		if err != nil {
			t.Fatal(err)
		}
		ids <- rec.ID
		got := waitStatus(t, m, "k", rec.ID, tasks.InputRequired)
		if d := got.Detailed(); len(d.InputRequests) != 1 || string(d.InputRequests["input-1"]) != string(request) {
			t.Fatalf("input_required task shows %v, want input-1: %s", d.InputRequests, request)
		}
		if err := other.Answer(ctx, got, map[string]json.RawMessage{"input-1": json.RawMessage(`{}`)}); !errors.Is(err, tasks.ErrElsewhere) {
			t.Errorf("an answer on another replica: %v, want ErrElsewhere", err)
		}
		if err := other.Answer(ctx, got, map[string]json.RawMessage{"input-9": json.RawMessage(`{}`)}); err != nil {
			t.Errorf("an unknown key on another replica: %v, want it ignored", err)
		}
		if err := m.Answer(ctx, got, map[string]json.RawMessage{"input-9": json.RawMessage(`{}`)}); err != nil {
			t.Fatal(err)
		}
		if now, _ := m.Get(ctx, "k", rec.ID); now.Status != tasks.InputRequired || len(now.InputRequests) != 1 {
			t.Fatalf("after an unknown key: %s %v", now.Status, now.InputRequests)
		}
		if err := m.Answer(ctx, got, map[string]json.RawMessage{"input-1": json.RawMessage(`{"action":"accept"}`)}); err != nil {
			t.Fatal(err)
		}
		if done := waitStatus(t, m, "k", rec.ID, tasks.Completed); string(done.Result) != `{"action":"accept"}` || done.InputRequests != nil {
			t.Errorf("completed with %s, requests %v", done.Result, done.InputRequests)
		}

		errs := make(chan error, tasks.MaxInputRequests+1)
		many, err := m.Start(ctx, "k", func(ctx context.Context) (json.RawMessage, error) {
			id := <-ids
			for range tasks.MaxInputRequests + 1 {
				go func() {
					_, err := m.Ask(ctx, id, request)
					errs <- err
				}()
			}
			<-ctx.Done()
			return nil, ctx.Err()
		})
		if err != nil {
			t.Fatal(err)
		}
		ids <- many.ID
		if err := <-errs; !errors.Is(err, tasks.ErrInputLimit) {
			t.Errorf("request %d: %v, want ErrInputLimit", tasks.MaxInputRequests+1, err)
		}
		if err := m.Cancel(ctx, "k", many.ID); err != nil {
			t.Fatal(err)
		}
		if gone := waitStatus(t, m, "k", many.ID, tasks.Cancelled); gone.InputRequests != nil || gone.Detailed().InputRequests != nil {
			t.Errorf("cancelled task keeps its requests: %v", gone.InputRequests)
		}
	})
}
