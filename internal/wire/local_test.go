package wire

import (
	"context"
	"errors"
	"io"
	"testing"
	"time"
)

// fakeLocal is a Local whose Call runs call.
type fakeLocal struct {
	call func(ctx context.Context, cf *CallFrame, out CallOut) *ToolError
}

func (f *fakeLocal) Load(context.Context) ([]byte, error) { return []byte(`{}`), nil }
func (f *fakeLocal) Watch(ctx context.Context) (func() (WatchEvent, error), error) {
	return func() (WatchEvent, error) { <-ctx.Done(); return WatchEvent{}, ctx.Err() }, nil
}
func (f *fakeLocal) Catalog(context.Context) ([]byte, error) { return nil, nil }
func (f *fakeLocal) Request(context.Context, string, []byte) ([]byte, error) {
	return nil, &RPCError{Code: CodeMethodNotFound}
}
func (f *fakeLocal) Call(ctx context.Context, cf *CallFrame, out CallOut) *ToolError {
	return f.call(ctx, cf, out)
}
func (f *fakeLocal) Run(ctx context.Context) error { <-ctx.Done(); return ctx.Err() }
func (f *fakeLocal) PID() int                      { return 0 }
func (f *fakeLocal) Kill()                         {}
func (f *fakeLocal) ClientRestarts() int           { return 0 }

// next reads the call's next event within a bound.
func next(t *testing.T, c *Call) (Event, error) {
	t.Helper()
	type r struct {
		ev  Event
		err error
	}
	ch := make(chan r, 1)
	go func() { ev, err := c.Next(); ch <- r{ev, err} }()
	select {
	case got := <-ch:
		return got.ev, got.err
	case <-time.After(5 * time.Second):
		t.Fatal("Next did not return")
	}
	return Event{}, nil
}

// limitCall is the call named cf.Name that both tests of a Local's
// limits make: "big" sends a result over 50 bytes, "ask" sends a request
// and returns its answer, "wait" waits for its context; any other name is
// a 404.
func limitCall(ctx context.Context, cf *CallFrame, out CallOut) *ToolError {
	switch cf.Name {
	case "big":
		if err := out.Send(make([]byte, 100)); !errors.Is(err, ErrResultTooLarge) {
			return &ToolError{Code: 500, Message: "an oversized result was taken"}
		}
		return nil
	case "ask":
		res, err := out.Peer().Request(ctx, "roots/list", nil)
		if err != nil {
			return &ToolError{Code: 500, Message: err.Error()}
		}
		_ = out.Send(res)
		return nil
	case "wait":
		<-ctx.Done()
		return &ToolError{Code: 499, Message: "canceled"}
	}
	return &ToolError{Code: 404, Message: "no " + cf.Name}
}

// TestLocalCall: a call on a Local gets its results, messages and the
// caller's _meta in order, its end after them; the limits of the other
// transports hold (one result for a unary call, the result size, cancel,
// a reply to nothing, the plugin stopped).
func TestLocalCall(t *testing.T) {
	stopped, stop := context.WithCancel(context.Background())
	release := make(chan struct{})
	t.Cleanup(func() { close(release) })
	p := &fakeLocal{call: func(ctx context.Context, cf *CallFrame, out CallOut) *ToolError {
		switch cf.Name {
		case "ok":
			if string(out.Peer().Meta()) != `{"k":1}` || string(cf.Arguments) != `{"a":1}` {
				return &ToolError{Code: 400, Message: "meta or arguments lost"}
			}
			_ = out.Peer().Notify("notifications/progress", []byte(`{"progress":1}`))
			if err := out.SendMCP([]byte(`{"content":[]}`)); err != nil {
				return &ToolError{Code: 500, Message: err.Error()}
			}
			if err := out.Send([]byte(`{}`)); err == nil {
				return &ToolError{Code: 500, Message: "a second result was taken"}
			}
			return nil
		case "stuck":
			<-release // ignores its context, as a stuck plugin would
			return nil
		}
		return limitCall(ctx, cf, out)
	}}
	c := NewLocalClient(p, 50, stopped)
	ctx := context.Background()

	call, _ := c.Start(ctx, Invocation{Name: "ok", Args: []byte(`{"a":1}`), Meta: []byte(`{"k":1}`)})
	if ev, err := next(t, call); err != nil || ev.Message == nil || ev.Message.Method != "notifications/progress" {
		t.Fatalf("first event = %+v, %v; want the progress", ev, err)
	}
	if ev, err := next(t, call); err != nil || !ev.MCP || string(ev.Data) != `{"content":[]}` {
		t.Fatalf("second event = %+v, %v; want the MCP result", ev, err)
	}
	if _, err := next(t, call); !errors.Is(err, io.EOF) {
		t.Fatalf("end = %v, want io.EOF", err)
	}

	call, _ = c.Start(ctx, Invocation{Name: "big"})
	if _, err := next(t, call); !errors.Is(err, ErrResultTooLarge) {
		t.Fatalf("oversized result: %v, want ErrResultTooLarge", err)
	}

	call, _ = c.Start(ctx, Invocation{Name: "ask"})
	ev, err := next(t, call)
	if err != nil || ev.Message == nil || !ev.Message.IsRequest() {
		t.Fatalf("ask: %+v, %v; want a request", ev, err)
	}
	if err := call.Reply(Reply{ID: ev.Message.ID + 7}); err == nil {
		t.Fatal("a reply to a request never sent was taken")
	}
	if _, err := next(t, call); err == nil || errors.Is(err, io.EOF) {
		t.Fatalf("after a reply to nothing the call went on: %v", err)
	}

	call, _ = c.Start(ctx, Invocation{Name: "wait"})
	_ = call.Cancel()
	var te *ToolError
	if _, err := next(t, call); !errors.As(err, &te) || te.Code != 499 {
		t.Fatalf("canceled call ended with %v", err)
	}

	call, _ = c.Start(ctx, Invocation{Name: "stuck"})
	stop()
	if _, err := next(t, call); err == nil || errors.Is(err, io.EOF) {
		t.Fatalf("a call of a stopped plugin ended with %v", err)
	}
}
