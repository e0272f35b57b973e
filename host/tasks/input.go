package tasks

import (
	"context"
	"encoding/json"
	"errors"
	"maps"
	"strconv"
	"time"
)

// Input during a task (the Tasks extension's input_required with
// SEP-2322's inputRequests; tasks/update to answer): the call of a task
// asks its client through Ask, which shows the request in the task's
// record until Answer delivers the client's response. The waiting call
// is on the replica running it: Answer delivers only there.

// MaxInputRequests is how many requests of one task's call may wait for
// the client at once (Ask): a call that asks more gets ErrInputLimit.
const MaxInputRequests = 16

// ErrInputLimit is Ask's error for a call that already has
// MaxInputRequests requests waiting.
var ErrInputLimit = errors.New("too many requests of this task wait for the client")

// ErrElsewhere is Answer's error for responses to a task whose call runs
// on another replica: only that replica can give them to the call.
var ErrElsewhere = errors.New("the task's call runs on another replica; send the responses to it")

// inputWaits are the requests of one task's call that wait for the
// client, on this replica (guarded by Manager.mu).
type inputWaits struct {
	n    int                             // keys handed out so far
	keys map[string]chan json.RawMessage // key → where its response goes
}

// Ask shows request (a JSON-RPC request object: {"method", "params"})
// in task id's record under a fresh key ("input-N", unique in the task)
// and sets the task input_required, then waits for the response Answer
// delivers and returns it (JSON, as the client sent it). The task goes
// back to working when no request of it waits. id must be a task whose
// call runs on this Manager, and ctx that call's. Errors: ErrInputLimit;
// the store's; ctx's cause when it ends first (the request is then
// withdrawn from the record).
func (m *Manager) Ask(ctx context.Context, id string, request json.RawMessage) (json.RawMessage, error) {
	key, ch, err := m.wait(id)
	if err != nil {
		return nil, err
	}
	_, err = m.cfg.Store.Update(ctx, id, func(r *Record) error {
		if r.Status.Terminal() {
			return nil
		}
		// A new map: a record read before (MemoryStore's copies share
		// it) is never changed under its reader.
		reqs := maps.Clone(r.InputRequests)
		if reqs == nil {
			reqs = map[string]json.RawMessage{}
		}
		reqs[key] = request
		r.InputRequests = reqs
		r.Status, r.LastUpdatedAt = InputRequired, time.Now().UTC()
		return nil
	})
	if err != nil {
		m.withdraw(context.WithoutCancel(ctx), id, key)
		return nil, err
	}
	select {
	case resp := <-ch:
		// Answered: gone from the record already (Answer), unless an
		// answer came before the record showed it.
		m.withdraw(context.WithoutCancel(ctx), id, key)
		return resp, nil
	case <-ctx.Done():
		m.withdraw(context.WithoutCancel(ctx), id, key)
		return nil, context.Cause(ctx)
	}
}

// wait registers a fresh key of task id's requests and the channel its
// response is delivered on. Errors: ErrInputLimit.
func (m *Manager) wait(id string) (string, chan json.RawMessage, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.inputs == nil {
		m.inputs = map[string]*inputWaits{}
	}
	w := m.inputs[id]
	if w == nil {
		w = &inputWaits{keys: map[string]chan json.RawMessage{}}
		m.inputs[id] = w
	}
	if len(w.keys) >= MaxInputRequests {
		return "", nil, ErrInputLimit
	}
	w.n++
	key := "input-" + strconv.Itoa(w.n)
	ch := make(chan json.RawMessage, 1)
	w.keys[key] = ch
	return key, ch, nil
}

// withdraw forgets key of task id here and drops it from the record
// (logged when the store fails: the call goes on).
func (m *Manager) withdraw(ctx context.Context, id, key string) {
	m.mu.Lock()
	if w := m.inputs[id]; w != nil {
		delete(w.keys, key)
	}
	m.mu.Unlock()
	if err := m.drop(ctx, id, []string{key}); err != nil {
		m.cfg.Logger.Error("task input request not withdrawn", "task", id, "key", key, "error", err)
	}
}

// drop removes keys from task id's inputRequests; the task is working
// again when none is left.
func (m *Manager) drop(ctx context.Context, id string, keys []string) error {
	_, err := m.cfg.Store.Update(ctx, id, func(r *Record) error {
		reqs := maps.Clone(r.InputRequests) // as in Ask
		for _, k := range keys {
			delete(reqs, k)
		}
		if len(reqs) == len(r.InputRequests) {
			return nil
		}
		r.InputRequests = reqs
		if len(r.InputRequests) == 0 {
			r.InputRequests = nil
			if r.Status == InputRequired {
				r.Status = Working
			}
		}
		r.LastUpdatedAt = time.Now().UTC()
		return nil
	})
	return err
}

// Answer gives responses (by key, each JSON as the client sent it) to
// the requests of task rec that wait on this Manager; a key no request
// of the task waits for is ignored (as the extension's tasks/update
// says), so is a second response to a key. It returns once the record no
// longer shows the answered requests. Errors: ErrElsewhere when rec's
// call runs on another replica and a response answers one of its
// requests; the store's.
func (m *Manager) Answer(ctx context.Context, rec Record, responses map[string]json.RawMessage) error {
	if len(responses) == 0 {
		return nil
	}
	m.mu.Lock()
	deliver := map[string]chan json.RawMessage{}
	if w := m.inputs[rec.ID]; w != nil {
		for k := range responses {
			if ch, ok := w.keys[k]; ok {
				deliver[k] = ch
				delete(w.keys, k)
			}
		}
	}
	m.mu.Unlock()
	if len(deliver) == 0 {
		for k := range responses {
			if _, ok := rec.InputRequests[k]; ok && rec.Replica != m.cfg.Replica {
				return ErrElsewhere
			}
		}
		return nil
	}
	keys := make([]string, 0, len(deliver))
	for k := range deliver {
		keys = append(keys, k)
	}
	err := m.drop(ctx, rec.ID, keys)
	for k, ch := range deliver {
		ch <- responses[k] // buffered, and each key is delivered once
	}
	return err
}
