package mcpapi_test

import (
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
		req, err := http.NewRequest(http.MethodPost, r.url+path, strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Authorization", "Bearer "+apiKey)
		req.Header.Set("Content-Type", "application/json")
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
