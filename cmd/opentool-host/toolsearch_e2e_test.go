package main_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/opentool-host/opentool-host/internal/testutil"
)

// TestToolSearchOverMCP (issue 25): with --tool-search and a threshold
// below the catalog's size, tools/list gives only search_tools and
// call_tool; search_tools finds a tool from what a user wants to do, only
// among the tools the key may call; call_tool calls it through the usual
// call path (a tool the key may not call is not found).
func TestToolSearchOverMCP(t *testing.T) {
	dir := t.TempDir()
	for _, p := range []string{"calculator", "mock"} {
		testutil.InstallPlugin(t, dir, p, "./plugins/"+p)
	}
	keys := filepath.Join(t.TempDir(), "keys.json")
	if err := os.WriteFile(keys, []byte(`{"keys":[{"name":"all","key":"k-all","allow":["*"]},{"name":"sub","key":"k-sub","allow":["subtract","count"]}]}`), 0o600); err != nil {
		t.Fatal(err)
	}
	hp := startHostProc(t, dir, "--api-keys-file", keys, "--tool-search", "--tool-search-threshold", "3")
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()

	all := connectMCP(t, hp.url, "k-all")
	lt, err := all.ListTools(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, tl := range lt.Tools {
		names = append(names, tl.Name)
	}
	if strings.Join(names, ",") != "call_tool,search_tools" && strings.Join(names, ",") != "search_tools,call_tool" {
		t.Fatalf("tools/list over the threshold = %v, want the two meta-tools", names)
	}
	search := func(cs *mcp.ClientSession, q string) []string {
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "search_tools", Arguments: map[string]any{"query": q, "limit": 3}})
		if err != nil || res.IsError {
			t.Fatalf("search %q: %v %+v", q, err, res)
		}
		b, _ := json.Marshal(res.StructuredContent)
		var out struct {
			Tools []struct {
				Name        string          `json:"name"`
				InputSchema json.RawMessage `json:"inputSchema"`
			} `json:"tools"`
		}
		if err := json.Unmarshal(b, &out); err != nil {
			t.Fatalf("search %q: %s", q, b)
		}
		var got []string
		for _, tl := range out.Tools {
			got = append(got, tl.Name)
			if len(tl.InputSchema) == 0 {
				t.Errorf("search %q: %s without inputSchema", q, tl.Name)
			}
		}
		return got
	}
	if got := search(all, "sum of two numbers"); len(got) == 0 || got[0] != "add" {
		t.Errorf("search 'sum of two numbers' = %v, want add first", got)
	}
	res, err := all.CallTool(ctx, &mcp.CallToolParams{Name: "call_tool", Arguments: map[string]any{"name": "add", "arguments": map[string]any{"a": 2, "b": 3}}})
	if err != nil || res.IsError || !strings.Contains(mustJSON(t, res.StructuredContent), "5") {
		t.Fatalf("call_tool add: %v %+v", err, res)
	}

	sub := connectMCP(t, hp.url, "k-sub")
	if lt, err := sub.ListTools(ctx, nil); err != nil || len(lt.Tools) != 4 {
		t.Fatalf("a key with 2 tools (under the threshold) lists %d tools, want its 2 and the 2 meta-tools: %v", len(lt.Tools), err)
	}
	if got := search(sub, "sum of two numbers"); strings.Contains(strings.Join(got, ","), "add") {
		t.Errorf("the restricted key found add: %v", got)
	}
	res, err = sub.CallTool(ctx, &mcp.CallToolParams{Name: "call_tool", Arguments: map[string]any{"name": "add", "arguments": map[string]any{"a": 2, "b": 3}}})
	if err == nil && !res.IsError {
		t.Fatalf("the restricted key called add through call_tool: %+v", res)
	}
}

// mustJSON is v as JSON.
func mustJSON(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
