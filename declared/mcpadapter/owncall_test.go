package mcpadapter

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/opentool-host/opentool-host/protocol/mcpmethod"
	"github.com/opentool-host/opentool-host/testkit"
)

// pipeConn is an mcp.Connection of a test: what is written goes to
// written, what is put on in is read.
type pipeConn struct {
	in      chan jsonrpc.Message
	written chan jsonrpc.Message
	closed  chan struct{}
}

func newPipeConn() *pipeConn {
	return &pipeConn{in: make(chan jsonrpc.Message, 8), written: make(chan jsonrpc.Message, 8), closed: make(chan struct{})}
}

func (p *pipeConn) Read(ctx context.Context) (jsonrpc.Message, error) {
	select {
	case m := <-p.in:
		return m, nil
	case <-p.closed:
		return nil, io.EOF
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

func (p *pipeConn) Write(_ context.Context, m jsonrpc.Message) error {
	p.written <- m
	return nil
}

func (p *pipeConn) Close() error      { close(p.closed); return nil }
func (p *pipeConn) SessionID() string { return "" }

// next returns the next message written, failing the test after bound.
func (p *pipeConn) next(t *testing.T) jsonrpc.Message {
	t.Helper()
	select {
	case m := <-p.written:
		return m
	case <-time.After(bound):
		t.Fatal("nothing written")
		return nil
	}
}

// reading reads c as the SDK does (until an error), handing each message
// read to got.
func reading(c *rawConn) (got chan jsonrpc.Message, done chan error) {
	got, done = make(chan jsonrpc.Message, 8), make(chan error, 1)
	go func() {
		for {
			m, err := c.Read(context.Background())
			if err != nil {
				done <- err
				return
			}
			got <- m
		}
	}()
	return got, done
}

// TestOwnCallAnswered: the adapter's own request goes out with an id of
// its own (a string: the SDK's are numbers), its response reaches it and
// not the SDK's reader, which reads on to the next message; the server's
// JSON-RPC error comes back wrapped as the SDK's client gives it.
func TestOwnCallAnswered(t *testing.T) {
	p := newPipeConn()
	c := newRawConn(p)
	got, _ := reading(c)

	type answer struct {
		res json.RawMessage
		err error
	}
	ans := make(chan answer, 1)
	go func() {
		res, err := c.call(context.Background(), mcpmethod.ToolsCall, json.RawMessage(`{"name":"t","arguments":{}}`))
		ans <- answer{res, err}
	}()
	req, ok := p.next(t).(*jsonrpc.Request)
	if !ok || req.Method != mcpmethod.ToolsCall || string(req.Params) != `{"name":"t","arguments":{}}` {
		t.Fatalf("written %#v, want the tools/call", req)
	}
	if id, ok := req.ID.Raw().(string); !ok || !strings.HasPrefix(id, ownIDPrefix) {
		t.Fatalf("id %#v, want a string beginning %q", req.ID.Raw(), ownIDPrefix)
	}
	p.in <- &jsonrpc.Response{ID: req.ID, Result: json.RawMessage(`{"content":[]}`)}
	sdkID, _ := jsonrpc.MakeID(int64(7))
	p.in <- &jsonrpc.Response{ID: sdkID, Result: json.RawMessage(`{}`)} // the SDK's own
	a := <-ans
	if a.err != nil || string(a.res) != `{"content":[]}` {
		t.Fatalf("call = %s, %v; want the result", a.res, a.err)
	}
	if m := <-got; m.(*jsonrpc.Response).ID != sdkID {
		t.Fatalf("the SDK read %#v, want only its own response", m)
	}

	go func() {
		res, err := c.call(context.Background(), mcpmethod.ToolsCall, json.RawMessage(`{}`))
		ans <- answer{res, err}
	}()
	req = p.next(t).(*jsonrpc.Request)
	p.in <- &jsonrpc.Response{ID: req.ID, Error: &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: "bad"}}
	a = <-ans
	var je *jsonrpc.Error
	if !errors.As(a.err, &je) || je.Code != jsonrpc.CodeInvalidParams || a.err.Error() != `calling "tools/call": bad` {
		t.Fatalf("call error = %v, want the server's -32602 as the SDK wraps it", a.err)
	}
}

// TestOwnCallCancelled: a caller that gives up gets its context's error
// at once, and the server is sent notifications/cancelled naming the
// request; a response that comes after is dropped, not handed to the SDK.
func TestOwnCallCancelled(t *testing.T) {
	p := newPipeConn()
	c := newRawConn(p)
	got, _ := reading(c)
	ctx, cancel := context.WithCancel(context.Background())
	errc := make(chan error, 1)
	go func() {
		_, err := c.call(ctx, mcpmethod.ToolsCall, json.RawMessage(`{}`))
		errc <- err
	}()
	req := p.next(t).(*jsonrpc.Request)
	cancel()
	if err := <-errc; !errors.Is(err, context.Canceled) {
		t.Fatalf("call error = %v, want context.Canceled", err)
	}
	n, ok := p.next(t).(*jsonrpc.Request)
	var cp mcp.CancelledParams
	if !ok || n.IsCall() || n.Method != mcpmethod.Cancelled || json.Unmarshal(n.Params, &cp) != nil || cp.RequestID != req.ID.Raw() {
		t.Fatalf("written %#v, want notifications/cancelled of %v", n, req.ID.Raw())
	}
	p.in <- &jsonrpc.Response{ID: req.ID, Result: json.RawMessage(`{}`)} // late
	sdkID, _ := jsonrpc.MakeID(int64(1))
	p.in <- &jsonrpc.Response{ID: sdkID, Result: json.RawMessage(`{}`)}
	if m := <-got; m.(*jsonrpc.Response).ID != sdkID {
		t.Fatalf("the SDK read %#v, want the late answer dropped", m)
	}
}

// TestOwnCallConnectionEnds: a call in flight when reading ends, and one
// made after, fail with mcp.ErrConnectionClosed (which callError reports
// as the server's exit during the call); the connection's forget runs
// once.
func TestOwnCallConnectionEnds(t *testing.T) {
	p := newPipeConn()
	c := newRawConn(p)
	forgot := make(chan struct{}, 2)
	c.whenEnded(func() { forgot <- struct{}{} })
	_, done := reading(c)
	errc := make(chan error, 1)
	go func() {
		_, err := c.call(context.Background(), mcpmethod.ToolsCall, json.RawMessage(`{}`))
		errc <- err
	}()
	p.next(t)
	_ = p.Close()
	if err := <-errc; !errors.Is(err, mcp.ErrConnectionClosed) {
		t.Fatalf("call in flight = %v, want mcp.ErrConnectionClosed", err)
	}
	<-done
	if _, err := c.call(context.Background(), mcpmethod.ToolsCall, json.RawMessage(`{}`)); !errors.Is(err, mcp.ErrConnectionClosed) {
		t.Fatalf("call after the end = %v, want mcp.ErrConnectionClosed", err)
	}
	<-forgot
	select {
	case <-forgot:
		t.Fatal("forget ran twice")
	default:
	}
	c.whenEnded(func() { forgot <- struct{}{} })
	select {
	case <-forgot: // at once, on this goroutine
	default:
		t.Fatal("whenEnded after the end did not run forget at once")
	}
}

// TestToolsCallSentByTheAdapter: over stdio, each tools/call of the
// shared session is the adapter's own request, and the session's
// connection is forgotten once the server has gone.
func TestToolsCallSentByTheAdapter(t *testing.T) {
	r := start(t, notesLaunch(t), Options{})
	load(t, r.Adapter)
	for range 3 {
		stats(t, r.Adapter)
	}
	cs := r.cs.Load()
	v, ok := r.conns.Load(cs)
	if !ok {
		t.Fatal("the shared session's connection is not kept")
	}
	rc := v.(*rawConn)
	rc.mu.Lock()
	sent := rc.next
	rc.mu.Unlock()
	if sent != 3 {
		t.Fatalf("the adapter sent %d tools/call of its own, want 3", sent)
	}
	r.Kill()
	select {
	case <-rc.end:
	case <-time.After(bound):
		t.Fatal("reading did not end after Kill")
	}
	testkit.Eventually(t, bound, "the ended session's connection forgotten", func() bool {
		_, ok := r.conns.Load(cs)
		return !ok
	})
}

// TestCallParams: the params are valid JSON whatever the name, with the
// arguments as they came and _meta only when there is one.
func TestCallParams(t *testing.T) {
	for _, name := range []string{"plain_name-1", `quo"te`, `back\slash`, "new\nline", "ünïcode", "<&>"} {
		for _, meta := range []mcp.Meta{nil, {"progressToken": "opentool-host/1"}} {
			b, err := callParams(&mcp.CallToolParams{Name: name, Meta: meta, Arguments: json.RawMessage(`{"n":12345678901234567890}`)})
			if err != nil {
				t.Fatal(err)
			}
			var got struct {
				Meta      map[string]any  `json:"_meta"`
				Name      string          `json:"name"`
				Arguments json.RawMessage `json:"arguments"`
			}
			if err := json.Unmarshal(b, &got); err != nil || got.Name != name || string(got.Arguments) != `{"n":12345678901234567890}` || len(got.Meta) != len(meta) {
				t.Fatalf("callParams(%q, %v) = %s (%v)", name, meta, b, err)
			}
		}
	}
}
