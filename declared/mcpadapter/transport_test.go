package mcpadapter

import (
	"context"
	"net/http"
	"slices"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

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
	s := mcp.NewServer(&mcp.Implementation{Name: "legacy", Version: "0.9.0"}, nil)
	type in struct {
		Name string `json:"name"`
	}
	type out struct {
		Greeting string `json:"greeting"`
	}
	mcp.AddTool(s, &mcp.Tool{Name: "hello", Description: "Greets."}, func(_ context.Context, _ *mcp.CallToolRequest, i in) (*mcp.CallToolResult, out, error) {
		return nil, out{Greeting: "hello " + i.Name}, nil
	})
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
// it, over HTTP+SSE (MCP "Backwards Compatibility"); a failure over both
// says both reasons.
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
	if !ok || err == nil || !strings.Contains(err.Error(), `MCP server "legacy": initialize: `) || !strings.Contains(err.Error(), "Unauthorized; over HTTP+SSE: ") {
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
