package opentoolapi_test

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/opentool-host/opentool-host/frontend/opentoolapi"
)

// These tests send the exact bytes the reference OpenTool clients (Dart,
// TypeScript, Java, C#) send and check the exact bytes they read back.

func TestWireReferenceClientRequests(t *testing.T) {
	base := startMockAPI(t, opentoolapi.Config{})
	call := base + "/opentool/call"

	t.Run("dart count", func(t *testing.T) {
		const id = "0b7c6a52-6f3e-4a0a-9d36-2f0e8f9b1c44"
		st, h, body := rawRequest(t, http.MethodPost, call,
			`{"jsonrpc":"2.0","method":"count","params":{},"id":"`+id+`"}`,
			"Content-Type: application/json; charset=utf-8", "Accept: application/json")
		wantResponse(t, "count", st, body, http.StatusOK, `{"jsonrpc":"2.0","result":{"count":2},"id":"`+id+`"}`)
		if ct := h.Get("Content-Type"); ct != "application/json" {
			t.Errorf("Content-Type %q, want application/json", ct)
		}
	})
	t.Run("jsonrpc 2.0.0", func(t *testing.T) {
		st, _, body := postJSON(t, call, `{"jsonrpc":"2.0.0","method":"count","params":{},"id":"callId-0"}`)
		wantResponse(t, "jsonrpc 2.0.0", st, body, http.StatusOK, `{"jsonrpc":"2.0","result":{"count":2},"id":"callId-0"}`)
	})
	t.Run("params missing", func(t *testing.T) {
		st, _, body := postJSON(t, call, `{"jsonrpc":"2.0","method":"count","id":"p"}`)
		wantResponse(t, "no params", st, body, http.StatusOK, `{"jsonrpc":"2.0","result":{"count":2},"id":"p"}`)
	})
	t.Run("params null", func(t *testing.T) {
		st, _, body := postJSON(t, call, `{"jsonrpc":"2.0","method":"count","params":null,"id":"p"}`)
		wantResponse(t, "null params", st, body, http.StatusOK, `{"jsonrpc":"2.0","result":{"count":2},"id":"p"}`)
	})
	t.Run("numeric id echoed", func(t *testing.T) {
		st, _, body := postJSON(t, call, `{"jsonrpc":"2.0","method":"count","params":{},"id":42}`)
		wantResponse(t, "id 42", st, body, http.StatusOK, `{"jsonrpc":"2.0","result":{"count":2},"id":42}`)
	})
	t.Run("no content type", func(t *testing.T) {
		st, _, body := rawRequest(t, http.MethodPost, call, `{"jsonrpc":"2.0","method":"count","id":"n"}`)
		wantResponse(t, "no Content-Type", st, body, http.StatusOK, `{"jsonrpc":"2.0","result":{"count":2},"id":"n"}`)
	})
	t.Run("read with arguments", func(t *testing.T) {
		st, _, body := postJSON(t, call, `{"jsonrpc":"2.0","method":"read","params":{"id":1},"id":"r"}`)
		wantResponse(t, "read", st, body, http.StatusOK, `{"jsonrpc":"2.0","result":{"text":"World"},"id":"r"}`)
	})
	t.Run("tool error", func(t *testing.T) {
		st, _, body := postJSON(t, call, `{"jsonrpc":"2.0","method":"run","params":{},"id":"run-1"}`)
		wantResponse(t, "run", st, body, http.StatusOK,
			`{"jsonrpc":"2.0","result":{},"error":{"code":500,"message":"run failed: the mock tool's run always fails"},"id":"run-1"}`)
	})
	t.Run("tool invalid arguments", func(t *testing.T) {
		st, _, body := postJSON(t, call, `{"jsonrpc":"2.0","method":"read","params":{"id":9},"id":"r9"}`)
		wantResponse(t, "read 9", st, body, http.StatusOK,
			`{"jsonrpc":"2.0","result":{},"error":{"code":400,"message":"id 9 is out of range: the storage holds 2 texts (ids 0 to 1)"},"id":"r9"}`)
	})
	t.Run("unknown function", func(t *testing.T) {
		st, _, body := postJSON(t, call, `{"jsonrpc":"2.0","method":"nope","params":{},"id":"u"}`)
		wantResponse(t, "nope", st, body, http.StatusOK,
			`{"jsonrpc":"2.0","result":{},"error":{"code":-32601,"message":"method not found: function \"nope\" is not served"},"id":"u"}`)
	})
	t.Run("streaming function on call", func(t *testing.T) {
		st, _, body := postJSON(t, call, `{"jsonrpc":"2.0","method":"sequentiallyRead","params":{},"id":"s"}`)
		wantResponse(t, "sequentiallyRead on /call", st, body, http.StatusOK,
			`{"jsonrpc":"2.0","result":{},"error":{"code":-32600,"message":"invalid request: wrong call kind: function \"sequentiallyRead\" streams; use streamCall"},"id":"s"}`)
	})
	t.Run("parse error", func(t *testing.T) {
		st, _, body := postJSON(t, call, `{"jsonrpc":"2.0","method":`)
		if st != http.StatusBadRequest {
			t.Errorf("HTTP %d, want 400: %s", st, body)
		}
		var resp struct {
			Result map[string]any `json:"result"`
			Error  struct {
				Code    int    `json:"code"`
				Message string `json:"message"`
			} `json:"error"`
			ID any `json:"id"`
		}
		if err := json.Unmarshal([]byte(body), &resp); err != nil {
			t.Fatalf("body %s: %v", body, err)
		}
		if resp.Error.Code != -32700 || !strings.HasPrefix(resp.Error.Message, "parse error: ") || resp.ID != nil || resp.Result == nil {
			t.Errorf("parse error body %s, want code -32700, a \"parse error: \" message, result {} and id null", body)
		}
	})
	t.Run("not a request", func(t *testing.T) {
		st, _, body := postJSON(t, call, `{"jsonrpc":"2.0","params":{},"id":"m"}`)
		wantResponse(t, "no method", st, body, http.StatusBadRequest,
			`{"jsonrpc":"2.0","result":{},"error":{"code":-32600,"message":"invalid request: \"method\" is required"},"id":"m"}`)
	})
}

func TestWireVersionAndLoad(t *testing.T) {
	base := startMockAPI(t, opentoolapi.Config{Version: "9.8.7"})

	st, h, body := rawRequest(t, http.MethodGet, base+"/opentool/version", "")
	wantResponse(t, "version", st, body, http.StatusOK, `{"version":"9.8.7"}`)
	if ct := h.Get("Content-Type"); ct != "application/json" {
		t.Errorf("version Content-Type %q", ct)
	}

	st, _, body = rawRequest(t, http.MethodGet, base+"/opentool/load", "")
	if st != http.StatusOK {
		t.Fatalf("load: HTTP %d %s", st, body)
	}
	if strings.Contains(body, `"$ref"`) {
		t.Errorf("load serves $refs; want them inlined: %s", body)
	}
	if strings.Contains(body, `"return":null`) {
		t.Errorf("load serves \"return\":null; want it left out: %s", body)
	}
	var doc struct {
		OpenTool  string `json:"opentool"`
		Functions []struct {
			Name   string          `json:"name"`
			Return json.RawMessage `json:"return"`
		} `json:"functions"`
	}
	if err := json.Unmarshal([]byte(body), &doc); err != nil {
		t.Fatalf("load body: %v", err)
	}
	var names []string
	for _, f := range doc.Functions {
		names = append(names, f.Name)
	}
	if got := strings.Join(names, ","); got != "count,create,read,sequentiallyRead,update,delete,run" {
		t.Errorf("functions %s", got)
	}
	if !strings.Contains(string(doc.Functions[0].Return), `"type":"integer"`) {
		t.Errorf("count's return %s, want the inlined Count schema", doc.Functions[0].Return)
	}
}
