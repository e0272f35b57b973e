package mcpapi_test

import (
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/opentool-host/opentool-host/frontend/mcpapi"
)

// TestCallResponseInOneWrite: the answer to a POST carrying one
// tools/call is its event stream, written whole when the POST ends (one
// write, with a Content-Length: it fits net/http's buffer), stateless and
// with a session.
func TestCallResponseInOneWrite(t *testing.T) {
	r := newRig(t, nil, mcpapi.Config{}, "./testkit/plugins/echo")
	post := func(path, session, body string) *http.Response {
		t.Helper()
		return postMCP(t, r.url+path, "application/json", session, body)
	}
	const call = `{"jsonrpc":"2.0","id":"a\"7","method":"tools/call","params":{"name":"echo","arguments":{"data":"hi"}}}`
	check := func(name string, resp *http.Response) {
		t.Helper()
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK || !strings.Contains(string(body), `"structuredContent":{"echo":{"data":"hi"}}`) {
			t.Fatalf("%s: HTTP %d %s", name, resp.StatusCode, body)
		}
		if resp.ContentLength != int64(len(body)) || len(resp.TransferEncoding) > 0 {
			t.Errorf("%s: Content-Length %d, Transfer-Encoding %v for %d bytes: the response was flushed before it ended", name, resp.ContentLength, resp.TransferEncoding, len(body))
		}
	}
	check("stateless", post(mcpapi.Path, "", call))

	init := post("/sessions"+mcpapi.Path, "", `{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`)
	_, _ = io.Copy(io.Discard, init.Body)
	init.Body.Close()
	sid := init.Header.Get("Mcp-Session-Id")
	if sid == "" {
		t.Fatalf("initialize: no session id (HTTP %d)", init.StatusCode)
	}
	ack := post("/sessions"+mcpapi.Path, sid, `{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	ack.Body.Close()
	check("session", post("/sessions"+mcpapi.Path, sid, call))
}

// postMCP posts body of Content-Type ctype to url as an MCP client of
// 2025-11-25 with the rig's key (and session, "" for none).
func postMCP(t *testing.T, url, ctype, session, body string) *http.Response {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, url, strings.NewReader(body))
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
	return resp
}

// TestMalformedRequestsAnswerJSONRPC: every malformed request the SDK
// refuses on /mcp, stateless and with a session, is answered with a
// JSON-RPC error response (id null), not the SDK's plain text; and a
// POST of Content-Type application/json-rpc, which the host's guard
// accepts, is served.
func TestMalformedRequestsAnswerJSONRPC(t *testing.T) {
	r := newRig(t, nil, mcpapi.Config{}, "./testkit/plugins/echo")
	post := func(path, ctype, session, body string) (int, string, string) {
		t.Helper()
		resp := postMCP(t, r.url+path, ctype, session, body)
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
