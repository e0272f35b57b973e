package otc_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/opentool-host/opentool-host/frontend/otc"
	"github.com/opentool-host/opentool-host/frontend/route"
	"github.com/opentool-host/opentool-host/host"
	"github.com/opentool-host/opentool-host/host/core"
	"github.com/opentool-host/opentool-host/host/supervise"
	"github.com/opentool-host/opentool-host/protocol/opentool"
	"github.com/opentool-host/opentool-host/testkit"
)

// startOTC starts a real host serving the mock and calculator plugins and
// serves otc.New on loopback; it returns the base URL.
func startOTC(t *testing.T) string {
	t.Helper()
	h := testkit.StartHost(t, nil, "./plugins/mock", "./plugins/calculator")
	return serveOTC(t, otc.New(h, otc.Config{Logger: testkit.Logger(t)}))
}

var client = &http.Client{Timeout: 30 * time.Second}

func do(t *testing.T, method, url, contentType, body string) (int, string) {
	t.Helper()
	req, err := http.NewRequest(method, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	resp, err := client.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, url, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	if ct := resp.Header.Get("Content-Type"); resp.StatusCode != http.StatusNotFound && resp.StatusCode != http.StatusMethodNotAllowed && ct != "application/json" {
		t.Errorf("%s %s: Content-Type %q", method, url, ct)
	}
	return resp.StatusCode, string(b)
}

// call posts an OTC call request and decodes the response.
func call(t *testing.T, base, body string) (int, otc.CallResponse, string) {
	t.Helper()
	status, raw := do(t, http.MethodPost, base+"/otc/call", "application/json", body)
	var r otc.CallResponse
	if err := json.Unmarshal([]byte(raw), &r); err != nil {
		t.Fatalf("response is not a CallResponse: %v\n%s", err, raw)
	}
	if r.Schema != otc.SchemaURL {
		t.Errorf("$schema = %q", r.Schema)
	}
	return status, r, raw
}

func TestHealthAndTools(t *testing.T) {
	base := startOTC(t)
	if status, body := do(t, http.MethodGet, base+"/otc/health", "", ""); status != 200 || body != `{"status":"ok"}` {
		t.Fatalf("health: %d %s", status, body)
	}
	status, body := do(t, http.MethodGet, base+"/otc/tools", "", "")
	if status != 200 {
		t.Fatalf("tools: %d %s", status, body)
	}
	var list struct {
		Schema string            `json:"$schema"`
		Tools  []json.RawMessage `json:"tools"`
	}
	if err := json.Unmarshal([]byte(body), &list); err != nil || list.Schema != otc.SchemaURL || len(list.Tools) != 11 {
		t.Fatalf("tools body (%v): %s", err, body)
	}
	byID := map[string]string{}
	idPattern := regexp.MustCompile(`^[A-Za-z0-9_]+\.[A-Za-z0-9_]+(@[A-Za-z0-9_.\-]+)?$`) // OTC ToolId
	for _, raw := range list.Tools {
		var d otc.ToolDefinition
		if err := json.Unmarshal(raw, &d); err != nil {
			t.Fatal(err)
		}
		if !idPattern.MatchString(d.ID) {
			t.Errorf("id %q does not match the OTC ToolId pattern", d.ID)
		}
		byID[d.ID] = string(raw)
	}
	wantAdd := `{"id":"Calculator.add@1.0.0","name":"add","description":"Add two numbers: a + b.",` +
		`"toolkit":{"name":"Calculator","description":"Basic arithmetic on two numbers.","version":"1.0.0"},` +
		`"input":{"parameters":{"additionalProperties":false,"properties":{"a":{"description":"First operand","type":"number"},"b":{"description":"Second operand","type":"number"}},"required":["a","b"],"type":"object"}},` +
		`"output":{"available_modes":["value","error"],"description":"result","value":{"parameters":{"additionalProperties":false,"properties":{"result":{"description":"The result of the operation","type":"number"}},"required":["result"],"type":"object"}}}}`
	if got := byID["Calculator.add@1.0.0"]; got != wantAdd {
		t.Errorf("Calculator.add:\n got %s\nwant %s", got, wantAdd)
	}
	wantRead := `{"id":"CRUDAPIForMock.read@1.0.0","name":"read","description":"Read text from storage by id",` +
		`"toolkit":{"name":"CRUDAPIForMock","description":"","version":"1.0.0"},` +
		`"input":{"parameters":{"properties":{"id":{"description":"Text Id in storage","type":"integer"}},"required":["id"],"type":"object"}},` +
		`"output":{"available_modes":["value","error"],"description":"Text find by Id in storage","value":{"parameters":{"type":"string"}}}}`
	if got := byID["CRUDAPIForMock.read@1.0.0"]; got != wantRead {
		t.Errorf("CRUDAPIForMock.read:\n got %s\nwant %s", got, wantRead)
	}
	if got := byID["CRUDAPIForMock.sequentiallyRead@1.0.0"]; !strings.Contains(got,
		`"value":{"parameters":{"properties":{"items":{"items":{"type":"string"},"type":"array"}},"required":["items"],"type":"object"}}`) {
		t.Errorf("sequentiallyRead output: %s", got)
	}
	if got := byID["CRUDAPIForMock.update@1.0.0"]; !strings.Contains(got, `"value":{"parameters":{"type":"object"}}`) {
		t.Errorf("update (no return) output: %s", got)
	}
}

func TestCall(t *testing.T) {
	base := startOTC(t)
	uuid := regexp.MustCompile(`^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$`)

	type errWant struct {
		message  string // substring
		canRetry bool
	}
	tests := []struct {
		name   string
		body   string
		status int
		value  string   // exact output.value on success
		err    *errWant // output.error otherwise
	}{
		{"add with version", `{"$schema":"` + otc.SchemaURL + `","request":{"call_id":"c1","tool_id":"Calculator.add@1.0.0","input":{"a":1,"b":2}}}`,
			200, `{"result":3}`, nil},
		{"add without version", `{"request":{"call_id":"c2","tool_id":"Calculator.add","input":{"a":1.5,"b":2}}}`,
			200, `{"result":3.5}`, nil},
		{"add latest", `{"request":{"call_id":"c3","tool_id":"Calculator.add@latest","input":{"a":2,"b":2}}}`,
			200, `{"result":4}`, nil},
		{"RFC inputs spelling", `{"request":{"call_id":"c4","tool_id":"Calculator.multiply","inputs":{"a":2,"b":3}}}`,
			200, `{"result":6}`, nil},
		{"mock count, no input", `{"request":{"call_id":"c5","tool_id":"CRUDAPIForMock.count@1.0.0"}}`,
			200, `{"count":2}`, nil},
		{"mock read, null input is {}", `{"request":{"call_id":"c6","tool_id":"CRUDAPIForMock.read","input":null}}`,
			200, "", &errWant{`Invalid input: missing required parameter "id"`, false}},
		{"streaming tool collected", `{"request":{"call_id":"c7","tool_id":"CRUDAPIForMock.sequentiallyRead"}}`,
			200, `{"items":[{"data":"Hello"},{"data":"World"}]}`, nil},
		{"wrong version", `{"request":{"call_id":"c8","tool_id":"Calculator.add@2.0.0","input":{"a":1,"b":2}}}`,
			200, "", &errWant{"Calculator.add is served at version 1.0.0, not 2.0.0; call Calculator.add@1.0.0 or Calculator.add@latest", false}},
		{"unknown tool", `{"request":{"call_id":"c9","tool_id":"Calculator.pow"}}`,
			200, "", &errWant{`unknown tool "Calculator.pow"`, false}},
		{"unknown toolkit", `{"request":{"call_id":"c10","tool_id":"Mock.count"}}`,
			200, "", &errWant{`unknown tool "Mock.count"`, false}},
		{"invalid input", `{"request":{"call_id":"c11","tool_id":"Calculator.add","input":{"a":"one"}}}`,
			200, "", &errWant{`Invalid input: a: must be number, got string; missing required parameter "b"`, false}},
		{"tool's own error", `{"request":{"call_id":"c12","tool_id":"Calculator.divide","input":{"a":1,"b":0}}}`,
			200, "", &errWant{"division by zero: b must not be 0", false}},
		{"tool failure", `{"request":{"call_id":"c13","tool_id":"CRUDAPIForMock.run"}}`,
			200, "", &errWant{"run failed", false}},
		{"not JSON", `{"request":`, 400, "", &errWant{"Invalid request: the body is not a valid call request", false}},
		{"no request", `{"tool_id":"Calculator.add"}`, 400, "", &errWant{`the body must have a "request" object`, false}},
		{"no tool_id", `{"request":{"call_id":"c14"}}`, 400, "", &errWant{`"request.tool_id" is required`, false}},
		{"malformed tool_id", `{"request":{"call_id":"c15","tool_id":"add"}}`, 400, "", &errWant{`malformed tool_id "add"`, false}},
		{"empty version", `{"request":{"call_id":"c16","tool_id":"Calculator.add@"}}`, 400, "", &errWant{`malformed tool_id`, false}},
		{"input not an object", `{"request":{"call_id":"c17","tool_id":"Calculator.add","input":[1,2]}}`, 400, "", &errWant{`"request.input" must be a JSON object`, false}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			status, r, raw := call(t, base, tc.body)
			if status != tc.status {
				t.Fatalf("HTTP %d, want %d: %s", status, tc.status, raw)
			}
			var req struct {
				Request struct {
					CallID string `json:"call_id"`
				} `json:"request"`
			}
			_ = json.Unmarshal([]byte(tc.body), &req)
			if req.Request.CallID != "" && r.CallID != req.Request.CallID {
				t.Errorf("call_id = %q, want %q", r.CallID, req.Request.CallID)
			}
			if r.Output == nil {
				t.Fatalf("no output: %s", raw)
			}
			if tc.err == nil {
				if !r.Success || string(r.Output.Value) != tc.value || r.Output.Error != nil {
					t.Fatalf("response %s\nwant success with value %s", raw, tc.value)
				}
				if r.Duration == nil || *r.Duration < 0 {
					t.Errorf("duration = %v", r.Duration)
				}
				return
			}
			e := r.Output.Error
			if r.Success || e == nil || !strings.Contains(e.Message, tc.err.message) || e.CanRetry != tc.err.canRetry || r.Output.Value != nil {
				t.Fatalf("response %s\nwant error containing %q, can_retry %v", raw, tc.err.message, tc.err.canRetry)
			}
			if !strings.Contains(raw, `"can_retry":`) {
				t.Errorf("can_retry left out: %s", raw)
			}
		})
	}

	// A call without call_id gets a UUID.
	_, r, raw := call(t, base, `{"request":{"tool_id":"Calculator.subtract","input":{"a":5,"b":3}}}`)
	if !r.Success || !uuid.MatchString(r.CallID) || string(r.Output.Value) != `{"result":2}` {
		t.Fatalf("generated call_id: %s", raw)
	}
	// The RFC's own example response shape.
	_, _, raw = call(t, base, `{"request":{"call_id":"123e4567-e89b-12d3-a456-426614174000","tool_id":"Calculator.add@1.0.0","input":{"a":1,"b":2}}}`)
	if !regexp.MustCompile(`^\{"\$schema":"[^"]+","call_id":"123e4567-e89b-12d3-a456-426614174000","duration":[0-9.e-]+,"success":true,"output":\{"value":\{"result":3\}\}\}$`).MatchString(raw) {
		t.Errorf("response shape: %s", raw)
	}
	// Invalid input never reached the plugin: the storage still has 2.
	if _, r, raw := call(t, base, `{"request":{"call_id":"x","tool_id":"CRUDAPIForMock.count"}}`); string(r.Output.Value) != `{"count":2}` {
		t.Fatalf("count: %s", raw)
	}
}

func TestCallHTTPErrors(t *testing.T) {
	base := startOTC(t)
	// The body rules are the OpenTool API's (httpguard.ReadBody).
	if status, body := do(t, http.MethodPost, base+"/otc/call", "text/html", `{}`); status != http.StatusUnsupportedMediaType ||
		!strings.Contains(body, `Content-Type must be application/json`) {
		t.Errorf("text/html: %d %s", status, body)
	}
	big := `{"request":{"tool_id":"Calculator.add","input":{"a":"` + strings.Repeat("x", otc.DefaultMaxBodyBytes) + `"}}}`
	if status, body := do(t, http.MethodPost, base+"/otc/call", "application/json", big); status != http.StatusRequestEntityTooLarge ||
		!strings.Contains(body, "larger than the limit") {
		t.Errorf("big body: %d %.200s", status, body)
	}
	if status, _ := do(t, http.MethodGet, base+"/otc/call", "", ""); status != http.StatusMethodNotAllowed {
		t.Errorf("GET /otc/call: %d", status)
	}
	if status, _ := do(t, http.MethodGet, base+"/otc/nope", "", ""); status != http.StatusNotFound {
		t.Errorf("GET /otc/nope: %d", status)
	}
}

// fakeBackend serves one function, "f" of toolkit "Fake" 2.0, and fails
// every call with err.
type fakeBackend struct{ err error }

var fakeFn = &opentool.Function{Name: "f-1", Description: "F.", Parameters: []opentool.Parameter{}}

func (f *fakeBackend) Call(context.Context, string, []byte) ([]byte, error) { return nil, f.err }
func (f *fakeBackend) StreamCall(context.Context, *core.Exchange, string, []byte, func([]byte) error) error {
	return f.err
}
func (f *fakeBackend) Functions() []host.FunctionInfo {
	return []host.FunctionInfo{{Plugin: "fake", Function: fakeFn, Info: opentool.Info{Title: "fake tools!", Version: "2.0+b1"}}}
}
func (f *fakeBackend) Plugins() []supervise.PluginStatus { return nil }
func (f *fakeBackend) ToolSearchThreshold() int          { return 0 }

// TestErrorMapping checks how each host failure reaches the client:
// transient ones may be retried.
func TestErrorMapping(t *testing.T) {
	tests := []struct {
		err        error
		message    string
		canRetry   bool
		retryAfter int64
	}{
		{&core.Error{Kind: core.KindBusy, Plugin: "fake", Message: "busy: 64 calls in flight"}, "The tool is busy", true, 1000},
		{&core.Error{Kind: core.KindTimeout, Plugin: "fake", Message: "the call timed out"}, "timed out", true, 0},
		{&core.Error{Kind: core.KindExited, Plugin: "fake", Status: "signal: killed", Message: "the plugin exited"}, "stopped unexpectedly", true, 1000},
		{&core.Error{Kind: core.KindStopped, Plugin: "fake", Message: "removed"}, "being replaced or stopped", true, 1000},
		{&core.Error{Kind: core.KindFailed, Plugin: "fake", Message: "failed"}, "unavailable", false, 0},
		{&core.Error{Kind: core.KindTool, Plugin: "fake", Code: 400, Message: "bad b"}, "bad b", false, 0},
		{&core.Error{Kind: core.KindNotFound, Function: "f-1", Message: "not served"}, "not served any more", false, 0},
		{&core.Error{Kind: core.KindResultRejected, Plugin: "fake", Message: "not one JSON object"}, "invalid result", false, 0},
		{&core.Error{Kind: core.KindNeedsLogin, Plugin: "fake", Message: "needs your login", Login: "https://as.example/authorize?x=1"}, "Log in first, then call again: https://as.example/authorize?x=1", true, 0},
		{errors.New("something odd"), "The tool failed.", false, 0},
	}
	for _, tc := range tests {
		t.Run(tc.err.Error(), func(t *testing.T) {
			base := serveOTC(t, otc.New(&fakeBackend{err: tc.err}, otc.Config{Logger: testkit.Logger(t)}))
			status, r, raw := call(t, base, `{"request":{"call_id":"1","tool_id":"FakeTools.f_1@2.0_b1"}}`)
			if status != 200 || r.Success || r.Output == nil || r.Output.Error == nil {
				t.Fatalf("HTTP %d %s", status, raw)
			}
			e := r.Output.Error
			if !strings.Contains(e.Message, tc.message) || e.CanRetry != tc.canRetry || e.RetryAfterMs != tc.retryAfter {
				t.Errorf("error %+v\nwant message ~%q can_retry %v retry_after_ms %d", e, tc.message, tc.canRetry, tc.retryAfter)
			}
			if e.DeveloperMessage != tc.err.Error() && !strings.Contains(e.DeveloperMessage, "bad b") {
				t.Errorf("developer_message = %q, want the error chain %q", e.DeveloperMessage, tc.err.Error())
			}
		})
	}
	// The version as the document writes it resolves too.
	base := serveOTC(t, otc.New(&fakeBackend{err: &core.Error{Kind: core.KindTimeout, Message: "the call timed out"}}, otc.Config{}))
	if _, r, raw := call(t, base, `{"request":{"call_id":"1","tool_id":"FakeTools.f_1@2.0+b1"}}`); r.Output.Error == nil || !strings.Contains(r.Output.Error.Message, "timed out") {
		t.Errorf("raw version: %s", raw)
	}
	_, body := do(t, http.MethodGet, base+"/otc/tools", "", "")
	if !strings.Contains(body, `"id":"FakeTools.f_1@2.0_b1","name":"f-1"`) || !strings.Contains(body, `"toolkit":{"name":"FakeTools","description":"","version":"2.0+b1"}`) {
		t.Errorf("tools: %s", body)
	}
}

func TestToolkitName(t *testing.T) {
	for in, want := range map[string]string{
		"CRUD API for mock": "CRUDAPIForMock",
		"Weather Example":   "WeatherExample",
		"calculator":        "Calculator",
		"weather-tools v2":  "WeatherToolsV2",
		"my_tools":          "MyTools",
		"天气":                "",
		"":                  "",
	} {
		if got := otc.ToolkitName(in); got != want {
			t.Errorf("ToolkitName(%q) = %q, want %q", in, got, want)
		}
	}
}

// serveOTC serves s's routes (as the front door's route table has them)
// on 127.0.0.1 and returns the base URL.
func serveOTC(t *testing.T, s *otc.Server) string {
	return testkit.Serve(t, route.Mux(s.Routes()))
}
