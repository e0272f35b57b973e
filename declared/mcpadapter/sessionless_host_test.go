package mcpadapter_test

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/opentool-host/opentool-host/frontend/mcpapi"
)

// A client of MCP 2026-07-28 through a real host to a real server of
// 2026-07-28 (the test binary as the "mrtr" server over stdio,
// sessionless_fixture_test.go): the server's own multi-round-trip
// request and its retry, and its -32021 for a capability the caller did
// not declare.

// call2026 posts tools/call of tool with the 2026-07-28 _meta (caps: the
// client's capabilities, JSON) and extra params (",..." or "") to /mcp
// and returns the HTTP status and the JSON-RPC response.
func call2026(t *testing.T, url, tool, caps, extra string) (int, rpcResponse) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), hostBound)
	defer cancel()
	body := `{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"` + tool + `","arguments":{},` +
		`"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientInfo":{"name":"t","version":"1"},"io.modelcontextprotocol/clientCapabilities":` + caps + `}` + extra + `}}`
	code, out, err := post(t, ctx, url+mcpapi.Path, body, "Accept: application/json, text/event-stream",
		"Mcp-Protocol-Version: 2026-07-28", "Mcp-Method: tools/call", "Mcp-Name: "+tool)
	if err != nil {
		t.Fatalf("tools/call %s: %v", tool, err)
	}
	if i := strings.Index(out, "data: "); i >= 0 { // an event stream: its one message
		out = strings.TrimSpace(out[i+len("data: "):])
	}
	var r rpcResponse
	if err := json.Unmarshal([]byte(out), &r); err != nil {
		t.Fatalf("tools/call %s: HTTP %d %q: %v", tool, code, out, err)
	}
	r.raw = out
	return code, r
}

// rpcResponse is a JSON-RPC response of /mcp.
type rpcResponse struct {
	Result *struct {
		ResultType    string                     `json:"resultType"`
		InputRequests map[string]json.RawMessage `json:"inputRequests"`
		RequestState  string                     `json:"requestState"`
		Content       []struct{ Text string }    `json:"content"`
	} `json:"result"`
	Error *struct {
		Code    int             `json:"code"`
		Message string          `json:"message"`
		Data    json.RawMessage `json:"data"`
	} `json:"error"`
	raw string
}

// TestServersOwnInputRequiredRound: the server's input_required result
// reaches the 2026-07-28 client with the server's own inputRequests key
// and requestState (not the host's r1 and signed state), the retry
// reaches the server as it is (its answer), and a tampered state is the
// server's own -32602.
func TestServersOwnInputRequiredRound(t *testing.T) {
	_, url := fixtureHost(t, "mrtr", "", nil)
	caps := `{"elicitation":{}}`
	code, r := call2026(t, url, "greet", caps, "")
	if code != http.StatusOK || r.Result == nil || r.Result.ResultType != "input_required" || r.Result.RequestState != "greet-1" || r.Result.InputRequests["user_name"] == nil || len(r.Result.InputRequests) != 1 {
		t.Fatalf("first round: HTTP %d %s, want input_required with the server's user_name and greet-1", code, r.raw)
	}
	if ir := string(r.Result.InputRequests["user_name"]); !strings.Contains(ir, `"method":"elicitation/create"`) || !strings.Contains(ir, "What is your name?") {
		t.Errorf("user_name = %s", ir)
	}
	answer := `,"inputResponses":{"user_name":{"action":"accept","content":{"name":"Ada"}}}`
	code, r = call2026(t, url, "greet", caps, answer+`,"requestState":"greet-1"`)
	if code != http.StatusOK || r.Result == nil || r.Result.ResultType != "complete" || len(r.Result.Content) != 1 || r.Result.Content[0].Text != "hello Ada" {
		t.Fatalf("the retry: HTTP %d %s, want the complete result hello Ada", code, r.raw)
	}
	_, r = call2026(t, url, "greet", caps, answer+`,"requestState":"greet-1-TAMPERED"`)
	if r.Error == nil || r.Error.Code != -32602 || !strings.Contains(r.Error.Message, "tampered requestState") {
		t.Fatalf("a tampered requestState: %s, want the server's -32602", r.raw)
	}
}

// TestServerRefusesUndeclaredCapability: the server judges the
// capabilities of the host's client's caller: without sampling its
// -32021 (HTTP 400, data.requiredCapabilities.sampling) reaches the
// client as it is; with sampling the tool runs.
func TestServerRefusesUndeclaredCapability(t *testing.T) {
	_, url := fixtureHost(t, "mrtr", "", nil)
	code, r := call2026(t, url, "needs_sampling", `{}`, "")
	var data struct {
		RequiredCapabilities map[string]map[string]any `json:"requiredCapabilities"`
	}
	if r.Error == nil || r.Error.Code != -32021 || code != http.StatusBadRequest || json.Unmarshal(r.Error.Data, &data) != nil || data.RequiredCapabilities["sampling"] == nil {
		t.Fatalf("without sampling: HTTP %d %s, want the server's -32021 with HTTP 400 and requiredCapabilities.sampling", code, r.raw)
	}
	code, r = call2026(t, url, "needs_sampling", `{"sampling":{}}`, "")
	if code != http.StatusOK || r.Result == nil || len(r.Result.Content) != 1 || r.Result.Content[0].Text != "sampled" {
		t.Fatalf("with sampling: HTTP %d %s, want sampled", code, r.raw)
	}
}

// TestSharedDeclarationKeepsHostRounds: with "sessions": "shared" every
// caller reaches the shared session (of 2025-11-25), so the server's
// elicitation becomes the host's own round (r1, a state the host signs),
// answered through the host; and a retry with a requestState the host
// did not issue reaches the adapter, which refuses it with -32602 (no
// session of 2026-07-28 to judge it), not run anew; a caller that did
// not declare elicitation gets the host's -32021.
func TestSharedDeclarationKeepsHostRounds(t *testing.T) {
	_, url := fixtureHost(t, "mrtr", "shared", nil)
	caps := `{"elicitation":{}}`
	code, r := call2026(t, url, "greet", caps, "")
	if code != http.StatusOK || r.Result == nil || r.Result.ResultType != "input_required" || r.Result.InputRequests["r1"] == nil || r.Result.RequestState == "" || r.Result.RequestState == "greet-1" {
		t.Fatalf("first round: HTTP %d %s, want the host's round r1", code, r.raw)
	}
	_, r = call2026(t, url, "greet", caps, `,"inputResponses":{"r1":{"action":"accept","content":{"name":"Ada"}}},"requestState":"`+r.Result.RequestState+`"`)
	if r.Result == nil || len(r.Result.Content) != 1 || r.Result.Content[0].Text != "hello Ada" {
		t.Fatalf("the retry of the host's round: %s, want hello Ada", r.raw)
	}
	_, r = call2026(t, url, "greet", caps, `,"inputResponses":{"user_name":{"action":"accept","content":{"name":"Ada"}}},"requestState":"greet-1"`)
	if r.Error == nil || r.Error.Code != -32602 || !strings.Contains(r.Error.Message, `MCP server "tk" behind tool "greet" does not speak 2026-07-28`) {
		t.Fatalf("a foreign requestState: %s, want the adapter's -32602: its server does not speak 2026-07-28 for this caller", r.raw)
	}
	// The server's elicitation for a caller that did not declare it: the
	// host's -32021 (as for a plugin's request).
	code, r = call2026(t, url, "greet", `{}`, "")
	if code != http.StatusBadRequest || r.Error == nil || r.Error.Code != -32021 || !strings.Contains(string(r.Error.Data), `"elicitation"`) {
		t.Fatalf("without elicitation: HTTP %d %s, want -32021 naming elicitation", code, r.raw)
	}
}
