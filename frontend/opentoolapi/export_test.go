package opentoolapi_test

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/opentool-host/opentool-host/frontend/opentoolapi"
	"github.com/opentool-host/opentool-host/protocol/opentool"
)

// TestExportEndToEnd reads GET /opentool/export from a real host serving
// the mock and calculator plugins.
func TestExportEndToEnd(t *testing.T) {
	base := startPluginsAPI(t, "calculator", "mock")

	// One function per format, exactly.
	wantAdd := map[string]string{
		"openai":      `{"type":"function","name":"add","description":"Add two numbers: a + b.","parameters":{"additionalProperties":false,"properties":{"a":{"description":"First operand","type":"number"},"b":{"description":"Second operand","type":"number"}},"required":["a","b"],"type":"object"},"strict":false}`,
		"openai-chat": `{"type":"function","function":{"name":"add","description":"Add two numbers: a + b.","parameters":{"additionalProperties":false,"properties":{"a":{"description":"First operand","type":"number"},"b":{"description":"Second operand","type":"number"}},"required":["a","b"],"type":"object"},"strict":false}}`,
		"anthropic":   `{"name":"add","description":"Add two numbers: a + b.","input_schema":{"additionalProperties":false,"properties":{"a":{"description":"First operand","type":"number"},"b":{"description":"Second operand","type":"number"}},"required":["a","b"],"type":"object"}}`,
	}
	for format, want := range wantAdd {
		status, h, body := getBody(t, base+"/opentool/export?format="+format)
		if status != http.StatusOK || h.Get("Content-Type") != "application/json" {
			t.Fatalf("%s: HTTP %d %s: %s", format, status, h.Get("Content-Type"), body)
		}
		var tools []json.RawMessage
		if err := json.Unmarshal([]byte(body), &tools); err != nil {
			t.Fatalf("%s: not an array: %v\n%s", format, err, body)
		}
		if len(tools) != 11 { // 4 calculator + 7 mock functions
			t.Fatalf("%s: %d tools, want 11", format, len(tools))
		}
		if got := string(tools[0]); got != want {
			t.Errorf("%s add:\n got %s\nwant %s", format, got, want)
		}
	}

	// Deferred loading (Anthropic's tool search): the search tool first,
	// then every tool marked defer_loading; the same with OpenAI's
	// tool_search; refused for Chat Completions.
	st, _, db := getBody(t, base+"/opentool/export?format=anthropic&defer_loading=true")
	var deferred []map[string]any
	if err := json.Unmarshal([]byte(db), &deferred); st != http.StatusOK || err != nil || len(deferred) != 12 ||
		deferred[0]["type"] != "tool_search_tool_bm25_20251119" || deferred[1]["defer_loading"] != true {
		t.Fatalf("defer_loading: HTTP %d: %s", st, db)
	}
	st, _, db = getBody(t, base+"/opentool/export?format=openai&defer_loading=true")
	deferred = nil
	if err := json.Unmarshal([]byte(db), &deferred); st != http.StatusOK || err != nil || len(deferred) != 12 ||
		deferred[0]["type"] != "tool_search" || deferred[1]["defer_loading"] != true {
		t.Fatalf("defer_loading with openai: HTTP %d: %s", st, db)
	}
	if status, _, body := getBody(t, base+"/opentool/export?format=openai-chat&defer_loading=true"); status != http.StatusBadRequest {
		t.Errorf("defer_loading with openai-chat: HTTP %d %s, want 400", status, body)
	}

	// Strict: every object closed; the mock's $refs inlined.
	status, h, body := getBody(t, base+"/opentool/export?format=openai&strict=true")
	if status != http.StatusOK || len(h.Values(opentoolapi.StrictIssueHeader)) != 0 {
		t.Fatalf("strict: HTTP %d issues %q: %s", status, h.Values(opentoolapi.StrictIssueHeader), body)
	}
	var tools []map[string]any
	if err := json.Unmarshal([]byte(body), &tools); err != nil {
		t.Fatal(err)
	}
	for _, tool := range tools {
		params := tool["parameters"].(map[string]any)
		if tool["strict"] != true || params["additionalProperties"] != false {
			t.Errorf("tool %v is not strict", tool["name"])
		}
	}
	if !strings.Contains(body, `{"type":"function","name":"read","description":"Read text from storage by id","parameters":{"additionalProperties":false,"properties":{"id":{"description":"Text Id in storage","type":"integer"}},"required":["id"],"type":"object"},"strict":true}`) {
		t.Errorf("strict read not as expected: %s", body)
	}

	// opentool: the aggregated document.
	status, _, body = getBody(t, base+"/opentool/export?format=opentool")
	doc, err := opentool.Parse([]byte(body))
	if status != http.StatusOK || err != nil || len(doc.Functions) != 11 {
		t.Fatalf("opentool: HTTP %d, parse %v: %s", status, err, body)
	}

	// Bad requests.
	for _, tc := range []struct{ query, want string }{
		{"format=gemini", `unknown format \"gemini\": use openai, openai-chat, anthropic or opentool`},
		{"", `no format given`},
		{"format=openai&strict=maybe", `strict must be true or false, got \"maybe\"`},
		{"format=anthropic&strict=1", `strict=true applies only to format openai and openai-chat, not anthropic`},
	} {
		status, h, body := getBody(t, base+"/opentool/export?"+tc.query)
		if status != http.StatusBadRequest || h.Get("Content-Type") != "application/json" ||
			!strings.HasPrefix(body, `{"error":{"code":400,"message":"`) || !strings.Contains(body, tc.want) {
			t.Errorf("?%s: HTTP %d %s, want 400 mentioning %s", tc.query, status, body, tc.want)
		}
	}
}
