package mcpapi

import (
	"bytes"
	"encoding/json"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/opentool-host/opentool-host/host"
	"github.com/opentool-host/opentool-host/host/core"
	"github.com/opentool-host/opentool-host/testkit"
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

// TestMCPResultTakesDecoded: a plugin's MCP result that an in-process
// plugin decoded itself (host.Result.Decoded: a declared MCP server's,
// by the SDK's client) is answered as that decoding, with no allocation
// and without decoding its JSON again (here JSON that would not
// decode); without one, the JSON is decoded, and one that does not decode
// is a result_rejected isError result. Before, every MCP result's JSON
// was decoded again (about 10 allocations per tools/call of a declared
// server).
func TestMCPResultTakesDecoded(t *testing.T) {
	s := &Server{}
	s.cfg.Logger = testkit.Logger(t)
	decoded := &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "hi"}}}
	got, err := s.mcpResult("t", host.Result{JSON: []byte(`not JSON`), MCP: true, Decoded: decoded}, nil)
	if err != nil || got != decoded {
		t.Fatalf("with Decoded: %p, %v; want the decoded result %p itself", got, err, decoded)
	}
	res := host.Result{JSON: []byte(`{}`), MCP: true, Decoded: decoded}
	if n := testing.AllocsPerRun(100, func() { _, _ = s.mcpResult("t", res, nil) }); n != 0 {
		t.Errorf("with Decoded: %v allocations, want 0", n)
	}
	empty, err := s.mcpResult("t", host.Result{MCP: true, Decoded: &mcp.CallToolResult{}}, nil)
	if err != nil || empty.Content == nil {
		t.Errorf("a decoded result without content: content %#v, %v; want [] (not null)", empty.Content, err)
	}
	got, err = s.mcpResult("t", host.Result{JSON: []byte(`{"content":[{"type":"text","text":"from JSON"}]}`), MCP: true}, nil)
	if tc, ok := got.Content[0].(*mcp.TextContent); err != nil || !ok || tc.Text != "from JSON" {
		t.Errorf("without Decoded: %+v, %v; want the JSON's result", got, err)
	}
	bad, err := s.mcpResult("t", host.Result{JSON: []byte(`{"content":7}`), MCP: true}, nil)
	if err != nil || !bad.IsError || bad.Meta[ErrorMetaKey].(map[string]any)["kind"] != core.KindResultRejected {
		t.Errorf("JSON that does not decode: %+v, %v; want a result_rejected isError result", bad, err)
	}
}
