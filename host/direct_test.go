package host_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/opentool-host/opentool-host/host"
	"github.com/opentool-host/opentool-host/host/core"
	"github.com/opentool-host/opentool-host/host/supervise"
	"github.com/opentool-host/opentool-host/internal/wire"
	"github.com/opentool-host/opentool-host/pluginsdk"
	"github.com/opentool-host/opentool-host/process/launcher"
	"github.com/opentool-host/opentool-host/protocol/decl"
	"github.com/opentool-host/opentool-host/protocol/opentool"
)

// directProbe is a declared plugin served in the host's process whose
// unary calls the host makes itself (supervise.Direct): it records the
// Exchange a call got, and returns an
// MCP result it decoded itself. Its document (and its streaming
// function, which still goes through the wire) is a Toolkit's.
type directProbe struct {
	wire.Local
	gotCall atomic.Pointer[core.Exchange]
	result  *mcp.CallToolResult
	// json is what "json" answers: an MCP result's JSON (MCPJSON).
	json  atomic.Pointer[[]byte]
	calls atomic.Int64
	// deadline is the deadline the last call's context had.
	deadline atomic.Pointer[time.Time]
	// started gets the context of each "wait" and "ignore" call once it
	// runs; killed is closed by Kill (an "ignore" call ends then).
	started  chan context.Context
	killOnce sync.Once
	killed   chan struct{}
}

// Kill implements wire.Local: it ends "ignore" calls, as the end of a
// killed server's program would.
func (p *directProbe) Kill() {
	p.killOnce.Do(func() { close(p.killed) })
	p.Local.Kill()
}

// CallDirect implements supervise.Direct: "probe" answers p.result,
// "json" p.json,
// "wait" waits for its context's end, "ignore" ignores it until Kill.
func (p *directProbe) CallDirect(ctx context.Context, x *core.Exchange, name string, _ []byte) (supervise.DirectResult, error) {
	p.calls.Add(1)
	if x != nil {
		p.gotCall.Store(x)
	}
	if d, ok := ctx.Deadline(); ok {
		p.deadline.Store(&d)
	}
	switch name {
	case "wait":
		p.tell(ctx)
		<-ctx.Done()
		return supervise.DirectResult{}, &wire.ToolError{Code: 500, Message: ctx.Err().Error()}
	case "ignore":
		p.tell(ctx)
		<-p.killed
		return supervise.DirectResult{}, &wire.ToolError{Code: 500, Message: "killed", Exited: true}
	case "json":
		return supervise.DirectResult{MCPJSON: *p.json.Load()}, nil
	}
	return supervise.DirectResult{MCP: p.result}, nil
}

// tell hands ctx to p.started when a test waits for it.
func (p *directProbe) tell(ctx context.Context) {
	if p.started != nil {
		p.started <- ctx
	}
}

// RequestDirect implements supervise.Direct: it serves no catalog.
func (p *directProbe) RequestDirect(context.Context, *core.Exchange, string, []byte) ([]byte, error) {
	return nil, &wire.RPCError{Code: wire.CodeMethodNotFound, Message: "no catalog"}
}

// TestDirectCallTakesTheExchange: a unary call of a declared plugin that
// is a supervise.Direct is its CallDirect with the caller's Exchange
// itself (the pointer the caller passed to CallResult, never one from
// the context), its MCP result reaching the caller as that value
// (Result.Decoded, no bytes) and OpenTool callers as its projection
// (Call); the call's timeout ends its context; a streaming call goes
// through the plugin's wire.Local, not CallDirect.
func TestDirectCallTakesTheExchange(t *testing.T) {
	p, h := startDirectProbe(t, func(c *core.Config) { c.CallTimeout = 200 * time.Millisecond })

	x := &core.Exchange{Meta: []byte(`{}`)}
	res, err := h.CallResult(context.Background(), x, "probe", nil)
	if err != nil || !res.MCP || res.Decoded != p.result || res.JSON != nil {
		t.Fatalf("CallResult = %+v, %v; want the plugin's own result, no bytes", res, err)
	}
	if got := p.gotCall.Load(); got != x {
		t.Fatalf("CallDirect got Exchange %p; want the caller's %p", got, x)
	}
	obj, err := h.Call(context.Background(), "probe", nil)
	if err != nil || string(obj) != `{"n":1}` {
		t.Fatalf("Call = %s, %v; want the projection {\"n\":1}", obj, err)
	}
	start := time.Now()
	_, err = h.CallResult(context.Background(), x, "wait", nil)
	if e := core.AsError(err); e == nil || e.Kind != core.KindTimeout || time.Since(start) > 5*time.Second {
		t.Fatalf("wait = %v after %v; want a timeout at the call's timeout", err, time.Since(start))
	}

	before := p.calls.Load()
	var items []string
	if err := h.StreamCall(context.Background(), x, "items", nil, func(b []byte) error { items = append(items, string(b)); return nil }); err != nil || len(items) != 1 {
		t.Fatalf("StreamCall = %v, %v", items, err)
	}
	if p.calls.Load() != before {
		t.Fatal("a streaming call went to CallDirect")
	}
	var m map[string]any
	if json.Unmarshal([]byte(items[0]), &m) != nil || m["i"] != 1.0 {
		t.Fatalf("item = %s", items[0])
	}
}

// TestDirectCallTakesMCPJSON: a Direct plugin's MCP result given as JSON
// (DirectResult.MCPJSON) is taken as a plugin process's MCP result is:
// the caller of CallResult gets those bytes (Result.JSON, MCP, nothing
// decoded), OpenTool callers its projection; one that is not a JSON
// object, or longer than MaxResultBytes, is result_rejected.
func TestDirectCallTakesMCPJSON(t *testing.T) {
	p, h := startDirectProbe(t, func(c *core.Config) { c.MaxResultBytes = 100 })
	set := func(s string) { b := []byte(s); p.json.Store(&b) }
	const plain = `{"content":[{"type":"text","text":"hi"}]}`
	set(plain)
	res, err := h.CallResult(context.Background(), nil, "json", nil)
	if err != nil || !res.MCP || !res.Plain || res.Decoded != nil || string(res.JSON) != plain {
		t.Fatalf("CallResult = %+v, %v; want the plugin's bytes %s", res, err, plain)
	}
	if obj, err := h.Call(context.Background(), "json", nil); err != nil || string(obj) != `{"content":[{"type":"text","text":"hi"}],"text":"hi"}` {
		t.Fatalf("Call = %s, %v; want the projection", obj, err)
	}
	for _, bad := range []string{`[1]`, `{"content":[`, `{"content":[{"type":"text","text":"` + strings.Repeat("x", 100) + `"}]}`} {
		set(bad)
		_, err := h.CallResult(context.Background(), nil, "json", nil)
		if e := core.AsError(err); e == nil || e.Kind != core.KindResultRejected {
			t.Errorf("CallResult of %.40s = %v; want result_rejected", bad, err)
		}
	}
}

// startDirectProbe starts a host serving a directProbe as declared
// plugin "probe" (mod changes its Config) and waits for it.
func startDirectProbe(t *testing.T, mod func(*core.Config)) (*directProbe, *host.Host) {
	t.Helper()
	dir := t.TempDir()
	writeFile(t, dir, "probe.mcp.json", `{"mcpServers":{"probe":{"url":"http://127.0.0.1:1/mcp"}}}`)
	p := &directProbe{result: &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "t"}}, StructuredContent: map[string]any{"n": 1.0}}, killed: make(chan struct{})}
	notDirect := func(context.Context, struct{}) (map[string]any, error) { return nil, errors.New("not direct") }
	tk := pluginsdk.NewToolkit(opentool.Info{Title: "probe", Version: "1"}).Add(
		pluginsdk.Func("probe", "Probes.", notDirect),
		pluginsdk.Func("wait", "Waits.", notDirect),
		pluginsdk.Func("ignore", "Ignores cancellation.", notDirect),
		pluginsdk.Func("json", "Answers JSON.", notDirect),
		pluginsdk.StreamFunc("items", "Streams.", func(_ context.Context, _ struct{}, send func(map[string]any) error) error {
			return send(map[string]any{"i": 1})
		}),
	)
	p.Local = pluginsdk.Local(tk)
	h := startHost(t, dir, func(c *core.Config) {
		c.Declared = func(decl.Launch, *launcher.Starter, hclog.Logger) wire.Local { return p }
		mod(c)
	})
	waitFunction(t, h, "probe", true)
	return p, h
}

// TestDirectCallContext: the one context of a Direct plugin's unary call
// has the call's timeout as its deadline (the caller's when earlier),
// ends when its caller leaves (KindCanceled), and a call that ignores
// its end past the cancel grace gets its plugin killed (KindTimeout,
// "was killed").
func TestDirectCallContext(t *testing.T) {
	p, h := startDirectProbe(t, func(c *core.Config) {
		c.CallTimeout = time.Hour
		c.CancelGrace = 50 * time.Millisecond
	})
	p.started = make(chan context.Context, 1)

	start := time.Now()
	if _, err := h.CallResult(context.Background(), nil, "probe", nil); err != nil {
		t.Fatal(err)
	}
	if d := p.deadline.Load(); d == nil || d.Sub(start) < 59*time.Minute || d.Sub(start) > 61*time.Minute {
		t.Fatalf("the call's deadline = %v; want its timeout, an hour from %v", d, start)
	}
	early, cancelEarly := context.WithTimeout(context.Background(), time.Minute)
	defer cancelEarly()
	if _, err := h.CallResult(early, nil, "probe", nil); err != nil {
		t.Fatal(err)
	}
	if want, _ := early.Deadline(); p.deadline.Load() == nil || !p.deadline.Load().Equal(want) {
		t.Fatalf("the call's deadline = %v; want its caller's, %v", p.deadline.Load(), want)
	}

	ctx, cancel := context.WithCancel(context.Background())
	errc := make(chan error, 1)
	go func() { _, err := h.CallResult(ctx, nil, "wait", nil); errc <- err }()
	callCtx := <-p.started
	cancel()
	<-callCtx.Done()
	if e := core.AsError(<-errc); e == nil || e.Kind != core.KindCanceled {
		t.Fatalf("canceled call = %v; want KindCanceled", e)
	}
	if callCtx.Err() != context.Canceled {
		t.Fatalf("the call's context ended with %v; want its caller's context.Canceled", callCtx.Err())
	}

	short, cancelShort := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancelShort()
	_, err := h.CallResult(short, nil, "ignore", nil)
	<-p.started
	if e := core.AsError(err); e == nil || e.Kind != core.KindTimeout || !strings.Contains(e.Message, "was killed") {
		t.Fatalf("a call ignoring its timeout = %v; want KindTimeout, the plugin killed", err)
	}
}

// TestDirectCallAllocs: a Direct plugin's unary call costs the host at
// most directCallAllocs allocations (one context for its timeout, its
// caller's end and its plugin's stop: no timeout, cancel and AfterFuncs
// of their own; the observation part of the request). 24 before the one
// context and the observation in the request.
func TestDirectCallAllocs(t *testing.T) {
	if testing.Short() || raceEnabled {
		t.Skip("allocations are counted without -race and -short")
	}
	_, h := startDirectProbe(t, func(*core.Config) {})
	x := &core.Exchange{Meta: []byte(`{}`)}
	ctx, cancel := context.WithCancel(context.Background()) // a caller that may leave, as an HTTP request's
	defer cancel()
	allocs := testing.AllocsPerRun(200, func() {
		if _, err := h.CallResult(ctx, x, "probe", nil); err != nil {
			t.Fatal(err)
		}
	})
	if allocs > directCallAllocs {
		t.Fatalf("a direct call makes %v allocations; want at most %d", allocs, directCallAllocs)
	}
}

// directCallAllocs bounds TestDirectCallAllocs.
const directCallAllocs = 14

// TestDirectCallStopped: a Direct plugin's unary call in flight when its
// plugin is stopped (the host closes, past its drain) has its context
// ended and fails.
func TestDirectCallStopped(t *testing.T) {
	p, h := startDirectProbe(t, func(c *core.Config) { c.DrainTimeout = 50 * time.Millisecond })
	p.started = make(chan context.Context, 1)
	errc := make(chan error, 1)
	go func() { _, err := h.CallResult(context.Background(), nil, "wait", nil); errc <- err }()
	callCtx := <-p.started
	closed := make(chan error, 1)
	go func() { closed <- h.Close(context.Background()) }()
	<-callCtx.Done()
	if err := <-errc; err == nil {
		t.Fatal("a call in flight when its plugin stopped succeeded")
	}
	if callCtx.Err() != context.Canceled {
		t.Fatalf("the call's context ended with %v; want context.Canceled", callCtx.Err())
	}
	<-closed
}
