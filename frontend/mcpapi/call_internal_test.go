package mcpapi

import (
	"bytes"
	"context"
	"encoding/json"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/opentool-host/opentool-host/host"
)

// TestAnswerAllocations: a successful call's answer (structuredContent
// and a text block with the same JSON) costs three allocations, the
// result with its block, the text and the structured content, not five:
// it is made for every call.
func TestAnswerAllocations(t *testing.T) {
	s := &Server{}
	obj := []byte(`{"echo":{"x":1}}`)
	res, err := s.answer("echo", obj, nil)
	if err != nil {
		t.Fatal(err)
	}
	text, ok := res.Content[0].(*mcp.TextContent)
	if len(res.Content) != 1 || !ok || text.Text != string(obj) {
		t.Fatalf("content %#v, want one text block %s", res.Content, obj)
	}
	if sc, ok := res.StructuredContent.(json.RawMessage); !ok || !bytes.Equal(sc, obj) {
		t.Fatalf("structuredContent %#v, want %s", res.StructuredContent, obj)
	}
	if n := testing.AllocsPerRun(100, func() { _, _ = s.answer("echo", obj, nil) }); n > 3 {
		t.Errorf("answer: %v allocations, want at most 3", n)
	}
}

// TestFirstRoundAddsNoContextValue: a call's first round (no retry of a
// plugin's own round) runs with the handler's context itself, one
// allocation fewer per call; a retry is carried.
func TestFirstRoundAddsNoContextValue(t *testing.T) {
	ctx := context.Background()
	if got := withRetry(ctx, nil); got != ctx {
		t.Error("withRetry(ctx, nil) is a new context, want ctx")
	}
	r := &pluginRetry{state: "s"}
	if got, _ := withRetry(ctx, r).Value(retryKey{}).(*pluginRetry); got != r {
		t.Errorf("withRetry(ctx, r) carries %v, want r", got)
	}
}

// viewSink keeps a view from the stack, as a call's context does.
var viewSink host.CallView

// TestClientViewAllocations: the view a client session's tools/call
// carries costs two allocations (the view and its function), not three
// (a lock, a map and the closure holding them): it is made for every
// call, and a call of a plugin's tool, or of a shared server's, never
// asks for a list.
func TestClientViewAllocations(t *testing.T) {
	s := &Server{}
	if n := testing.AllocsPerRun(100, func() { viewSink = s.clientView(nil) }); n > 2 {
		t.Errorf("clientView: %v allocations, want at most 2", n)
	}
}
