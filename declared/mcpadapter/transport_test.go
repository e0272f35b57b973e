package mcpadapter

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/opentool-host/opentool-host/internal/mcpsession"
	"github.com/opentool-host/opentool-host/internal/wire"
	"github.com/opentool-host/opentool-host/protocol/decl"
	"github.com/opentool-host/opentool-host/testkit"
)

// TestServerEnv: a server gets the launcher's allow-list of the plugin's
// environment (base names and what the host granted), then the declared
// values, which win.
func TestServerEnv(t *testing.T) {
	environ := []string{"PATH=/bin", wire.Handshake.MagicCookieKey + "=x", "PLUGIN_MIN_PORT=1",
		"HOME=/h", "KEEP=1", "GRANTED_SECRET=s", "NOT_GRANTED=n", wire.DataFDEnv + "=3"}
	got := serverEnv(environ, []string{"GRANTED_SECRET", "KEEP"}, map[string]string{"KEEP": "2", "B": "b", "A": "a"})
	if want := []string{"PATH=/bin", "HOME=/h", "GRANTED_SECRET=s", "A=a", "B=b", "KEEP=2"}; !slices.Equal(got, want) {
		t.Fatalf("serverEnv = %v, want %v", got, want)
	}
}

// sseServer serves, at URL/sse, an MCP server over the HTTP+SSE transport
// of MCP 2024-11-05 (the Go SDK's SSEHandler) with one tool, "hello";
// every request must carry "Authorization: Bearer k1". gets counts the
// event streams opened.
func sseServer(t *testing.T) (url string, gets *atomic.Int32) {
	t.Helper()
	s := helloServer("legacy", "0.9.0")
	h := mcp.NewSSEHandler(func(*http.Request) *mcp.Server { return s }, nil)
	gets = &atomic.Int32{}
	base := testkit.Serve(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "Bearer k1" {
			http.Error(w, "no key", http.StatusUnauthorized)
			return
		}
		if r.Method == http.MethodGet {
			gets.Add(1)
		}
		h.ServeHTTP(w, r)
	}))
	return base + "/sse", gets
}

// TestAdapterSSEServer: a server declared "type": "sse" is reached over
// the HTTP+SSE transport; one declared by URL alone is tried over
// streamable HTTP first and, refused with a 4xx as such a server refuses
// it, over HTTP+SSE (MCP "Backwards Compatibility"); a 401 says the
// server needs authorization and is not retried over HTTP+SSE.
func TestAdapterSSEServer(t *testing.T) {
	url, gets := sseServer(t)
	auth := map[string]string{"Authorization": "Bearer k1"}
	for _, tc := range []struct {
		name      string
		transport string
	}{{"type sse", decl.TransportSSE}, {"url alone: falls back", ""}} {
		t.Run(tc.name, func(t *testing.T) {
			before := gets.Load()
			r := start(t, decl.Launch{Name: "legacy", Server: decl.MCPServer{URL: url, Headers: auth, Transport: tc.transport}}, Options{})
			ctx, cancel := context.WithTimeout(context.Background(), bound)
			defer cancel()
			doc, err := r.Load(ctx)
			if err != nil || doc.Info.Version != "0.9.0" || len(doc.Functions) != 1 {
				t.Fatalf("Load = %+v, %v", doc, err)
			}
			if got := mustCall(t, r.Adapter, "hello", `{"name":"x"}`); got != `{"greeting":"hello x"}` {
				t.Fatalf("hello = %s", got)
			}
			if n := gets.Load() - before; n != 1 {
				t.Fatalf("%d SSE streams opened, want 1", n)
			}
		})
	}

	bad := start(t, decl.Launch{Name: "legacy", Server: decl.MCPServer{URL: url}}, Options{})
	err, ok := bad.result(bound)
	// A 401 is a server needing authorization, not an older one: no
	// HTTP+SSE retry (MCP "Authorization").
	if !ok || err == nil || !strings.Contains(err.Error(), `MCP server "legacy": initialize: needs authorization (HTTP 401): `) || strings.Contains(err.Error(), "over HTTP+SSE") {
		t.Fatalf("without the header: Run = %v", err)
	}
	sseOnly := start(t, decl.Launch{Name: "legacy", Server: decl.MCPServer{URL: url, Transport: decl.TransportSSE}}, Options{})
	if err, ok := sseOnly.result(bound); !ok || err == nil || strings.Contains(err.Error(), "over HTTP+SSE") || !strings.Contains(err.Error(), "Unauthorized") {
		t.Fatalf("type sse without the header: Run = %v", err)
	}
}

// TestNoFallbackFromAStreamableServer: a streamable-HTTP server that
// fails otherwise than with a 4xx to the first POST (here: 500) is not
// tried over SSE.
func TestNoFallbackFromAStreamableServer(t *testing.T) {
	var gets atomic.Int32
	url := testkit.Serve(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodGet {
			gets.Add(1)
		}
		http.Error(w, "down", http.StatusInternalServerError)
	}))
	r := start(t, decl.Launch{Name: "down", Server: decl.MCPServer{URL: url}}, Options{})
	if err, ok := r.result(bound); !ok || err == nil || strings.Contains(err.Error(), "over HTTP+SSE") {
		t.Fatalf("Run = %v", err)
	}
	if gets.Load() != 0 {
		t.Fatalf("an SSE stream was tried")
	}
}

// postLog is an http.Handler in front of a streamable-HTTP MCP server
// that records each POST's JSON-RPC method and headers, in order.
type postLog struct {
	next  http.Handler
	mu    sync.Mutex
	posts []loggedPOST
}

// loggedPOST is one POST postLog saw.
type loggedPOST struct {
	method string
	header http.Header
	body   []byte
}

// ServeHTTP implements http.Handler.
func (l *postLog) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method == http.MethodPost {
		body, _ := io.ReadAll(r.Body)
		var msg struct {
			Method string `json:"method"`
		}
		_ = json.Unmarshal(body, &msg)
		l.mu.Lock()
		l.posts = append(l.posts, loggedPOST{method: msg.Method, header: r.Header.Clone(), body: body})
		l.mu.Unlock()
		r.Body = io.NopCloser(bytes.NewReader(body))
	}
	l.next.ServeHTTP(w, r)
}

// seen returns the POSTs so far.
func (l *postLog) seen() []loggedPOST {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Clone(l.posts)
}

// logged serves s behind a postLog with the Go SDK's stateless
// streamable-HTTP handler, which answers server/discover (2026-07-28)
// and initialize (2025-11-25) alike.
func logged(t *testing.T, s *mcp.Server) (url string, l *postLog) {
	t.Helper()
	l = &postLog{next: mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s }, &mcp.StreamableHTTPOptions{Stateless: true})}
	return testkit.Serve(t, l), l
}

// TestURLServerAskedWithDiscoverFirst: a server declared by URL is asked
// first with server/discover in SessionlessRevision (its
// MCP-Protocol-Version header and _meta), as the SDK's client asks it; one
// that speaks ProtocolVersion too gets the shared session in
// ProtocolVersion (initialize), and its tools serve.
func TestURLServerAskedWithDiscoverFirst(t *testing.T) {
	url, l := logged(t, helloServer("both", "1.0.0"))
	r := start(t, decl.Launch{Name: "both", Server: decl.MCPServer{URL: url}}, Options{})
	ctx, cancel := context.WithTimeout(context.Background(), bound)
	defer cancel()
	if _, err := r.Load(ctx); err != nil {
		t.Fatal(err)
	}
	if got := mustCall(t, r.Adapter, "hello", `{"name":"x"}`); got != `{"greeting":"hello x"}` {
		t.Fatalf("hello = %s", got)
	}
	posts := l.seen()
	first := posts[0]
	if first.method != "server/discover" || first.header.Get("Mcp-Protocol-Version") != SessionlessRevision ||
		!bytes.Contains(first.body, []byte(`"io.modelcontextprotocol/clientInfo"`)) {
		t.Fatalf("first POST: %s %v %s, want server/discover of %s with clientInfo in _meta", first.method, first.header, first.body, SessionlessRevision)
	}
	if v := r.cs.Load().InitializeResult().ProtocolVersion; v != ProtocolVersion {
		t.Fatalf("shared session in %s, want %s", v, ProtocolVersion)
	}
	if !slices.ContainsFunc(posts, func(p loggedPOST) bool { return p.method == "initialize" }) {
		t.Fatalf("no initialize after server/discover: %v", posts)
	}
}

// helloServer is an MCP server named name at version with one tool,
// "hello" ({"name": STRING} → {"greeting": "hello " + name}).
func helloServer(name, version string) *mcp.Server {
	s := mcp.NewServer(&mcp.Implementation{Name: name, Version: version}, nil)
	type in struct {
		Name string `json:"name"`
	}
	type out struct {
		Greeting string `json:"greeting"`
	}
	mcp.AddTool(s, &mcp.Tool{Name: "hello", Description: "Greets."}, func(_ context.Context, _ *mcp.CallToolRequest, i in) (*mcp.CallToolResult, out, error) {
		return nil, out{Greeting: "hello " + i.Name}, nil
	})
	return s
}

// TestParamHeadersUpstream: a caller of SessionlessRevision's tools/call
// of a tool whose inputSchema designates a parameter with x-mcp-header
// (SEP-2243) reaches the server with its Mcp-Param-* header, as the SDK's
// client sends it for a tool it listed.
func TestParamHeadersUpstream(t *testing.T) {
	s := mcp.NewServer(&mcp.Implementation{Name: "headers", Version: "1.0.0"}, nil)
	schema := json.RawMessage(`{"type":"object","properties":{"region":{"type":"string","x-mcp-header":"Region"}}}`)
	s.AddTool(&mcp.Tool{Name: "where", InputSchema: schema}, func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "ok"}}}, nil
	})
	url, l := logged(t, s)
	r := start(t, decl.Launch{Name: "headers", Server: decl.MCPServer{URL: url}}, Options{})
	ctx, cancel := context.WithTimeout(context.Background(), bound)
	defer cancel()
	if _, err := r.Load(ctx); err != nil {
		t.Fatal(err)
	}
	caller := withSessionless(&mcpsession.Request{Revision: SessionlessRevision, Init: &mcp.InitializeParams{
		ProtocolVersion: SessionlessRevision, ClientInfo: &mcp.Implementation{Name: "c", Version: "1"}, Capabilities: &mcp.ClientCapabilities{},
	}})
	if _, err := callAs(r.Adapter, ctx, caller, "where", []byte(`{"region":"eu-west"}`)); err != nil {
		t.Fatal(err)
	}
	i := slices.IndexFunc(l.seen(), func(p loggedPOST) bool { return p.method == "tools/call" })
	if i < 0 {
		t.Fatal("no tools/call reached the server")
	}
	if got := l.seen()[i].header.Get("Mcp-Param-Region"); got != "eu-west" {
		t.Fatalf("tools/call: Mcp-Param-Region %q, want eu-west (headers %v)", got, l.seen()[i].header)
	}
}
