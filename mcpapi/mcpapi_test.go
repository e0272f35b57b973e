package mcpapi_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/opentool-host/opentool-host/host"
	"github.com/opentool-host/opentool-host/internal/httpguard"
	"github.com/opentool-host/opentool-host/internal/testutil"
	"github.com/opentool-host/opentool-host/mcpapi"
)

// fixture is a real host (real plugin processes) served at /mcp on
// 127.0.0.1, and an SDK client session to it.
type fixture struct {
	h       *host.Host
	dir     string
	url     string
	cs      *mcp.ClientSession
	changed chan struct{} // one value per tools/list_changed received

	mu       sync.Mutex
	progress []*mcp.ProgressNotificationParams
}

// serve starts a watching host with pkgs, serves it at /mcp behind key
// (none when "") and connects a client.
func serve(t *testing.T, key string, pkgs ...string) *fixture {
	t.Helper()
	f := &fixture{changed: make(chan struct{}, 16)}
	f.h = testutil.StartHost(t, func(c *host.Config) {
		c.Watch = true
		f.dir = c.Dir
	}, pkgs...)
	s := mcpapi.New(f.h, mcpapi.Config{Logger: testutil.Logger(t)})
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	go s.Follow(ctx)
	var keys []string
	if key != "" {
		keys = []string{key}
	}
	mux := http.NewServeMux()
	mux.Handle(mcpapi.Path, httpguard.RequireAPIKey(keys, s.Handler(mcpapi.HTTPOptions{})))
	f.url = testutil.Serve(t, mux) + mcpapi.Path
	f.cs = f.connect(t, &mcp.StreamableClientTransport{Endpoint: f.url, HTTPClient: bearer(key)})
	return f
}

// connect connects an SDK client that records list_changed and progress.
func (f *fixture) connect(t *testing.T, tr mcp.Transport) *mcp.ClientSession {
	t.Helper()
	c := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "1"}, &mcp.ClientOptions{
		ToolListChangedHandler: func(context.Context, *mcp.ToolListChangedRequest) {
			select {
			case f.changed <- struct{}{}:
			default:
			}
		},
		ProgressNotificationHandler: func(_ context.Context, r *mcp.ProgressNotificationClientRequest) {
			f.mu.Lock()
			defer f.mu.Unlock()
			f.progress = append(f.progress, r.Params)
		},
	})
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	cs, err := c.Connect(ctx, tr, nil)
	if err != nil {
		t.Fatalf("connect: %v", err)
	}
	t.Cleanup(func() { _ = cs.Close() })
	return cs
}

// bearer is an HTTP client that sends "Authorization: Bearer key".
func bearer(key string) *http.Client {
	if key == "" {
		return http.DefaultClient
	}
	return &http.Client{Transport: authTransport{key}}
}

type authTransport struct{ key string }

func (a authTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+a.key)
	return http.DefaultTransport.RoundTrip(r)
}

// callTool calls tool name with args (JSON) and returns the result.
func callTool(t *testing.T, cs *mcp.ClientSession, name, args string) *mcp.CallToolResult {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: name, Arguments: json.RawMessage(args)})
	if err != nil {
		t.Fatalf("tools/call %s: %v", name, err)
	}
	return res
}

// structured returns the structured content of a successful result and
// checks that its text block holds the same JSON.
func structured(t *testing.T, res *mcp.CallToolResult) map[string]any {
	t.Helper()
	if res.IsError {
		t.Fatalf("isError result: %s", text(res))
	}
	b, _ := json.Marshal(res.StructuredContent)
	var m, fromText map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatalf("structuredContent %s: %v", b, err)
	}
	if err := json.Unmarshal([]byte(text(res)), &fromText); err != nil || len(fromText) != len(m) {
		t.Fatalf("text block %q does not hold the structured JSON %s", text(res), b)
	}
	return m
}

// text joins the text blocks of res.
func text(res *mcp.CallToolResult) string {
	var parts []string
	for _, c := range res.Content {
		if tc, ok := c.(*mcp.TextContent); ok {
			parts = append(parts, tc.Text)
		}
	}
	return strings.Join(parts, "\n")
}

// tools lists the tools by name.
func tools(t *testing.T, cs *mcp.ClientSession) map[string]*mcp.Tool {
	t.Helper()
	out := map[string]*mcp.Tool{}
	for tool, err := range cs.Tools(context.Background(), nil) {
		if err != nil {
			t.Fatalf("tools/list: %v", err)
		}
		out[tool.Name] = tool
	}
	return out
}

// schemaOf returns a tool's schema as a map.
func schemaOf(t *testing.T, s any) map[string]any {
	t.Helper()
	b, _ := json.Marshal(s)
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	return m
}

func TestToolsListAndCalls(t *testing.T) {
	f := serve(t, "", "./plugins/mock", "./plugins/calculator")
	ts := tools(t, f.cs)
	want := []string{"count", "create", "read", "update", "delete", "run", "sequentiallyRead", "add", "subtract", "multiply", "divide"}
	for _, name := range want {
		if ts[name] == nil {
			t.Errorf("tools/list lacks %s", name)
		}
	}
	if len(ts) != len(want) {
		t.Errorf("tools/list has %d tools, want %d", len(ts), len(want))
	}
	in := schemaOf(t, ts["update"].InputSchema)
	props, _ := in["properties"].(map[string]any)
	if in["type"] != "object" || props["id"] == nil || props["text"] == nil || len(in["required"].([]any)) != 2 {
		t.Errorf("update inputSchema = %v", in)
	}
	if b, _ := json.Marshal(in); strings.Contains(string(b), "$ref") {
		t.Errorf("inputSchema keeps a $ref: %s", b)
	}
	if out := schemaOf(t, ts["add"].OutputSchema); out["type"] != "object" {
		t.Errorf("add outputSchema = %v", out)
	}

	// The mock CRUD round trip and the calculator.
	if got := structured(t, callTool(t, f.cs, "create", `{"text":"Third"}`)); got["id"] != 2.0 {
		t.Fatalf("create = %v", got)
	}
	if got := structured(t, callTool(t, f.cs, "read", `{"id":2}`)); got["text"] != "Third" {
		t.Fatalf("read = %v", got)
	}
	structured(t, callTool(t, f.cs, "update", `{"id":2,"text":"3rd"}`))
	if got := structured(t, callTool(t, f.cs, "read", `{"id":2}`)); got["text"] != "3rd" {
		t.Fatalf("read after update = %v", got)
	}
	structured(t, callTool(t, f.cs, "delete", `{"id":2}`))
	if got := structured(t, callTool(t, f.cs, "count", `{}`)); got["count"] != 2.0 {
		t.Fatalf("count = %v", got)
	}
	if got := structured(t, callTool(t, f.cs, "add", `{"a":1.5,"b":2}`)); got["result"] != 3.5 {
		t.Fatalf("add = %v", got)
	}

	// A tool error (the plugin's 400 and 500) is an isError result.
	if res := callTool(t, f.cs, "divide", `{"a":1,"b":0}`); !res.IsError || !strings.Contains(text(res), "error 400") {
		t.Fatalf("divide by zero = %+v %q", res, text(res))
	}
	if res := callTool(t, f.cs, "run", `{}`); !res.IsError || !strings.Contains(text(res), "error 500") {
		t.Fatalf("run = %q", text(res))
	}
	// Invalid arguments: an isError result naming the fault, as the
	// SDK's typed handlers answer.
	res := callTool(t, f.cs, "add", `{"a":"one"}`)
	if !res.IsError || !strings.Contains(text(res), "invalid params") || !strings.Contains(text(res), "b") {
		t.Fatalf("invalid args = %q", text(res))
	}
	// An unknown tool is the JSON-RPC error -32602.
	_, err := f.cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "nope"})
	var je *jsonrpc.Error
	if !errors.As(err, &je) || je.Code != jsonrpc.CodeInvalidParams {
		t.Fatalf("unknown tool: err = %v", err)
	}
}

func TestAPIKeyRequired(t *testing.T) {
	f := serve(t, "s3cret", "./plugins/calculator")
	if got := structured(t, callTool(t, f.cs, "add", `{"a":1,"b":2}`)); got["result"] != 3.0 {
		t.Fatalf("add with key = %v", got)
	}
	req, _ := http.NewRequest(http.MethodPost, f.url, strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"tools/list"}`))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusUnauthorized {
		t.Fatalf("no key: status %d, want 401", resp.StatusCode)
	}
}

func TestKilledPluginIsErrorThenRecovers(t *testing.T) {
	f := serve(t, "", "./internal/testplugins/faulty")
	pid := int(structured(t, callTool(t, f.cs, "pid", `{}`))["pid"].(float64))
	done := make(chan *mcp.CallToolResult, 1)
	go func() { done <- callTool(t, f.cs, "hang", `{}`) }()
	testutil.Eventually(t, 10*time.Second, "hang in flight", func() bool {
		for _, p := range f.h.Plugins() {
			if p.InFlight > 0 {
				return true
			}
		}
		return false
	})
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	res := <-done
	if !res.IsError || !strings.Contains(text(res), "exited") {
		t.Fatalf("call during SIGKILL = %q", text(res))
	}
	testutil.Eventually(t, 15*time.Second, "next call succeeds", func() bool {
		r := callTool(t, f.cs, "pid", `{}`)
		return !r.IsError
	})
}

func TestDroppedBinarySendsListChanged(t *testing.T) {
	f := serve(t, "", "./plugins/calculator")
	if tools(t, f.cs)["count"] != nil {
		t.Fatal("count served before mock was dropped")
	}
	drain(f.changed)
	dropped := time.Now()
	testutil.InstallPlugin(t, f.dir, "mock", "./plugins/mock")
	waitChanged(t, f, "a binary drop")
	t.Logf("binary drop → tools/list_changed received: %v", time.Since(dropped))
	testutil.Eventually(t, 10*time.Second, "count listed", func() bool { return tools(t, f.cs)["count"] != nil })
	if got := structured(t, callTool(t, f.cs, "count", `{}`)); got["count"] != 2.0 {
		t.Fatalf("count = %v", got)
	}
	drain(f.changed)
	if err := os.Remove(filepath.Join(f.dir, "opentool-plugin-mock")); err != nil {
		t.Fatal(err)
	}
	waitChanged(t, f, "a removal")
	testutil.Eventually(t, 10*time.Second, "count unlisted", func() bool { return tools(t, f.cs)["count"] == nil })
}

// waitChanged waits for a tools/list_changed notification.
func waitChanged(t *testing.T, f *fixture, after string) {
	t.Helper()
	select {
	case <-f.changed:
	case <-time.After(20 * time.Second):
		t.Fatalf("no tools/list_changed within 20s of %s", after)
	}
}

func TestCancellationReachesPlugin(t *testing.T) {
	f := serve(t, "", "./internal/testplugins/faulty")
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		_, err := f.cs.CallTool(ctx, &mcp.CallToolParams{Name: "sleep", Arguments: map[string]any{"ms": 60000}})
		done <- err
	}()
	testutil.Eventually(t, 10*time.Second, "sleep in flight", func() bool {
		return structured(t, callTool(t, f.cs, "sleeps", `{}`))["active"] == 1.0
	})
	cancel()
	if err := <-done; err == nil {
		t.Fatal("cancelled call returned no error")
	}
	testutil.Eventually(t, 10*time.Second, "the plugin saw the cancellation", func() bool {
		s := structured(t, callTool(t, f.cs, "sleeps", `{}`))
		return s["cancelled"] == 1.0 && s["active"] == 0.0
	})
}

func TestStreamCollectedWithProgress(t *testing.T) {
	f := serve(t, "", "./plugins/mock")
	ts := tools(t, f.cs)
	if out := schemaOf(t, ts["sequentiallyRead"].OutputSchema); out["type"] != "object" {
		t.Fatalf("stream tool outputSchema = %v", out)
	}
	res, err := f.cs.CallTool(context.Background(), &mcp.CallToolParams{
		Name: "sequentiallyRead", Arguments: map[string]any{},
		Meta: mcp.Meta{"progressToken": "tok-1"},
	})
	if err != nil {
		t.Fatal(err)
	}
	items, _ := structured(t, res)["items"].([]any)
	if len(items) == 0 {
		t.Fatalf("no items: %q", text(res))
	}
	testutil.Eventually(t, 5*time.Second, "one progress notification per item", func() bool {
		f.mu.Lock()
		defer f.mu.Unlock()
		return len(f.progress) == len(items)
	})
	f.mu.Lock()
	last := f.progress[len(f.progress)-1]
	f.mu.Unlock()
	if last.ProgressToken != "tok-1" || last.Progress != float64(len(items)) || last.Message == "" {
		t.Fatalf("last progress = %+v", last)
	}
}

func TestOldProtocolClientServedStateless(t *testing.T) {
	f := serve(t, "", "./plugins/calculator")
	post := func(body string) (int, string) {
		req, _ := http.NewRequest(http.MethodPost, f.url, strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		req.Header.Set("Mcp-Protocol-Version", "2025-06-18")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var sb strings.Builder
		buf := make([]byte, 4096)
		for {
			n, err := resp.Body.Read(buf)
			sb.Write(buf[:n])
			if err != nil {
				break
			}
		}
		return resp.StatusCode, sb.String()
	}
	code, body := post(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"old","version":"1"}}}`)
	if code != http.StatusOK || !strings.Contains(body, `"protocolVersion":"2025-06-18"`) {
		t.Fatalf("initialize: %d %s", code, body)
	}
	code, body = post(`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"add","arguments":{"a":2,"b":3}}}`)
	if code != http.StatusOK || !strings.Contains(body, `"result":5`) {
		t.Fatalf("tools/call: %d %s", code, body)
	}
}

// drain empties ch.
func drain(ch chan struct{}) {
	for {
		select {
		case <-ch:
		default:
			return
		}
	}
}
