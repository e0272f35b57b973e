package mcpapi_test

import (
	"context"
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/opentool-host/opentool-host/frontend/mcpapi"
	"github.com/opentool-host/opentool-host/testkit"
)

// sessionsV is the mode of a session of 2025-11-25.
var sessionsV = mode{"sessions", "/sessions" + mcpapi.Path, "2025-11-25"}

// quiet is a client that declares no capability: nothing can be asked of
// it during a call.
var quiet = &mcp.ClientOptions{Capabilities: &mcp.ClientCapabilities{}}

// TestFastCallTaken: a session's tools/call from a client that declares
// no capability, without progress, task or log level, is answered by the
// host itself (the counter moves by one per call), with the result the
// SDK gives the same call (structuredContent, isError and _meta, a
// JSON-RPC error), and a cancelled one ends in the plugin.
func TestFastCallTaken(t *testing.T) {
	r := newRig(t, nil, mcpapi.Config{}, examples...)
	if !mcpapi.FastPath(r.sessions) {
		t.Skip("the SDK as released has no HoldSession (patches/go-sdk 0011): every call goes to the SDK")
	}
	fast := r.connect(t, sessionsV, quiet)
	slow := r.connect(t, sessionsV, nil) // roots: the SDK answers
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
		before = mcpapi.FastCalls(r.sessions)
		want, werr := slow.CallTool(context.Background(), &mcp.CallToolParams{Name: c.tool, Arguments: c.args})
		if n := mcpapi.FastCalls(r.sessions) - before; n != 0 {
			t.Errorf("%s by a client with roots: %d calls answered by the host, want 0 (the SDK)", c.tool, n)
		}
		if g, w := errText(gerr), errText(werr); g != w {
			t.Errorf("%s: error %q, the SDK's %q", c.tool, g, w)
		}
		if g, w := mustJSON(t, got), mustJSON(t, want); g != w {
			t.Errorf("%s: result %s, the SDK's %s", c.tool, g, w)
		}
	}
	checkCancel(t, fast)
}

func errText(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

// TestFastCallFallbacks: every call whose stream may carry more than its
// response goes to the SDK: a progress token, a task, a trace context
// beside another _meta member, a client that declares sampling,
// elicitation or roots, a session that set a log level, a standard
// Mcp-Name header, no MCP-Protocol-Version header.
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
	sdk(t, "progress token", func() {
		p := &mcp.CallToolParams{Name: "add", Arguments: add}
		p.SetProgressToken("p")
		if _, err := cs.CallTool(context.Background(), p); err != nil {
			t.Fatal(err)
		}
	})
	sdk(t, "other _meta", func() {
		if _, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "add", Arguments: add, Meta: mcp.Meta{"traceparent": "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01", "x": 1}}); err != nil {
			t.Fatal(err)
		}
	})
	for name, opts := range map[string]*mcp.ClientOptions{
		"sampling": {Capabilities: &mcp.ClientCapabilities{}, CreateMessageHandler: func(context.Context, *mcp.CreateMessageRequest) (*mcp.CreateMessageResult, error) {
			return nil, errors.New("no")
		}},
		"elicitation": {Capabilities: &mcp.ClientCapabilities{}, ElicitationHandler: func(context.Context, *mcp.ElicitRequest) (*mcp.ElicitResult, error) { return nil, errors.New("no") }},
		"roots":       nil,
	} {
		c := r.connect(t, sessionsV, opts)
		sdk(t, name, func() { ok(t, call(t, c, "add", add)) })
	}
	logs := r.connect(t, sessionsV, quiet)
	if err := logs.SetLoggingLevel(context.Background(), &mcp.SetLoggingLevelParams{Level: "info"}); err != nil {
		t.Fatal(err)
	}
	sdk(t, "log level", func() { ok(t, call(t, logs, "add", add)) })

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
	r := newRig(t, nil, mcpapi.Config{}, examples...)
	if !mcpapi.FastPath(r.sessions) {
		t.Skip("the SDK as released has no HoldSession (patches/go-sdk 0011): every call goes to the SDK")
	}
	watch := r.connect(t, sessionsV, nil)
	_, before := sleeps(t, watch)
	cs := r.connect(t, sessionsV, quiet)
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
	req, _ := http.NewRequest(http.MethodDelete, r.url+sessionsV.endpoint, nil)
	req.Header.Set("Authorization", "Bearer "+apiKey)
	req.Header.Set("Mcp-Session-Id", cs.ID())
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	testkit.Eventually(t, 10*time.Second, "the plugin sees the call cancelled", func() bool {
		active, cancelled := sleeps(t, watch)
		return cancelled > before && active == 0
	})
	select {
	case <-errc:
	case <-time.After(10 * time.Second):
		t.Error("the call's POST was not answered after its session ended")
	}
}
