package codepool

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/opentool-host/opentool-host/internal/coderun"
)

// Grace is how long after its wall-time limit a runner is killed when
// it has not ended the program itself (goja's Interrupt is checked
// between instructions; a runner stuck elsewhere is killed).
const Grace = 2 * time.Second

// CallFunc runs one inner call of a program (tools[name](args), args a
// JSON value) on the program's context and returns its result (a JSON
// value) or its JSON-RPC error.
type CallFunc func(ctx context.Context, name string, args json.RawMessage) (json.RawMessage, *coderun.CallError)

// Run runs program run on a runner of its own, answering its inner
// calls with call (one at a time, on ctx: ending ctx cancels the inner
// call under way and kills the runner), and returns its Done. The runner
// is killed when Run returns. Errors: ctx's cause (the caller went away
// or its deadline passed), a *RunnerError (the runner did not start,
// ended before the program did, or was killed at the limit timeout_ms
// plus Grace).
func (p *Pool) Run(ctx context.Context, run coderun.Run, call CallFunc) (*coderun.Done, error) {
	r, err := p.take()
	if err != nil {
		return nil, &RunnerError{Message: "the code runner did not start", Err: err}
	}
	defer r.end()
	if run.Limits.TimeoutMs > 0 {
		var cancel context.CancelFunc
		limit := time.Duration(run.Limits.TimeoutMs)*time.Millisecond + Grace
		ctx, cancel = context.WithTimeoutCause(ctx, limit, &RunnerError{
			Message: fmt.Sprintf("the program ran out of time: the limit timeout_ms is %d ms (the runner was killed)", run.Limits.TimeoutMs)})
		defer cancel()
	}
	msgs := make(chan message)
	stop := make(chan struct{})
	defer close(stop)
	go r.read(msgs, stop)
	if err := coderun.Write(r.stdin, coderun.ToRunner{Run: &run}); err != nil {
		return nil, p.endedError(r, err)
	}
	for {
		select {
		case <-ctx.Done():
			return nil, context.Cause(ctx)
		case m := <-msgs:
			switch {
			case m.err != nil:
				return nil, p.endedError(r, m.err)
			case m.Done != nil:
				return m.Done, nil
			case m.Call == nil:
				return nil, p.endedError(r, fmt.Errorf("the runner sent neither a call nor its end"))
			}
			res, cerr := call(ctx, m.Call.Name, m.Call.Args)
			if ctx.Err() != nil {
				return nil, context.Cause(ctx)
			}
			reply := coderun.Reply{ID: m.Call.ID, Result: res, Error: cerr}
			if err := coderun.Write(r.stdin, coderun.ToRunner{Reply: &reply}); err != nil {
				return nil, p.endedError(r, err)
			}
		}
	}
}

// message is one message of the runner, or why none came.
type message struct {
	coderun.FromRunner
	err error
}

// read hands the runner's messages to msgs until its end (or an error),
// or until stop is closed.
func (r *runner) read(msgs chan<- message, stop <-chan struct{}) {
	for {
		var m message
		m.err = r.out.Read(&m.FromRunner)
		select {
		case msgs <- m:
		case <-stop:
			return
		}
		if m.err != nil || m.Done != nil {
			return
		}
	}
}
