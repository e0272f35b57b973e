package host_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"sync"
	"testing"

	"github.com/opentool-host/opentool-host/host/access"
	"github.com/opentool-host/opentool-host/host/core"
	"github.com/opentool-host/opentool-host/testkit"
)

// TestToolSearchFunctions: with Config.ToolSearch the host serves
// search_tools and call_tool itself (first in Functions and Document,
// marked Builtin); call_tool is the named function's one call (one
// OnCall record under its name, its key check, its validation), a
// streaming function's items collected; search_tools finds only what the
// key may call.
func TestToolSearchFunctions(t *testing.T) {
	dir := t.TempDir()
	testkit.InstallPlugin(t, dir, "calc", "./plugins/calculator")
	testkit.InstallPlugin(t, dir, "mock", "./plugins/mock")
	var (
		mu   sync.Mutex
		recs []core.CallRecord
	)
	h := startHost(t, dir, func(c *core.Config) {
		c.ToolSearch, c.ToolSearchThreshold = true, 3
		c.OnCall = func(_ context.Context, r core.CallRecord) {
			mu.Lock()
			recs = append(recs, r)
			mu.Unlock()
		}
	})
	fis := h.Functions()
	if len(fis) != 13 || fis[0].Function.Name != "search_tools" || fis[1].Function.Name != "call_tool" || !fis[0].Builtin || !fis[1].Builtin || fis[2].Builtin || fis[0].Plugin != "" {
		t.Fatalf("Functions: %d, first %+v %+v", len(fis), fis[0], fis[1])
	}
	if doc := h.Document("t", "1", ""); doc.Functions[1].Name != "call_tool" || h.Function("call_tool") == nil || h.ToolSearchThreshold() != 3 {
		t.Errorf("Document, Function, ToolSearchThreshold do not have the host's own")
	}
	if f := h.Function("search_tools"); f.Annotations == nil || f.Annotations.ReadOnlyHint == nil || !*f.Annotations.ReadOnlyHint || f.Return == nil || len(f.Parameters) != 2 {
		t.Errorf("search_tools: %+v", f)
	}

	// A key that may call subtract alone.
	sub := access.WithGrant(context.Background(), access.NewGrant("sub", []string{"subtract", "sequentiallyRead"}))
	res, err := h.Call(sub, "search_tools", []byte(`{"query":"add two numbers or subtract"}`))
	if err != nil || !strings.HasPrefix(string(res), `{"tools":[{"name":"subtract"`) || strings.Contains(string(res), `"add"`) {
		t.Errorf("search_tools for sub: %s %v", res, err)
	}
	mu.Lock()
	recs = nil
	mu.Unlock()
	res, err = h.Call(sub, "call_tool", []byte(`{"name":"subtract","arguments":{"a":5,"b":3}}`))
	if err != nil || string(res) != `{"result":2}` {
		t.Errorf("call_tool subtract: %s %v", res, err)
	}
	_, err = h.Call(sub, "call_tool", []byte(`{"name":"add","arguments":{"a":5,"b":3}}`))
	if e := core.AsError(err); e == nil || e.Kind != core.KindNotFound || e.Function != "add" || e.Message != `function "add" is not served` {
		t.Errorf("call_tool of a function the key may not call: %v", err)
	}
	_, err = h.Call(sub, "call_tool", []byte(`{"name":"subtract","arguments":{"a":"x","b":3}}`))
	if e := core.AsError(err); e == nil || e.Kind != core.KindInvalidParams || e.Plugin != "calc" || e.Function != "subtract" {
		t.Errorf("call_tool with arguments subtract refuses: %v", err)
	}
	_, err = h.Call(sub, "call_tool", []byte(`{"arguments":{}}`))
	if e := core.AsError(err); e == nil || e.Kind != core.KindInvalidParams || e.Function != "call_tool" || !strings.Contains(e.Message, "name") {
		t.Errorf("call_tool without a name: %v", err)
	}
	mu.Lock()
	var got []string
	for _, r := range recs {
		got = append(got, r.Function+"/"+r.Plugin+"/"+string(r.Kind))
	}
	mu.Unlock()
	if want := "subtract/calc/,add//not_found,subtract/calc/invalid_params,call_tool//invalid_params"; strings.Join(got, ",") != want {
		t.Errorf("OnCall records %s, want %s", strings.Join(got, ","), want)
	}

	// A streaming function through call_tool: its items, collected.
	call(t, h, "create", `{"text":"one"}`)
	call(t, h, "create", `{"text":"two"}`)
	res, err = h.Call(context.Background(), "call_tool", []byte(`{"name":"sequentiallyRead"}`))
	if err != nil || !strings.HasSuffix(string(res), `{"data":"one"},{"data":"two"}]}`) || !strings.HasPrefix(string(res), `{"items":[`) {
		t.Errorf("call_tool sequentiallyRead: %s %v", res, err)
	}
	// Neither streams, and call_tool does not call the host's own.
	err = h.StreamCall(context.Background(), nil, "call_tool", []byte(`{"name":"sequentiallyRead"}`), func([]byte) error { return nil })
	if !errors.Is(err, core.KindWrongKind) {
		t.Errorf("StreamCall call_tool: %v", err)
	}
	_, err = h.Call(context.Background(), "call_tool", []byte(`{"name":"search_tools","arguments":{"query":"x"}}`))
	if !errors.Is(err, core.KindInvalidParams) {
		t.Errorf("call_tool search_tools: %v", err)
	}
	var out struct {
		Tools []json.RawMessage `json:"tools"`
	}
	res, _ = h.Call(context.Background(), "search_tools", []byte(`{"query":"storage text","limit":50}`))
	if err := json.Unmarshal(res, &out); err != nil || len(out.Tools) < 5 {
		t.Errorf("search_tools with limit 50: %s", res)
	}
	if _, err := h.Call(context.Background(), "search_tools", []byte(`{"query":"   "}`)); !errors.Is(err, core.KindInvalidParams) {
		t.Errorf("a blank query: %v", err)
	}
}
