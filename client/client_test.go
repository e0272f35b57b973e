package client_test

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

	"github.com/opentool-host/opentool-host/client"
	"github.com/opentool-host/opentool-host/frontend/frontdoor"
	"github.com/opentool-host/opentool-host/frontend/opentoolapi"
	"github.com/opentool-host/opentool-host/testkit"
)

// startMockServer starts a real host serving the mock plugin behind the
// HTTP API (with the given API keys) and returns its OpenTool base URL.
func startMockServer(t *testing.T, keys ...string) string {
	t.Helper()
	h := testkit.StartHost(t, nil, "./plugins/mock")
	api := opentoolapi.New(h, opentoolapi.Config{Version: "1.2.3", Logger: testkit.Logger(t)})
	return testkit.Serve(t, frontdoor.KeyedHandler(keys, api.Routes()...)) + opentoolapi.BasePath
}

// testCtx is bounded so that a hung server fails the test.
func testCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return ctx
}

func mustCall(t *testing.T, c *client.Client, name string, args map[string]any) map[string]any {
	t.Helper()
	ret, err := c.Call(testCtx(t), client.FunctionCall{ID: "id-" + name, Name: name, Arguments: args})
	if err != nil {
		t.Fatalf("%s(%v): %v", name, args, err)
	}
	if ret.ID != "id-"+name {
		t.Errorf("%s: ToolReturn.ID %q, want %q", name, ret.ID, "id-"+name)
	}
	return ret.Result
}

func TestClientMockCRUD(t *testing.T) {
	c := client.New(client.WithBaseURL(startMockServer(t) + "/"))
	ctx := testCtx(t)

	v, err := c.Version(ctx)
	if err != nil || v.Version != "1.2.3" {
		t.Fatalf("Version: %+v, %v", v, err)
	}
	doc, err := c.Load(ctx)
	if err != nil {
		t.Fatalf("Load: %v", err)
	}
	if doc == nil || doc.Function("sequentiallyRead") == nil || !doc.Function("sequentiallyRead").IsStream() || doc.Function("count") == nil {
		t.Fatalf("Load: %+v", doc)
	}

	if got := mustCall(t, c, "count", nil); got["count"] != float64(2) {
		t.Errorf("count %v, want 2", got)
	}
	if got := mustCall(t, c, "create", map[string]any{"text": "Go"}); got["id"] != float64(2) {
		t.Errorf("create %v, want id 2", got)
	}
	if got := mustCall(t, c, "read", map[string]any{"id": 2}); got["text"] != "Go" {
		t.Errorf("read %v, want Go", got)
	}
	if got := mustCall(t, c, "update", map[string]any{"id": 2, "text": "Gopher"}); got["result"] != "Update successfully." {
		t.Errorf("update %v", got)
	}
	if got := mustCall(t, c, "read", map[string]any{"id": 2}); got["text"] != "Gopher" {
		t.Errorf("read after update %v, want Gopher", got)
	}
	if got := mustCall(t, c, "delete", map[string]any{"id": 0}); got["result"] != "Delete successfully." {
		t.Errorf("delete %v", got)
	}
	if got := mustCall(t, c, "count", map[string]any{}); got["count"] != float64(2) {
		t.Errorf("count after delete %v, want 2", got)
	}

	// An empty ID is generated.
	ret, err := c.Call(ctx, client.FunctionCall{Name: "count"})
	if err != nil {
		t.Fatal(err)
	}
	if !regexp.MustCompile(`^[0-9a-f]{32}$`).MatchString(ret.ID) {
		t.Errorf("generated id %q, want 32 hex digits", ret.ID)
	}
}

func TestClientCallErrors(t *testing.T) {
	c := client.New(client.WithBaseURL(startMockServer(t)))
	ctx := testCtx(t)

	_, err := c.Call(ctx, client.FunctionCall{Name: "run"})
	var ce *client.CallError
	if !errors.As(err, &ce) {
		t.Fatalf("run: %v (%T), want *CallError", err, err)
	}
	if ce.Code != 500 || ce.Message != "run failed: the mock tool's run always fails" || ce.Status != http.StatusOK {
		t.Errorf("run: %+v", ce)
	}
	if b, _ := json.Marshal(ce); string(b) != `{"code":500,"message":"run failed: the mock tool's run always fails"}` {
		t.Errorf("CallError JSON %s", b)
	}

	_, err = c.Call(ctx, client.FunctionCall{Name: "read", Arguments: map[string]any{"id": 7}})
	if !errors.As(err, &ce) || ce.Code != 400 || !strings.Contains(ce.Message, "out of range") {
		t.Errorf("read 7: %v", err)
	}
	_, err = c.Call(ctx, client.FunctionCall{Name: "nope"})
	if !errors.As(err, &ce) || ce.Code != -32601 {
		t.Errorf("nope: %v, want CallError -32601", err)
	}
	_, err = c.Call(ctx, client.FunctionCall{Name: "sequentiallyRead"})
	if !errors.As(err, &ce) || ce.Code != -32600 || !strings.Contains(ce.Message, "streams; use streamCall") {
		t.Errorf("sequentiallyRead on Call: %v, want CallError -32600 saying it streams", err)
	}
	if _, err := c.Call(ctx, client.FunctionCall{}); err == nil || !strings.Contains(err.Error(), "Name is empty") {
		t.Errorf("empty name: %v", err)
	}
	if _, err := c.Call(ctx, client.FunctionCall{Name: "create", Arguments: map[string]any{"text": func() {}}}); err == nil {
		t.Error("unencodable argument: no error")
	}
}

func TestClientAuth(t *testing.T) {
	base := startMockServer(t, "k1", "k2")
	ctx := testCtx(t)
	for _, c := range []*client.Client{client.New(client.WithBaseURL(base)), client.New(client.WithBaseURL(base), client.WithAPIKey("wrong"))} {
		checks := map[string]error{}
		_, checks["Version"] = c.Version(ctx)
		_, checks["Call"] = c.Call(ctx, client.FunctionCall{Name: "count"})
		_, checks["Load"] = c.Load(ctx)
		checks["StreamCall"] = c.StreamCall(ctx, client.FunctionCall{Name: "sequentiallyRead"}, func(client.ToolReturn) error { return nil })
		for name, err := range checks {
			var ue *client.UnauthorizedError
			if !errors.As(err, &ue) {
				t.Errorf("%s without a valid key: %v (%T), want *UnauthorizedError", name, err, err)
			}
		}
	}
	c := client.New(client.WithBaseURL(base), client.WithAPIKey("k2"))
	if v, err := c.Version(ctx); err != nil || v.Version != "1.2.3" {
		t.Errorf("Version with a key: %+v, %v", v, err)
	}
	if got, err := c.Call(ctx, client.FunctionCall{Name: "count"}); err != nil || got.Result["count"] != float64(2) {
		t.Errorf("count with a key: %+v, %v", got, err)
	}
}

func TestClientNoAccess(t *testing.T) {
	ctx := testCtx(t)
	// Nothing listens on a just-freed port.
	c := client.New(client.WithBaseURL("http://" + testkit.FreeAddr(t) + "/opentool"))
	checks := map[string]error{}
	_, checks["Version"] = c.Version(ctx)
	_, checks["Call"] = c.Call(ctx, client.FunctionCall{Name: "count"})
	_, checks["Load"] = c.Load(ctx)
	checks["StreamCall"] = c.StreamCall(ctx, client.FunctionCall{Name: "x"}, func(client.ToolReturn) error { return nil })
	for name, err := range checks {
		var ne *client.NoAccessError
		if !errors.As(err, &ne) || ne.Err == nil || ne.Status != 0 {
			t.Errorf("%s on a closed port: %v (%T), want *NoAccessError with the cause", name, err, err)
		}
	}

	// A wrong base path gives 404.
	wrong := client.New(client.WithBaseURL(startMockServer(t) + "/wrong"))
	_, err := wrong.Version(ctx)
	var ne *client.NoAccessError
	if !errors.As(err, &ne) || ne.Status != http.StatusNotFound {
		t.Errorf("wrong base path: %v, want *NoAccessError with status 404", err)
	}
	if b, _ := json.Marshal(ne); string(b) != `{"code":404,"message":"Please check OpenTool Server is RUNNING or NOT"}` {
		t.Errorf("NoAccessError JSON %s", b)
	}
}

// fakeServer serves h and returns a client of it.
func fakeServer(t *testing.T, h http.HandlerFunc) *client.Client {
	return client.New(client.WithBaseURL(testkit.Serve(t, h) + "/opentool"))
}

func TestClientOddResponses(t *testing.T) {
	ctx := testCtx(t)
	reply := func(status int, ct, body string) *client.Client {
		return fakeServer(t, func(w http.ResponseWriter, _ *http.Request) {
			if ct != "" {
				w.Header().Set("Content-Type", ct)
			}
			w.WriteHeader(status)
			_, _ = w.Write([]byte(body))
		})
	}

	var rn *client.ResponseNullError
	if _, err := reply(200, "application/json", "").Call(ctx, client.FunctionCall{Name: "f"}); !errors.As(err, &rn) || rn.Code != 200 {
		t.Errorf("empty body: %v, want *ResponseNullError", err)
	}
	var en *client.ErrorNullError
	if _, err := reply(200, "application/json", `{"jsonrpc":"2.0","result":null,"error":null,"id":"x"}`).Call(ctx, client.FunctionCall{Name: "f"}); !errors.As(err, &en) || en.Code != 200 {
		t.Errorf("no result, no error: %v, want *ErrorNullError", err)
	}
	var ce *client.CallError
	_, err := reply(500, "text/html", "<h1>proxy down</h1>").Call(ctx, client.FunctionCall{Name: "f"})
	if !errors.As(err, &ce) || ce.Code != 500 || ce.Status != 500 || ce.Message != "HTTP 500 Internal Server Error: <h1>proxy down</h1>" {
		t.Errorf("HTTP 500 page: %v, want *CallError code 500", err)
	}
	_, err = reply(413, "application/json", `{"jsonrpc":"2.0","result":{},"error":{"code":-32600,"message":"too big"},"id":null}`).Call(ctx, client.FunctionCall{Name: "f"})
	if !errors.As(err, &ce) || ce.Code != -32600 || ce.Status != 413 || ce.Message != "too big" {
		t.Errorf("HTTP 413: %v, want *CallError -32600", err)
	}
	if _, err := reply(200, "application/json", `{"result":[1]}`).Call(ctx, client.FunctionCall{Name: "f"}); err == nil || !strings.Contains(err.Error(), "not a JSON object") {
		t.Errorf("array result: %v", err)
	}
	for _, body := range []string{"{}", " { } ", "null", ""} {
		if doc, err := reply(200, "application/json", body).Load(ctx); doc != nil || err != nil {
			t.Errorf("Load of %q: %v, %v; want nil, nil", body, doc, err)
		}
	}
	if _, err := reply(200, "application/json", `{"opentool":"1.0.0"}`).Load(ctx); err == nil || !strings.Contains(err.Error(), "invalid") {
		t.Errorf("Load of an invalid document: %v", err)
	}

	// The context bounds a call to a server that never answers.
	hung := fakeServer(t, func(_ http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body) // then net/http notices the client leaving
		<-r.Context().Done()
	})
	short, cancel := context.WithTimeout(ctx, 50*time.Millisecond)
	defer cancel()
	if _, err := hung.Call(short, client.FunctionCall{Name: "f"}); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("hung server: %v, want context.DeadlineExceeded", err)
	}
}

func TestClientSendsReferenceRequest(t *testing.T) {
	var got struct {
		method, path, ct, auth, accept string
		body                           map[string]any
	}
	c := client.New(client.WithAPIKey("secret"), client.WithBaseURL(testkit.Serve(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got.method, got.path = r.Method, r.URL.Path
		got.ct, got.auth, got.accept = r.Header.Get("Content-Type"), r.Header.Get("Authorization"), r.Header.Get("Accept")
		_ = json.NewDecoder(r.Body).Decode(&got.body)
		_, _ = w.Write([]byte(`{"jsonrpc":"2.0","result":{"ok":true},"id":"c-1"}`))
	}))+"/opentool"))
	ret, err := c.Call(testCtx(t), client.FunctionCall{ID: "c-1", Name: "f", Arguments: map[string]any{"a": 1}})
	if err != nil || ret.ID != "c-1" || ret.Result["ok"] != true {
		t.Fatalf("Call: %+v, %v", ret, err)
	}
	b, _ := json.Marshal(got.body)
	if got.method != "POST" || got.path != "/opentool/call" || got.ct != "application/json" || got.auth != "Bearer secret" || got.accept != "application/json" ||
		string(b) != `{"id":"c-1","jsonrpc":"2.0","method":"f","params":{"a":1}}` {
		t.Errorf("request: %+v body %s", got, b)
	}
}

func TestFunctionCallToolReturnJSON(t *testing.T) {
	fc := client.FunctionCall{ID: "callId-0", Name: "read", Arguments: map[string]any{"id": float64(1)}}
	b, err := json.Marshal(fc)
	if err != nil || string(b) != `{"id":"callId-0","name":"read","arguments":{"id":1}}` {
		t.Fatalf("FunctionCall JSON %s, %v", b, err)
	}
	back, err := client.FunctionCallFromJSON(b)
	if err != nil || back.ID != fc.ID || back.Name != fc.Name || back.Arguments["id"] != float64(1) {
		t.Errorf("FunctionCall round trip: %+v, %v", back, err)
	}
	if b, _ := json.Marshal(client.FunctionCall{Name: "count"}); string(b) != `{"id":"","name":"count","arguments":{}}` {
		t.Errorf("nil arguments: %s", b)
	}
	if fc, err := client.FunctionCallFromJSON([]byte(`{"id":"x","name":"count"}`)); err != nil || fc.Arguments == nil {
		t.Errorf("missing arguments: %+v, %v", fc, err)
	}
	if _, err := client.FunctionCallFromJSON([]byte(`{"id":"x"}`)); err == nil {
		t.Error("FunctionCall without name: no error")
	}

	tr := client.ToolReturn{ID: "callId-0", Result: map[string]any{"text": "World"}}
	b, err = json.Marshal(tr)
	if err != nil || string(b) != `{"id":"callId-0","result":{"text":"World"}}` {
		t.Fatalf("ToolReturn JSON %s, %v", b, err)
	}
	trBack, err := client.ToolReturnFromJSON(b)
	if err != nil || trBack.ID != tr.ID || trBack.Result["text"] != "World" {
		t.Errorf("ToolReturn round trip: %+v, %v", trBack, err)
	}
	if b, _ := json.Marshal(client.ToolReturn{ID: "x"}); string(b) != `{"id":"x","result":{}}` {
		t.Errorf("nil result: %s", b)
	}
	if _, err := client.ToolReturnFromJSON([]byte(`[`)); err == nil {
		t.Error("bad ToolReturn JSON: no error")
	}
}

func TestErrorsJSON(t *testing.T) {
	for _, tc := range []struct {
		err  error
		want string
	}{
		{&client.ResponseNullError{Code: 200}, `{"code":200,"message":"Response is null"}`},
		{&client.ErrorNullError{Code: 200}, `{"code":200,"message":"Error is null"}`},
		{&client.UnauthorizedError{}, `{"code":401,"message":"Please check API Key is VALID or NOT"}`},
		{&client.NoAccessError{Err: errors.New("refused")}, `{"code":404,"message":"Please check OpenTool Server is RUNNING or NOT"}`},
		{&client.CallError{Code: 500, Message: "boom", Status: 200}, `{"code":500,"message":"boom"}`},
	} {
		b, err := json.Marshal(tc.err)
		if err != nil || string(b) != tc.want {
			t.Errorf("%T: %s, %v; want %s", tc.err, b, err, tc.want)
		}
		if tc.err.Error() == "" {
			t.Errorf("%T: empty Error()", tc.err)
		}
	}
	cause := errors.New("dial tcp: connection refused")
	if err := error(&client.NoAccessError{Err: cause}); !errors.Is(err, cause) || !strings.Contains(err.Error(), "RUNNING or NOT: dial tcp") {
		t.Errorf("NoAccessError %q does not wrap its cause", err)
	}
}
