package mcpapi_test

import (
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/opentool-host/opentool-host/frontend/mcpapi"
)

// TestMalformedRequestsAnswerJSONRPC: every malformed request the SDK
// refuses on /mcp, stateless and with a session, is answered with a
// JSON-RPC error response (id null), not the SDK's plain text; and a
// POST of Content-Type application/json-rpc, which the host's guard
// accepts, is served.
func TestMalformedRequestsAnswerJSONRPC(t *testing.T) {
	r := newRig(t, nil, mcpapi.Config{}, "./testkit/plugins/echo")
	post := func(path, ctype, session, body string) (int, string, string) {
		t.Helper()
		req, err := http.NewRequest(http.MethodPost, r.url+path, strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Authorization", "Bearer "+apiKey)
		req.Header.Set("Content-Type", ctype)
		req.Header.Set("Accept", "application/json, text/event-stream")
		req.Header.Set("Mcp-Protocol-Version", "2025-11-25")
		if session != "" {
			req.Header.Set("Mcp-Session-Id", session)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, resp.Header.Get("Content-Type"), string(b)
	}
	const initialize = `{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`
	bad := map[string]string{
		"an id of 10^400": `{"jsonrpc":"2.0","id":1` + strings.Repeat("0", 400) + `,"method":"tools/list"}`,
		"an object id":    `{"jsonrpc":"2.0","id":{"a":1},"method":"tools/list"}`,
		"an array id":     `{"jsonrpc":"2.0","id":[1],"method":"tools/list"}`,
	}
	for _, path := range []string{mcpapi.Path, "/sessions" + mcpapi.Path} {
		for name, body := range bad {
			st, ct, b := post(path, "application/json", "", body)
			t.Logf("%s %s: %d %s %s", path, name, st, ct, b)
			var m struct {
				JSONRPC string `json:"jsonrpc"`
				Error   *struct {
					Code    int    `json:"code"`
					Message string `json:"message"`
				} `json:"error"`
			}
			if !strings.HasPrefix(ct, "application/json") || json.Unmarshal([]byte(b), &m) != nil || m.JSONRPC != "2.0" || m.Error == nil || m.Error.Message == "" {
				t.Errorf("%s, %s: HTTP %d %q %s; want a JSON-RPC error response", path, name, st, ct, b)
			}
		}
		st, _, b := post(path, "application/json-rpc", "", initialize)
		if st != http.StatusOK || !strings.Contains(b, `"protocolVersion"`) {
			t.Errorf("%s: initialize as application/json-rpc: HTTP %d %s", path, st, b)
		}
	}
}
