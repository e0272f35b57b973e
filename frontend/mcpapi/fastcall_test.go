package mcpapi_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/opentool-host/opentool-host/declared"
	"github.com/opentool-host/opentool-host/frontend/mcpapi"
	"github.com/opentool-host/opentool-host/host/core"
	"github.com/opentool-host/opentool-host/host/tasks"
	"github.com/opentool-host/opentool-host/testkit"
)

// sessionsV is the mode of a session of 2025-11-25.
var sessionsV = mode{"sessions", "/sessions" + mcpapi.Path, "2025-11-25"}

// quiet is a client that declares no capability: nothing can be asked of
// it during a call.
var quiet = &mcp.ClientOptions{Capabilities: &mcp.ClientCapabilities{}}

// TestFastCallTaken: a session's tools/call without a task is answered
// by the host itself (the counter moves by one per call), from a client
// that declares no capability and from one that declares roots (the Go
// SDK client's default), with application/json when the call sends
// nothing but its response, and with the result the SDK gives the same
// call (structuredContent, isError and _meta, a JSON-RPC error); a
// cancelled one ends in the plugin. Before, the host answered no call of
// a client with roots.
func TestFastCallTaken(t *testing.T) {
	r := newRig(t, nil, mcpapi.Config{}, examples...)
	if !mcpapi.FastPath(r.sessions) {
		t.Skip("the SDK as released has no HoldSession (patches/go-sdk 0011, 0012): every call goes to the SDK")
	}
	slow := r.connect(t, sessionsV, experimental) // the SDK answers
	for name, opts := range map[string]*mcp.ClientOptions{"no capability": quiet, "roots": nil} {
		t.Run(name, func(t *testing.T) {
			rec := &postRecorder{}
			fast := connectWith(t, &mcp.StreamableClientTransport{Endpoint: r.url + sessionsV.endpoint, HTTPClient: &http.Client{Transport: rec}, MaxRetries: -1}, sessionsV.protocol, opts)
			for _, c := range []struct {
				tool string
				args any
			}{
				{"add", map[string]any{"a": 2, "b": 3}},
				{"add", map[string]any{"a": "x"}},          // invalid params: isError
				{"divide", map[string]any{"a": 1, "b": 0}}, // a tool's error: isError with _meta
				{"nosuchtool", map[string]any{}},           // -32602
				{"sleep", map[string]any{"ms": 1}},
			} {
				before := mcpapi.FastCalls(r.sessions)
				got, gerr := fast.CallTool(context.Background(), &mcp.CallToolParams{Name: c.tool, Arguments: c.args})
				if n := mcpapi.FastCalls(r.sessions) - before; n != 1 {
					t.Errorf("%s: %d calls answered by the host, want 1", c.tool, n)
				}
				if ct, _ := rec.last(); ct != "application/json" {
					t.Errorf("%s: answered with Content-Type %q, want application/json", c.tool, ct)
				}
				before = mcpapi.FastCalls(r.sessions)
				want, werr := slow.CallTool(context.Background(), &mcp.CallToolParams{Name: c.tool, Arguments: c.args})
				if n := mcpapi.FastCalls(r.sessions) - before; n != 0 {
					t.Errorf("%s by a client with an experimental capability: %d calls answered by the host, want 0 (the SDK)", c.tool, n)
				}
				if g, w := errText(gerr), errText(werr); g != w {
					t.Errorf("%s: error %q, the SDK's %q", c.tool, g, w)
				}
				if g, w := mustJSON(t, got), mustJSON(t, want); g != w {
					t.Errorf("%s: result %s, the SDK's %s", c.tool, g, w)
				}
			}
			before := mcpapi.FastCalls(r.sessions)
			checkCancel(t, fast)
			if mcpapi.FastCalls(r.sessions) == before {
				t.Error("the cancelled call was not answered by the host")
			}
		})
	}
}

// experimental is a client that declares an experimental capability: its
// calls go to the SDK.
var experimental = &mcp.ClientOptions{Capabilities: &mcp.ClientCapabilities{Experimental: map[string]any{"x-test": map[string]any{}}}}

// postRecorder is an HTTP transport with the API key that keeps the
// Content-Type and the body of each POST's successful response.
type postRecorder struct {
	mu    sync.Mutex
	types []string
	// bodies: each as far as the client has read it.
	bodies []*bytes.Buffer
}

// RoundTrip implements http.RoundTripper.
func (p *postRecorder) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := keyTransport{}.RoundTrip(req)
	if err != nil || req.Method != http.MethodPost || resp.StatusCode != http.StatusOK {
		return resp, err
	}
	b := &lockedBuffer{mu: &p.mu}
	p.mu.Lock()
	p.types = append(p.types, resp.Header.Get("Content-Type"))
	p.bodies = append(p.bodies, &b.buf)
	p.mu.Unlock()
	resp.Body = struct {
		io.Reader
		io.Closer
	}{io.TeeReader(resp.Body, b), resp.Body}
	return resp, nil
}

// last returns the Content-Type and the body read of the last POST.
func (p *postRecorder) last() (string, string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if len(p.types) == 0 {
		return "", ""
	}
	return p.types[len(p.types)-1], p.bodies[len(p.bodies)-1].String()
}

// lockedBuffer is a buffer written under mu.
type lockedBuffer struct {
	mu  *sync.Mutex
	buf bytes.Buffer
}

// Write implements io.Writer.
func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

// TestFastCallRelated: a call the host answers itself whose tool (a
// declared MCP server's, examples/mcp-notes --rich) sends progress and
// log messages, or asks the client for elicitation, sampling and roots,
// gets them on its own POST's event stream before the response, as the
// SDK sends them (the same messages in the same order as for a client
// whose calls the SDK answers), and the client's answers reach the tool.
// Before, the host answered no call of such a client.
func TestFastCallRelated(t *testing.T) {
	r := notesRig(t)
	if !mcpapi.FastPath(r.sessions) {
		t.Skip("the SDK as released has no HoldSession (patches/go-sdk 0011, 0012): every call goes to the SDK")
	}
	var stream [2][]string // the methods on each client's call's stream
	for i, caps := range []*mcp.ClientCapabilities{nil, {Experimental: map[string]any{"x-test": map[string]any{}}}} {
		var mu sync.Mutex
		var heard []string // the notifications the client handled
		note := func(what string) {
			mu.Lock()
			defer mu.Unlock()
			heard = append(heard, what)
		}
		rec := &postRecorder{}
		c := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "1"}, &mcp.ClientOptions{
			Capabilities: caps,
			ElicitationHandler: func(context.Context, *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
				return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"answer": "yes"}}, nil
			},
			CreateMessageHandler: func(context.Context, *mcp.CreateMessageRequest) (*mcp.CreateMessageResult, error) {
				return &mcp.CreateMessageResult{Model: "m", Role: "assistant", Content: &mcp.TextContent{Text: "sampled"}}, nil
			},
			ProgressNotificationHandler: func(context.Context, *mcp.ProgressNotificationClientRequest) { note("progress") },
			LoggingMessageHandler:       func(context.Context, *mcp.LoggingMessageRequest) { note("log") },
		})
		c.AddRoots(&mcp.Root{URI: "file:///work", Name: "work"})
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		cs, err := c.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: r.url + sessionsV.endpoint, HTTPClient: &http.Client{Transport: rec}, MaxRetries: -1}, &mcp.ClientSessionOptions{ProtocolVersion: sessionsV.protocol})
		if err != nil {
			t.Fatal(err)
		}
		defer cs.Close()
		if err := cs.SetLoggingLevel(ctx, &mcp.SetLoggingLevelParams{Level: "info"}); err != nil {
			t.Fatal(err)
		}
		fast := i == 0
		taken := func(what string, do func()) (string, string) {
			t.Helper()
			before := mcpapi.FastCalls(r.sessions)
			do()
			if n, want := mcpapi.FastCalls(r.sessions)-before, map[bool]int64{true: 1}[fast]; n != want {
				t.Errorf("%s (fast %v): %d calls answered by the host, want %d", what, fast, n, want)
			}
			return rec.last()
		}
		p := &mcp.CallToolParams{Name: "steps", Arguments: map[string]any{"n": 2}}
		p.SetProgressToken("p1")
		ct, body := taken("steps", func() {
			if res, err := cs.CallTool(ctx, p); err != nil || res.IsError || text(res) != "done 2" {
				t.Errorf("steps: %v, %v", res, err)
			}
		})
		if ct != "text/event-stream" {
			t.Errorf("steps (fast %v): Content-Type %q, want text/event-stream", fast, ct)
		}
		stream[i] = append(stream[i], streamMethods(t, body)...)
		testkit.Eventually(t, 10*time.Second, "the client handles 2 progress and 2 log notifications", func() bool {
			mu.Lock()
			defer mu.Unlock()
			return len(heard) >= 4
		})
		ct, body = taken("ask", func() {
			res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "ask", Arguments: map[string]any{"question": "ok?"}})
			if err != nil || res.IsError {
				t.Fatalf("ask: %v, %v", res, err)
			}
			if got := mustJSON(t, res.StructuredContent); got != `{"action":"accept","answer":"yes","model":"m","roots":["file:///work"],"sample":"sampled"}` {
				t.Errorf("ask (fast %v): %s, want the client's answers", fast, got)
			}
		})
		if ct != "text/event-stream" {
			t.Errorf("ask (fast %v): Content-Type %q, want text/event-stream", fast, ct)
		}
		stream[i] = append(stream[i], streamMethods(t, body)...)
	}
	want := "notifications/message,notifications/progress,notifications/message,notifications/progress,response," +
		"elicitation/create,sampling/createMessage,roots/list,response"
	if got := strings.Join(stream[0], ","); got != want {
		t.Errorf("the host's streams: %s, want %s", got, want)
	}
	if got := strings.Join(stream[1], ","); got != want {
		t.Errorf("the SDK's streams: %s, want %s", got, want)
	}
}

// streamMethods returns the methods of the messages of an event stream
// body as the SDK writes it (every event "event: message" with one data
// line), "response" for a response, which must be the last.
func streamMethods(t *testing.T, body string) []string {
	t.Helper()
	var out []string
	for _, ev := range strings.SplitAfter(body, "\n\n") {
		if ev == "" {
			continue
		}
		data, ok := strings.CutPrefix(ev, "event: message\ndata: ")
		if !ok || !strings.HasSuffix(data, "\n\n") {
			t.Fatalf("event %q is not one message event as the SDK writes it", ev)
		}
		var m struct {
			Method string `json:"method"`
		}
		if err := json.Unmarshal([]byte(data), &m); err != nil {
			t.Fatalf("event %q: %v", ev, err)
		}
		if len(out) > 0 && out[len(out)-1] == "response" {
			t.Fatalf("event %q after the response", ev)
		}
		if m.Method == "" {
			m.Method = "response"
		}
		out = append(out, m.Method)
	}
	return out
}

func errText(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

// TestFastCallFallbacks: every call the host cannot answer in the SDK's
// terms goes to the SDK: a task, a trace context beside another _meta
// member, a client that declares an experimental capability or an
// extension, a standard Mcp-Name header, no MCP-Protocol-Version header.
func TestFastCallFallbacks(t *testing.T) {
	r := newRig(t, nil, mcpapi.Config{}, examples...)
	add := map[string]any{"a": 1, "b": 2}
	sdk := func(t *testing.T, what string, do func()) {
		t.Helper()
		before := mcpapi.FastCalls(r.sessions)
		do()
		if n := mcpapi.FastCalls(r.sessions) - before; n != 0 {
			t.Errorf("%s: %d calls answered by the host, want 0 (the SDK)", what, n)
		}
	}
	cs := r.connect(t, sessionsV, quiet)
	sdk(t, "other _meta", func() {
		if _, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "add", Arguments: add, Meta: mcp.Meta{"traceparent": "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01", "x": 1}}); err != nil {
			t.Fatal(err)
		}
	})
	for name, opts := range map[string]*mcp.ClientOptions{
		"experimental": experimental,
		"extension":    {Capabilities: &mcp.ClientCapabilities{Extensions: map[string]any{"x-test": map[string]any{}}}},
	} {
		c := r.connect(t, sessionsV, opts)
		sdk(t, name, func() { ok(t, call(t, c, "add", add)) })
	}

	// Raw POSTs on a quiet session: the host answers the plain one only.
	sid := cs.ID()
	body := `{"jsonrpc":"2.0","id":9,"method":"tools/call","params":{"name":"add","arguments":{"a":1,"b":2}}}`
	postRaw := func(hdr map[string]string, body string) string {
		t.Helper()
		req, _ := http.NewRequest(http.MethodPost, r.url+sessionsV.endpoint, strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		req.Header.Set("Authorization", "Bearer "+apiKey)
		req.Header.Set("Mcp-Session-Id", sid)
		for k, v := range hdr {
			if v == "" {
				req.Header.Del(k)
			} else {
				req.Header.Set(k, v)
			}
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return string(b)
	}
	v := map[string]string{"Mcp-Protocol-Version": "2025-11-25"}
	before := mcpapi.FastCalls(r.sessions)
	if out := postRaw(v, body); !strings.Contains(out, `"structuredContent":{"result":3}`) {
		t.Errorf("plain POST: %s", out)
	}
	if n, want := mcpapi.FastCalls(r.sessions)-before, map[bool]int64{true: 1}[mcpapi.FastPath(r.sessions)]; n != want {
		t.Errorf("plain POST: %d calls answered by the host, want %d", n, want)
	}
	sdk(t, "Mcp-Name header", func() {
		postRaw(map[string]string{"Mcp-Protocol-Version": "2025-11-25", "Mcp-Name": "add"}, body)
	})
	sdk(t, "no MCP-Protocol-Version", func() { postRaw(nil, body) })
	sdk(t, "a task", func() {
		postRaw(v, `{"jsonrpc":"2.0","id":10,"method":"tools/call","params":{"name":"add","arguments":{"a":1,"b":2},"task":{"ttl":1000}}}`)
	})
	sdk(t, "another session's id", func() {
		postRaw(map[string]string{"Mcp-Protocol-Version": "2025-11-25", "Mcp-Session-Id": "nosuchsession"}, body)
	})
}

// TestFastCallEndsWithItsSession: a call the host answers itself ends in
// the plugin when its session is deleted while it runs, as the SDK ends
// the calls it holds.
func TestFastCallEndsWithItsSession(t *testing.T) {
	checkFastCallEnds(t, func(r *rig, cs *mcp.ClientSession) {
		req, _ := http.NewRequest(http.MethodDelete, r.url+sessionsV.endpoint, nil)
		req.Header.Set("Authorization", "Bearer "+apiKey)
		req.Header.Set("Mcp-Session-Id", cs.ID())
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
	})
}

// TestFastCallEndsAtShutdown: a call the host answers itself (whose
// context is not its POST's) ends in the plugin when the host shuts down
// (Server.Shutdown).
func TestFastCallEndsAtShutdown(t *testing.T) {
	checkFastCallEnds(t, func(r *rig, _ *mcp.ClientSession) { r.s.Shutdown() })
}

// checkFastCallEnds starts a long sleep call that the host answers
// itself (a client with roots), runs end while it runs and checks that
// the plugin sees the call cancelled and that its POST is answered.
func checkFastCallEnds(t *testing.T, end func(*rig, *mcp.ClientSession)) {
	r := newRig(t, nil, mcpapi.Config{}, examples...)
	if !mcpapi.FastPath(r.sessions) {
		t.Skip("the SDK as released has no HoldSession (patches/go-sdk 0011, 0012): every call goes to the SDK")
	}
	watch := r.connect(t, mode{"stateless", mcpapi.Path, "2025-11-25"}, nil)
	_, before := sleeps(t, watch)
	// No standalone GET stream: the shutdown ends those, and the client
	// would then close its session.
	cs := connectWith(t, &mcp.StreamableClientTransport{Endpoint: r.url + sessionsV.endpoint, HTTPClient: &http.Client{Transport: keyTransport{}}, MaxRetries: -1, DisableStandaloneSSE: true}, sessionsV.protocol, nil)
	errc := make(chan error, 1)
	go func() {
		_, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "sleep", Arguments: map[string]any{"ms": 60000}})
		errc <- err
	}()
	testkit.Eventually(t, 10*time.Second, "the sleep call runs in the plugin", func() bool {
		active, _ := sleeps(t, watch)
		return active >= 1
	})
	if mcpapi.FastCalls(r.sessions) == 0 {
		t.Fatal("the sleep call was not answered by the host")
	}
	end(r, cs)
	testkit.Eventually(t, 10*time.Second, "the plugin sees the call cancelled", func() bool {
		active, cancelled := sleeps(t, watch)
		return cancelled > before && active == 0
	})
	select {
	case <-errc:
	case <-time.After(10 * time.Second):
		t.Error("the call's POST was not answered after it ended")
	}
}

// TestFastCallAsMiddleware: a session call the host answers itself gets
// what the host's receiving middleware gives the same call through the
// SDK (a client with an experimental capability): a key calls the tools
// it may call (the calculator's) and a tool it may not is an unknown tool
// (-32602), the grant reaching the call through the POST's context as
// through answerCall's withGrant (which adds the key's name for the audit
// line, which this test does not read); a tool whose function requires a task goes to the SDK, whose
// task middleware refuses it without a task (-32601) to a key that may
// call it.
func TestFastCallAsMiddleware(t *testing.T) {
	tm, err := tasks.NewManager(tasks.Config{After: taskfnsAfter, PollInterval: 100 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(tm.Close)
	r := newRig(t, nil, mcpapi.Config{Tasks: tm}, "./plugins/calculator", "./testkit/plugins/taskfns")
	guard := guardOf(t, calcAndAllKeys)
	h := r.s.Handler(mcpapi.HTTPOptions{Sessions: true})
	if !mcpapi.FastPath(h) {
		t.Skip("the SDK as released has no HoldSession (patches/go-sdk 0011, 0014): every call goes to the SDK")
	}
	mux := http.NewServeMux()
	mux.Handle(mcpapi.Path, h)
	url := testkit.Serve(t, guard.Middleware(mux))
	session := func(key string, opts *mcp.ClientOptions) *mcp.ClientSession {
		tr := &mcp.StreamableClientTransport{Endpoint: url + mcpapi.Path, HTTPClient: &http.Client{Transport: bearer(key)}, MaxRetries: -1}
		return connectWith(t, tr, sessionsV.protocol, opts)
	}
	for _, c := range []struct {
		key, tool string
		args      any
		fast      bool   // answered by the host
		want      string // in the error, "" for none
	}{
		{"calc-key", "add", map[string]any{"a": 2, "b": 3}, true, ""},
		{"calc-key", "never", map[string]any{}, true, `unknown tool "never"`},
		{"all-key", "never", map[string]any{}, true, ""},
		{"all-key", "must", map[string]any{}, false, "method not found"}, // -32601
		{"calc-key", "must", map[string]any{}, false, `unknown tool "must"`},
	} {
		fast, slow := session(c.key, quiet), session(c.key, experimental)
		before := mcpapi.FastCalls(h)
		got, gerr := fast.CallTool(context.Background(), &mcp.CallToolParams{Name: c.tool, Arguments: c.args})
		if n := mcpapi.FastCalls(h) - before; n != map[bool]int64{true: 1, false: 0}[c.fast] {
			t.Errorf("%s by %s: %d calls answered by the host, want answered by the host %v", c.tool, c.key, n, c.fast)
		}
		want, werr := slow.CallTool(context.Background(), &mcp.CallToolParams{Name: c.tool, Arguments: c.args})
		if g, w := errText(gerr), errText(werr); g != w || !strings.Contains(g, c.want) {
			t.Errorf("%s by %s: error %q, the SDK's %q, want one with %q", c.tool, c.key, g, w, c.want)
		}
		if g, w := mustJSON(t, got), mustJSON(t, want); g != w {
			t.Errorf("%s by %s: result %s, the SDK's %s", c.tool, c.key, g, w)
		}
	}
}

// TestFastCallPassesPlainResult: a declared server's plain result (text
// blocks and isError only, mcpresult.Plain) reaches a client whose call
// the host answers itself as the server wrote it, byte for byte (its
// member order, its escapes, its isError false), neither decoded nor
// encoded again; the SDK's path gives the same value re-encoded. A
// result with more than text (structuredContent) is the same value on
// both paths.
func TestFastCallPassesPlainResult(t *testing.T) {
	const plain = `{"content":[{"text":"caf\u00e9 \u003cb\u003e","type":"text"},{"type":"text","text":""}],"isError":false}`
	bin := testkit.Build(t, "./testkit/plugins/verbatimmcp")
	for _, c := range []struct {
		name, result string
		verbatim     bool
	}{
		{"plain", plain, true},
		{"structured", `{"content":[{"text":"{\"a\":1}","type":"text"}],"structuredContent":{"a":1}}`, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			file := filepath.Join(t.TempDir(), "results.json")
			writeFile(t, file, `{"tools/list":{"tools":[{"name":"bare","inputSchema":{"type":"object"}}]},"tools/call":`+c.result+`}`)
			r := newRig(t, func(cfg *core.Config) {
				cfg.Declared = declared.Serve
				d, _ := json.Marshal(map[string]any{"mcpServers": map[string]any{"vp": map[string]any{"command": bin, "args": []string{file}}}})
				writeFile(t, filepath.Join(cfg.Dir, "vp.mcp.json"), string(d))
			}, mcpapi.Config{})
			if !mcpapi.FastPath(r.sessions) {
				t.Skip("the SDK as released has no HoldSession (patches/go-sdk 0011, 0014): every call goes to the SDK")
			}
			results := map[bool]string{}
			for _, fast := range []bool{true, false} {
				caps := `{}`
				if !fast {
					caps = `{"experimental":{"x-test":{}}}` // the SDK answers
				}
				url, headers := rawSessionWith(t, r, sessionsV, caps)
				before := mcpapi.FastCalls(r.sessions)
				results[fast] = string(rawCall(t, url, headers, 7, "tools/call", `{"name":"bare","arguments":{}}`))
				if n, want := mcpapi.FastCalls(r.sessions)-before, map[bool]int64{true: 1}[fast]; n != want {
					t.Errorf("fast %v: %d calls answered by the host, want %d", fast, n, want)
				}
				// A string id, with characters the SDK's encoding escapes,
				// comes back as the same value.
				_, _, raw := mcpRaw(t, url, apiKey, `{"jsonrpc":"2.0","id":"a<b&c","method":"tools/call","params":{"name":"bare","arguments":{}}}`, headers...)
				var resp struct {
					JSONRPC string          `json:"jsonrpc"`
					ID      any             `json:"id"`
					Result  json.RawMessage `json:"result"`
				}
				if err := json.Unmarshal([]byte(raw), &resp); err != nil || resp.JSONRPC != "2.0" || resp.ID != "a<b&c" || string(resp.Result) != results[fast] {
					t.Errorf("fast %v: the call of id \"a<b&c\" answered %s (%v); want that id and the result %s", fast, raw, err, results[fast])
				}
			}
			var fromServer, viaSDK mcp.CallToolResult
			if err := json.Unmarshal([]byte(results[true]), &fromServer); err != nil {
				t.Fatalf("the host's result %s: %v", results[true], err)
			}
			if err := json.Unmarshal([]byte(results[false]), &viaSDK); err != nil {
				t.Fatalf("the SDK's result %s: %v", results[false], err)
			}
			if g, w := mustJSON(t, &fromServer), mustJSON(t, &viaSDK); g != w {
				t.Errorf("the host's result is %s decoded, the SDK's %s", g, w)
			}
			if got := results[true]; c.verbatim && got != c.result {
				t.Errorf("the host's result %s, want the server's own bytes %s", got, c.result)
			}
			if c.verbatim && results[false] == c.result {
				t.Errorf("the SDK's result is the server's bytes %s: the test cannot tell a result passed on from one encoded again", c.result)
			}
		})
	}
}
