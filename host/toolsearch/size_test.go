package toolsearch_test

import (
	"encoding/json"
	"testing"

	"github.com/pkoukk/tiktoken-go"
	tiktoken_loader "github.com/pkoukk/tiktoken-go-loader"

	"github.com/opentool-host/opentool-host/host/toolsearch"
)

// listSize returns the bytes of an MCP tools/list result holding tools
// (name, description, inputSchema, outputSchema: the plugin a tool is of
// is not listed), and its tokens in o200k_base (the encoding of OpenAI's
// current models; tiktoken-go with its offline loader, no download).
func listSize(t *testing.T, tools []toolsearch.Tool) (int, int) {
	t.Helper()
	listed := make([]toolsearch.Tool, len(tools))
	for i, tl := range tools {
		listed[i] = tl
		listed[i].Plugin = ""
	}
	b, err := json.Marshal(map[string]any{"tools": listed})
	if err != nil {
		t.Fatal(err)
	}
	tiktoken.SetBpeLoader(tiktoken_loader.NewOfflineLoader())
	enc, err := tiktoken.GetEncoding("o200k_base")
	if err != nil {
		t.Fatal(err)
	}
	return len(b), len(enc.Encode(string(b), nil, nil))
}

// TestMetaToolsSaveContext reports what a model is sent for the test
// catalog with and without the search meta-tools, and checks the meta
// tools are valid JSON Schemas small enough to be worth it (under 5% of
// the catalog's tokens).
func TestMetaToolsSaveContext(t *testing.T) {
	catBytes, catTokens := listSize(t, catalog(t))
	metaBytes, metaTokens := listSize(t, toolsearch.MetaTools())
	t.Logf("tools/list of the %d-tool catalog: %d bytes, %d tokens (o200k_base); search_tools + call_tool alone: %d bytes, %d tokens (%.1f%%)",
		len(catalog(t)), catBytes, catTokens, metaBytes, metaTokens, 100*float64(metaTokens)/float64(catTokens))
	if metaTokens*20 > catTokens {
		t.Errorf("the meta-tools cost %d tokens, over 5%% of the catalog's %d", metaTokens, catTokens)
	}
	for _, mt := range toolsearch.MetaTools() {
		var s map[string]any
		if err := json.Unmarshal(mt.InputSchema, &s); err != nil || s["type"] != "object" {
			t.Errorf("%s: input schema %s: %v", mt.Name, mt.InputSchema, err)
		}
	}
}
