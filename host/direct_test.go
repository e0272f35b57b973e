package host_test

import (
	"context"
	"encoding/json"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/modelcontextprotocol/go-sdk/mcp"

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
	calls   atomic.Int64
}

// CallDirect implements supervise.Direct: "probe" answers p.result,
// "wait" waits for its context's end.
func (p *directProbe) CallDirect(ctx context.Context, x *core.Exchange, name string, _ []byte) (supervise.DirectResult, error) {
	p.calls.Add(1)
	if x != nil {
		p.gotCall.Store(x)
	}
	if name == "wait" {
		<-ctx.Done()
		return supervise.DirectResult{}, &wire.ToolError{Code: 500, Message: ctx.Err().Error()}
	}
	return supervise.DirectResult{MCP: p.result}, nil
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
	dir := t.TempDir()
	writeFile(t, dir, "probe.mcp.json", `{"mcpServers":{"probe":{"url":"http://127.0.0.1:1/mcp"}}}`)
	p := &directProbe{result: &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "t"}}, StructuredContent: map[string]any{"n": 1.0}}}
	tk := pluginsdk.NewToolkit(opentool.Info{Title: "probe", Version: "1"}).Add(
		pluginsdk.Func("probe", "Probes.", func(context.Context, struct{}) (map[string]any, error) { return nil, errors.New("not direct") }),
		pluginsdk.Func("wait", "Waits.", func(context.Context, struct{}) (map[string]any, error) { return nil, errors.New("not direct") }),
		pluginsdk.StreamFunc("items", "Streams.", func(_ context.Context, _ struct{}, send func(map[string]any) error) error {
			return send(map[string]any{"i": 1})
		}),
	)
	p.Local = pluginsdk.Local(tk)
	h := startHost(t, dir, func(c *core.Config) {
		c.Declared = func(decl.Launch, *launcher.Starter, hclog.Logger) wire.Local { return p }
		c.CallTimeout = 200 * time.Millisecond
	})
	waitFunction(t, h, "probe", true)

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
