package mcpapi_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/opentool-host/opentool-host/frontend/mcpapi"
	"github.com/opentool-host/opentool-host/testkit"
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
// both endpoints, raw and through the MCP Go SDK's client. (One that
// declared it is asked in rounds: TestInputRequiredRounds.)
func TestMissingCapabilityRefused(t *testing.T) {
	r := newRig(t, nil, mcpapi.Config{}, "./testkit/plugins/rich")
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

// inputRound is an input_required result as sent.
type inputRound struct {
	ResultType    string `json:"resultType"`
	InputRequests map[string]struct {
		Method string          `json:"method"`
		Params json.RawMessage `json:"params"`
	} `json:"inputRequests"`
	RequestState      string          `json:"requestState"`
	StructuredContent json.RawMessage `json:"structuredContent"`
}

// TestInputRequiredRounds: the rich plugin's confirm asks elicitation/create
// during a call of a 2026-07-28 client that declared elicitation: the POST
// is answered with an input_required round (the question, a signed
// requestState); a changed state, and a retry without inputResponses, are
// refused with -32602 while the call waits; the retry with the answer
// completes the call with it, after which the state names no call. On
// both endpoints, raw; and the MCP Go SDK's client, which answers rounds
// itself, gets the result.
func TestInputRequiredRounds(t *testing.T) {
	r := newRig(t, nil, mcpapi.Config{}, "./testkit/plugins/rich")
	meta := `"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{"elicitation":{}}}`
	confirm := func(extra string) string {
		return `{"jsonrpc":"2.0","id":6,"method":"tools/call","params":{"name":"confirm","arguments":{"question":"sure?"},` + meta + extra + `}}`
	}
	headers := append(newHeaders("tools/call"), "Mcp-Name: confirm")
	for _, endpoint := range []string{mcpapi.Path, "/sessions" + mcpapi.Path} {
		t.Run(endpoint, func(t *testing.T) {
			u := r.url + endpoint
			status, out, raw := mcpRaw(t, u, apiKey, confirm(""), headers...)
			var round inputRound
			if status != http.StatusOK || out.Error != nil || json.Unmarshal(out.Result, &round) != nil || round.ResultType != "input_required" || round.RequestState == "" || len(round.InputRequests) != 1 {
				t.Fatalf("first round: HTTP %d %s, want input_required with one input request and a requestState", status, raw)
			}
			var id string
			for k, ir := range round.InputRequests {
				id = k
				if ir.Method != "elicitation/create" || !strings.Contains(string(ir.Params), `"message":"sure?"`) {
					t.Errorf("input request %s: %s %s", k, ir.Method, ir.Params)
				}
			}
			answer := `,"inputResponses":{"` + id + `":{"action":"accept","content":{"answer":"yes"}}}`
			state := func(s string) string { return `,"requestState":"` + s + `"` }

			tampered := []byte(round.RequestState)
			tampered[2] ^= 1 // one bit of the claims
			for what, body := range map[string]string{
				"a changed requestState":                confirm(answer + state(string(tampered))),
				"a requestState with another signature": confirm(answer + state(round.RequestState[:strings.LastIndexByte(round.RequestState, '.')]+".AAAA")),
				"a retry without inputResponses":        confirm(state(round.RequestState)),
			} {
				status, out, raw := mcpRaw(t, u, apiKey, body, headers...)
				if out.Error == nil || out.Error.Code != -32602 {
					t.Errorf("%s: HTTP %d %s, want -32602", what, status, raw)
				}
			}

			status, out, raw = mcpRaw(t, u, apiKey, confirm(answer+state(round.RequestState)), headers...)
			var done inputRound
			if status != http.StatusOK || out.Error != nil || json.Unmarshal(out.Result, &done) != nil || done.ResultType != "complete" || string(done.StructuredContent) != `{"action":"accept","answer":"yes"}` {
				t.Fatalf("the retry with the answer: HTTP %d %s, want the complete result with it", status, raw)
			}
			status, out, raw = mcpRaw(t, u, apiKey, confirm(answer+state(round.RequestState)), headers...)
			if out.Error == nil || out.Error.Code != -32602 || !strings.Contains(out.Error.Message, "names no call") {
				t.Errorf("a second retry of the ended call: HTTP %d %s, want -32602 naming no call", status, raw)
			}

			cs := r.connect(t, mode{name: "sdk", endpoint: endpoint}, &mcp.ClientOptions{
				ElicitationHandler: func(_ context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
					return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"answer": "sdk: " + req.Params.Message}}, nil
				},
			})
			if got := ok(t, call(t, cs, "confirm", map[string]any{"question": "sure?"})); got["answer"] != "sdk: sure?" {
				t.Errorf("the SDK client's call = %v", got)
			}
		})
	}
}

// TestHeldCallEndsAtShutdown: a call parked between rounds is in flight on
// no request, so the host's shutdown (Server.Shutdown) ends it: its
// requestState then names no call. Else it would wait for a retry that
// cannot reach the stopped process, and hold the plugin's drain. The probe
// (a retry without inputResponses) is refused before it resumes anything.
func TestHeldCallEndsAtShutdown(t *testing.T) {
	r := newRig(t, nil, mcpapi.Config{}, "./testkit/plugins/rich")
	body := `{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"confirm","arguments":{"question":"sure?"},` +
		`"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{"elicitation":{}}}%s}}`
	headers := append(newHeaders("tools/call"), "Mcp-Name: confirm")
	_, out, raw := mcpRaw(t, r.url+mcpapi.Path, apiKey, fmt.Sprintf(body, ""), headers...)
	var round inputRound
	if json.Unmarshal(out.Result, &round) != nil || round.ResultType != "input_required" {
		t.Fatalf("first round: %s", raw)
	}
	retry := fmt.Sprintf(body, `,"requestState":"`+round.RequestState+`"`)
	if _, out, raw := mcpRaw(t, r.url+mcpapi.Path, apiKey, retry, headers...); out.Error == nil || !strings.Contains(out.Error.Message, "must carry inputResponses") {
		t.Fatalf("the probe while the call waits: %s", raw)
	}
	r.s.Shutdown()
	testkit.Eventually(t, 10*time.Second, "the parked call ends at shutdown", func() bool {
		_, out, _ := mcpRaw(t, r.url+mcpapi.Path, apiKey, retry, headers...)
		return out.Error != nil && strings.Contains(out.Error.Message, "names no call")
	})
}

// TestHeldCallsCapped: one API key holds at most 4 calls between rounds;
// in its fifth call that asks, the plugin's question fails at once (the
// call answers with its tool error, no round), and once a held call ends
// (answered) the key may hold another.
func TestHeldCallsCapped(t *testing.T) {
	r := newRig(t, nil, mcpapi.Config{}, "./testkit/plugins/rich")
	body := `{"jsonrpc":"2.0","id":8,"method":"tools/call","params":{"name":"confirm","arguments":{"question":"sure?"},` +
		`"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{"elicitation":{}}}%s}}`
	headers := append(newHeaders("tools/call"), "Mcp-Name: confirm")
	first := func() (inputRound, string) {
		_, out, raw := mcpRaw(t, r.url+mcpapi.Path, apiKey, fmt.Sprintf(body, ""), headers...)
		var round inputRound
		_ = json.Unmarshal(out.Result, &round)
		return round, raw
	}
	var held []inputRound
	for i := range 4 {
		round, raw := first()
		if round.ResultType != "input_required" {
			t.Fatalf("held call %d: %s", i+1, raw)
		}
		held = append(held, round)
	}
	if round, raw := first(); round.ResultType == "input_required" || !strings.Contains(raw, `"isError":true`) || !strings.Contains(raw, "too many calls of this API key wait") {
		t.Fatalf("a fifth held call of the key: %s, want the plugin's question refused over the cap", raw)
	}
	answer := fmt.Sprintf(body, `,"inputResponses":{"r1":{"action":"accept","content":{"answer":"yes"}}},"requestState":"`+held[0].RequestState+`"`)
	if _, _, raw := mcpRaw(t, r.url+mcpapi.Path, apiKey, answer, headers...); !strings.Contains(raw, `"answer":"yes"`) {
		t.Fatalf("the retry of the first: %s", raw)
	}
	if round, raw := first(); round.ResultType != "input_required" {
		t.Errorf("after one ended, another held call: %s", raw)
	}
	r.s.Shutdown() // ends the held calls (TestHeldCallEndsAtShutdown) before the rig stops
}
