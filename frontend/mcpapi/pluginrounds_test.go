package mcpapi_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/opentool-host/opentool-host/frontend/mcpapi"
	"github.com/opentool-host/opentool-host/testkit"
)

// A plugin's own multi-round-trip requests (SEP-2322,
// pluginsdk.InputRequired; package rounds), on a real host running the
// rounds test plugin.

// roundsMeta is the _meta of a 2026-07-28 request that declares caps.
func roundsMeta(caps string) string {
	return `"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientInfo":{"name":"raw","version":"1"},` +
		`"io.modelcontextprotocol/clientCapabilities":` + caps + `}`
}

// TestPluginRoundsSessionless: to a 2026-07-28 client the rounds plugin's
// rounds pass as it wrote them (its keys, its requestState), and each
// retry reaches it as the client wrote it: register asks for a name, then
// (a new requestState) for a color, then completes with both; a changed
// requestState is the plugin's to refuse, and reaches the client as
// -32602 with its message; survey asks two things in one round, and a
// client that did not declare elicitation gets -32021; prompts/get of
// intro is a round, then the prompt. On both endpoints; and the MCP Go
// SDK's client, which answers rounds itself, gets register's result.
func TestPluginRoundsSessionless(t *testing.T) {
	r := newRig(t, nil, mcpapi.Config{}, "./testkit/plugins/rounds")
	callBody := func(name, caps, extra string) string {
		return `{"jsonrpc":"2.0","id":9,"method":"tools/call","params":{"name":"` + name + `","arguments":{},` + roundsMeta(caps) + extra + `}}`
	}
	round := func(t *testing.T, u, name, caps, extra string) inputRound {
		t.Helper()
		status, out, raw := mcpRaw(t, u, apiKey, callBody(name, caps, extra), append(newHeaders("tools/call"), "Mcp-Name: "+name)...)
		var ir inputRound
		if status != http.StatusOK || out.Error != nil || json.Unmarshal(out.Result, &ir) != nil {
			t.Fatalf("%s%s: HTTP %d %s", name, extra, status, raw)
		}
		return ir
	}
	elicit := `{"elicitation":{},"roots":{}}`
	for _, endpoint := range []string{mcpapi.Path, "/sessions" + mcpapi.Path} {
		t.Run(endpoint, func(t *testing.T) {
			u := r.url + endpoint
			first := round(t, u, "register", elicit, "")
			if first.ResultType != "input_required" || len(first.InputRequests) != 1 || first.InputRequests["name"].Method != "elicitation/create" || !strings.HasPrefix(first.RequestState, "register:1:") {
				t.Fatalf("first round = %+v, want the plugin's: name, its requestState", first)
			}
			retry := func(key, member, value, state string) string {
				return `,"inputResponses":{"` + key + `":{"action":"accept","content":{"` + member + `":"` + value + `"}}},"requestState":"` + state + `"`
			}
			second := round(t, u, "register", elicit, retry("name", "name", "Ada", first.RequestState))
			if second.ResultType != "input_required" || second.InputRequests["color"].Method != "elicitation/create" || !strings.HasPrefix(second.RequestState, "register:2:") {
				t.Fatalf("second round = %+v, want color with a new requestState", second)
			}
			if !strings.Contains(string(second.InputRequests["color"].Params), "Your favourite color, Ada?") {
				t.Errorf("second round's question: %s", second.InputRequests["color"].Params)
			}

			tampered := strings.Replace(second.RequestState, "register:2:", "register:1:", 1)
			status, out, raw := mcpRaw(t, u, apiKey, callBody("register", elicit, retry("color", "color", "red", tampered)), append(newHeaders("tools/call"), "Mcp-Name: register")...)
			if out.Error == nil || out.Error.Code != -32602 || !strings.Contains(out.Error.Message, "was not written by this plugin") {
				t.Errorf("a changed requestState: HTTP %d %s, want -32602 with the plugin's message", status, raw)
			}

			done := round(t, u, "register", elicit, retry("color", "color", "red", second.RequestState))
			if done.ResultType != "complete" || string(done.StructuredContent) != `{"color":"red","name":"Ada"}` {
				t.Errorf("last retry = %+v, want the complete result", done)
			}

			survey := round(t, u, "survey", elicit, "")
			if len(survey.InputRequests) != 2 || survey.InputRequests["name"].Method != "elicitation/create" || survey.InputRequests["roots"].Method != "roots/list" {
				t.Errorf("survey's round = %+v, want name and roots at once", survey)
			}
			status, out, raw = mcpRaw(t, u, apiKey, callBody("survey", `{"roots":{}}`, ""), append(newHeaders("tools/call"), "Mcp-Name: survey")...)
			var data struct {
				RequiredCapabilities map[string]json.RawMessage `json:"requiredCapabilities"`
			}
			if status != http.StatusBadRequest || out.Error == nil || out.Error.Code != -32021 ||
				json.Unmarshal(out.Error.Data, &data) != nil || data.RequiredCapabilities["elicitation"] == nil {
				t.Errorf("survey without elicitation: HTTP %d %s, want 400 with -32021 requiring elicitation", status, raw)
			}

			get := func(extra string) (inputRound, string) {
				body := `{"jsonrpc":"2.0","id":10,"method":"prompts/get","params":{"name":"intro",` + roundsMeta(elicit) + extra + `}}`
				status, out, raw := mcpRaw(t, u, apiKey, body, append(newHeaders("prompts/get"), "Mcp-Name: intro")...)
				var ir inputRound
				if status != http.StatusOK || out.Error != nil || json.Unmarshal(out.Result, &ir) != nil {
					t.Fatalf("prompts/get intro%s: HTTP %d %s", extra, status, raw)
				}
				return ir, raw
			}
			if p, _ := get(""); p.ResultType != "input_required" || p.InputRequests["topic"].Method != "elicitation/create" || p.RequestState != "intro-1" {
				t.Errorf("prompts/get's round = %+v", p)
			}
			if p, raw := get(retry("topic", "topic", "owls", "intro-1")); p.ResultType != "complete" || !strings.Contains(raw, `Introduce owls (state \"intro-1\").`) {
				t.Errorf("prompts/get's retry: %s", raw)
			}

			cs := r.connect(t, mode{name: "sdk", endpoint: endpoint}, &mcp.ClientOptions{ElicitationHandler: answerAll})
			if got := ok(t, call(t, cs, "register", map[string]any{})); got["name"] != "sdk-name" || got["color"] != "sdk-color" {
				t.Errorf("the SDK client's register = %v", got)
			}
		})
	}
}

// answerAll accepts an elicitation with "sdk-" and the name of each
// property asked for.
func answerAll(_ context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
	content := map[string]any{}
	schema, _ := req.Params.RequestedSchema.(map[string]any)
	props, _ := schema["properties"].(map[string]any)
	for k := range props {
		content[k] = "sdk-" + k
	}
	return &mcp.ElicitResult{Action: "accept", Content: content}, nil
}

// TestPluginRoundsWithSession: a 2025-11-25 client with a session never
// sees the plugin's rounds: the host asks it each request on the call's
// stream and calls the plugin again with the answers and its
// requestState, to the result (register: two rounds, survey: two
// requests at once, prompts/get intro); a plugin that asks forever is
// stopped after 8 rounds with a JSON-RPC error saying so, and a client
// without the elicitation capability gets -32603 naming the input
// request and the capability. An OpenTool caller gets tool error 500.
func TestPluginRoundsWithSession(t *testing.T) {
	r := newRig(t, nil, mcpapi.Config{}, "./testkit/plugins/rounds")
	asked := make(chan string, 64)
	c := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "1"}, &mcp.ClientOptions{
		ElicitationHandler: func(ctx context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			asked <- req.Params.Message
			return answerAll(ctx, req)
		},
	})
	c.AddRoots(&mcp.Root{URI: "file:///work", Name: "work"})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	tr := &mcp.StreamableClientTransport{Endpoint: r.url + modes[2].endpoint, HTTPClient: &http.Client{Transport: keyTransport{}}, MaxRetries: -1}
	cs, err := c.Connect(ctx, tr, &mcp.ClientSessionOptions{ProtocolVersion: modes[2].protocol})
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	if got := ok(t, call(t, cs, "register", map[string]any{})); got["name"] != "sdk-name" || got["color"] != "sdk-color" {
		t.Errorf("register = %v", got)
	}
	if q1, q2 := <-asked, <-asked; q1 != "Your name?" || q2 != "Your favourite color, sdk-name?" {
		t.Errorf("the client was asked %q then %q", q1, q2)
	}
	if got := ok(t, call(t, cs, "survey", map[string]any{})); got["name"] != "sdk-name" || mustJSON(t, got["roots"]) != `["file:///work"]` {
		t.Errorf("survey = %v", got)
	}
	p, err := cs.GetPrompt(ctx, &mcp.GetPromptParams{Name: "intro"})
	if err != nil || len(p.Messages) != 1 || !strings.Contains(mustJSON(t, p.Messages[0].Content), `Introduce sdk-topic (state \"intro-1\").`) {
		t.Errorf("prompts/get intro = %+v, %v", p, err)
	}
	_, err = cs.CallTool(ctx, &mcp.CallToolParams{Name: "forever", Arguments: map[string]any{}})
	if err == nil || !strings.Contains(err.Error(), "more than 8 rounds") {
		t.Errorf("forever: %v, want the error of more than 8 rounds", err)
	}

	// An OpenTool caller cannot answer a round: tool error 500.
	if _, _, body := httpDo(t, http.MethodPost, r.url+"/opentool/call", apiKey, `{"jsonrpc":"2.0","method":"register","params":{},"id":1}`); !strings.Contains(body, `"code":500`) || !strings.Contains(body, "only an MCP client can answer") {
		t.Errorf("register over /opentool/call: %s, want tool error 500 saying only an MCP client can answer", body)
	}

	bare := r.connect(t, modes[2], nil)
	_, err = bare.CallTool(ctx, &mcp.CallToolParams{Name: "register", Arguments: map[string]any{}})
	var je *jsonrpc.Error
	if !errors.As(err, &je) || je.Code != -32603 || !strings.Contains(je.Message, `input request "name"`) || !strings.Contains(je.Message, "did not declare the elicitation capability") {
		t.Errorf("register without elicitation: %v, want -32603 naming the input request and the capability", err)
	}
}

// TestPluginRoundsOnStdio: a 2025-11-25 client of the stdio front end
// (Server.Stdio, as opentool-host mcp serves it) has no session id but is
// asked on its connection: register's two rounds are answered by the host
// and the client gets the result.
func TestPluginRoundsOnStdio(t *testing.T) {
	h := testkit.StartHost(t, nil, "./testkit/plugins/rounds")
	s := mcpapi.New(h, mcpapi.Config{Logger: testkit.Logger(t)})
	toServer, clientOut := io.Pipe()
	clientIn, fromServer := io.Pipe()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	ss, err := s.MCP().Connect(ctx, s.Stdio(&mcp.IOTransport{Reader: toServer, Writer: fromServer}), nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = ss.Close(); clientOut.Close(); fromServer.Close() })
	c := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "1"}, &mcp.ClientOptions{ElicitationHandler: answerAll})
	cs, err := c.Connect(ctx, &mcp.IOTransport{Reader: clientIn, Writer: clientOut}, &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	if got := ok(t, call(t, cs, "register", map[string]any{})); got["name"] != "sdk-name" || got["color"] != "sdk-color" {
		t.Errorf("register on stdio = %v", got)
	}
}
