package mcpapi_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/opentool-host/opentool-host/mcpapi"
)

// Every MCP revision in both modes of /mcp: without sessions and with
// them, clients of 2025-06-18, 2025-11-25 and 2026-07-28 are served, the
// last without a session (SEP-2575), on a real host running the
// calculator.

// revisions are the MCP revisions a client may speak to /mcp.
var revisions = []string{"2025-06-18", "2025-11-25", "2026-07-28"}

// TestEveryRevisionInBothModes: the MCP Go SDK's client, asking for each
// revision, gets that revision from /mcp and from /sessions/mcp, a
// session exactly when it asked for an older revision of the endpoint
// with sessions, and its calls answered.
func TestEveryRevisionInBothModes(t *testing.T) {
	r := newRig(t, nil, mcpapi.Config{}, "./plugins/calculator")
	for _, endpoint := range []string{mcpapi.Path, "/sessions" + mcpapi.Path} {
		for _, v := range revisions {
			t.Run(endpoint+"/"+v, func(t *testing.T) {
				cs := r.connect(t, mode{name: v, endpoint: endpoint, protocol: v}, nil)
				if got := cs.InitializeResult().ProtocolVersion; got != v {
					t.Fatalf("the client asked for %s and got %s", v, got)
				}
				wantSession := endpoint != mcpapi.Path && v < "2026-07-28"
				if got := cs.ID() != ""; got != wantSession {
					t.Errorf("session id %q: a session is %v, want %v", cs.ID(), got, wantSession)
				}
				if got := ok(t, call(t, cs, "add", map[string]any{"a": 1.5, "b": 2}))["result"]; got != 3.5 {
					t.Errorf("add = %v", got)
				}
			})
		}
	}
}

// TestSessionlessRevisionWithSessions: raw 2026-07-28 requests to the
// endpoint with sessions: server/discover offers 2026-07-28, a tools/call
// is answered without opening a session, and the required request
// headers are checked as on the stateless endpoint (MCP-Protocol-Version
// equal to the _meta's, Mcp-Method and Mcp-Name equal to the body's:
// else HTTP 400 with -32020); an older client's request without a
// session is still refused for want of one.
func TestSessionlessRevisionWithSessions(t *testing.T) {
	r := newRig(t, nil, mcpapi.Config{}, "./plugins/calculator")
	for _, endpoint := range []string{mcpapi.Path, "/sessions" + mcpapi.Path} {
		u := r.url + endpoint
		t.Run(endpoint, func(t *testing.T) {
			status, out, raw := mcpRaw(t, u, apiKey, `{"jsonrpc":"2.0","id":1,"method":"server/discover","params":{`+newMeta(false)+`}}`, newHeaders("server/discover")...)
			var disc struct{ SupportedVersions []string }
			if status != http.StatusOK || out.Error != nil || json.Unmarshal(out.Result, &disc) != nil || !slices.Contains(disc.SupportedVersions, "2026-07-28") {
				t.Errorf("server/discover: HTTP %d %s: want a result with 2026-07-28 among supportedVersions", status, raw)
			}

			add := `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"add","arguments":{"a":1,"b":2},` + newMeta(false) + `}}`
			resp, err := http.DefaultClient.Do(mcpPost(t, u, apiKey, add, append(newHeaders("tools/call"), "Mcp-Name: add")...))
			if err != nil {
				t.Fatal(err)
			}
			got := responseOf(t, resp)
			resp.Body.Close()
			if resp.StatusCode != http.StatusOK || !strings.Contains(got, `"structuredContent":{"result":3}`) {
				t.Errorf("tools/call of 2026-07-28: HTTP %d %s", resp.StatusCode, got)
			}
			if sid := resp.Header.Get("Mcp-Session-Id"); sid != "" {
				t.Errorf("tools/call of 2026-07-28 opened session %q", sid)
			}

			for _, c := range []struct {
				name    string
				headers []string
			}{
				{"Mcp-Name of another tool", []string{"Mcp-Protocol-Version: 2026-07-28", "Mcp-Method: tools/call", "Mcp-Name: multiply"}},
				{"Mcp-Method of another method", []string{"Mcp-Protocol-Version: 2026-07-28", "Mcp-Method: tools/list", "Mcp-Name: add"}},
				{"MCP-Protocol-Version older than the _meta's", []string{"Mcp-Protocol-Version: 2025-11-25", "Mcp-Method: tools/call", "Mcp-Name: add"}},
			} {
				status, out, raw := mcpRaw(t, u, apiKey, add, c.headers...)
				if status != http.StatusBadRequest || out.Error == nil || out.Error.Code != -32020 {
					t.Errorf("%s: HTTP %d %s, want 400 with -32020", c.name, status, raw)
				}
			}
			status, out, raw = mcpRaw(t, u, apiKey, add, "Mcp-Protocol-Version: 2026-07-28", "Mcp-Method: tools/call")
			if status != http.StatusBadRequest || out.Error == nil || !strings.Contains(out.Error.Message, "Mcp-Name") {
				t.Errorf("without Mcp-Name: HTTP %d %s, want 400 naming Mcp-Name", status, raw)
			}
		})
	}
	// An older client's call without a session, on the endpoint with
	// sessions, is not taken for a 2026-07-28 one.
	status, _, raw := mcpRaw(t, r.url+"/sessions"+mcpapi.Path, apiKey, callReq(3, "add", `{"a":1,"b":2}`, ""), v25)
	if status == http.StatusOK && strings.Contains(raw, `"result":3`) {
		t.Errorf("a 2025-11-25 tools/call without a session was answered: HTTP %d %s", status, raw)
	}
}

// TestMissingCapabilityRefused: a 2026-07-28 client declares its
// capabilities with each request; when the plugin asks it for one it did
// not declare (the rich plugin's confirm asks elicitation/create), its
// tools/call is answered with -32021 (HTTP 400) naming the capability, on
// both endpoints, raw and through the MCP Go SDK's client. A client that
// declared it is not refused for it (it has no session to be asked on:
// the plugin's question fails, and so does the call, as a tool error).
func TestMissingCapabilityRefused(t *testing.T) {
	r := newRig(t, nil, mcpapi.Config{}, "./internal/testplugins/rich")
	confirm := func(caps string) string {
		return `{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"confirm","arguments":{"question":"sure?"},` +
			`"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":` + caps + `}}}`
	}
	headers := append(newHeaders("tools/call"), "Mcp-Name: confirm")
	for _, endpoint := range []string{mcpapi.Path, "/sessions" + mcpapi.Path} {
		t.Run(endpoint, func(t *testing.T) {
			status, out, raw := mcpRaw(t, r.url+endpoint, apiKey, confirm(`{}`), headers...)
			var data struct {
				RequiredCapabilities map[string]json.RawMessage `json:"requiredCapabilities"`
			}
			if status != http.StatusBadRequest || out.Error == nil || out.Error.Code != -32021 ||
				json.Unmarshal(out.Error.Data, &data) != nil || data.RequiredCapabilities["elicitation"] == nil {
				t.Errorf("without elicitation: HTTP %d %s, want 400 with -32021 requiring elicitation", status, raw)
			}
			status, out, raw = mcpRaw(t, r.url+endpoint, apiKey, confirm(`{"elicitation":{}}`), headers...)
			if status != http.StatusOK || out.Error != nil || !strings.Contains(raw, `"isError":true`) || !strings.Contains(raw, "no session") {
				t.Errorf("with elicitation: HTTP %d %s, want a tool error saying the request has no session", status, raw)
			}

			cs := r.connect(t, mode{name: "sdk", endpoint: endpoint}, nil) // 2026-07-28, no elicitation handler
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "confirm", Arguments: map[string]any{"question": "sure?"}})
			var je *jsonrpc.Error
			if !errors.As(err, &je) || je.Code != -32021 {
				t.Errorf("the SDK client without elicitation: %+v, %v; want JSON-RPC error -32021", res, err)
			}
		})
	}
	// An older client with a session is still told by a -32601 to the
	// plugin (its call a tool error), as before.
	cs := r.connect(t, modes[2], nil)
	if msg, _ := failed(t, call(t, cs, "confirm", map[string]any{"question": "sure?"})); !strings.Contains(msg, "did not declare the elicitation capability") {
		t.Errorf("a 2025-11-25 session without elicitation: %q", msg)
	}
}
