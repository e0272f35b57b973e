package mcpadapter

import (
	"context"
	"encoding/json"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/opentool-host/opentool-host/host/core"
	"github.com/opentool-host/opentool-host/internal/mcpsession"
	"github.com/opentool-host/opentool-host/protocol/decl"
	"github.com/opentool-host/opentool-host/testkit"
)

// TestOwnToolsChangedTellsTheClient (issue 32): the server's
// notifications/tools/list_changed on a client's own upstream session
// drops the tools that session keeps and calls the client's
// mcpsession.Session.ToolsChanged, so that the front end drops what it
// kept of them too; the next clientTools lists the new tools. Before,
// the front end was not told (it asked for the list on every call).
func TestOwnToolsChangedTellsTheClient(t *testing.T) {
	var mu sync.Mutex
	var servers []*mcp.Server // the server of each session initialized, in order
	url := testkit.Serve(t, mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server {
		s := mcp.NewServer(&mcp.Implementation{Name: "remote", Version: "1"}, &mcp.ServerOptions{Capabilities: &mcp.ServerCapabilities{Tools: &mcp.ToolCapabilities{ListChanged: true}}})
		mcp.AddTool(s, &mcp.Tool{Name: "hello"}, func(context.Context, *mcp.CallToolRequest, struct{}) (*mcp.CallToolResult, struct{}, error) {
			return nil, struct{}{}, nil
		})
		s.AddReceivingMiddleware(func(next mcp.MethodHandler) mcp.MethodHandler {
			return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
				if method == "initialize" {
					mu.Lock()
					servers = append(servers, s)
					mu.Unlock()
				}
				return next(ctx, method, req)
			}
		})
		return s
	}, nil)) + "/mcp"
	r := start(t, decl.Launch{Name: "remote", Server: decl.MCPServer{URL: url}}, Options{})
	load(t, r.Adapter)

	changed := make(chan struct{}, 1)
	done := make(chan struct{})
	t.Cleanup(func() { close(done) })
	sess := &mcpsession.Session{
		ID: "client",
		// A client session that calls gets a session of its own (clients.go).
		Init: &mcp.InitializeParams{ProtocolVersion: ProtocolVersion, ClientInfo: &mcp.Implementation{Name: "client", Version: "1"}, Capabilities: &mcp.ClientCapabilities{RootsV2: &mcp.RootCapabilities{}}},
		Done: done,
		Log:  func(context.Context, *mcp.LoggingMessageParams) {},
		ToolsChanged: func() {
			select {
			case changed <- struct{}{}:
			default: // one is enough; it must not block
			}
		},
	}
	x := withSession(sess)
	ctx, cancel := context.WithTimeout(context.Background(), bound)
	defer cancel()
	mu.Lock()
	before := len(servers)
	mu.Unlock()
	if _, _, _, err := r.sessionOf(ctx, x.ClientSession()); err != nil { // the client's own upstream session
		t.Fatal(err)
	}
	mu.Lock()
	own := servers[before:]
	mu.Unlock()
	if len(own) != 1 {
		t.Fatalf("the client's own session made %d server sessions; want 1", len(own))
	}
	if n := toolCount(t, r.Adapter, ctx, x); n != 1 {
		t.Fatalf("the client's own list has %d tools; want 1", n)
	}
	mcp.AddTool(own[0], &mcp.Tool{Name: "extra"}, func(context.Context, *mcp.CallToolRequest, struct{}) (*mcp.CallToolResult, struct{}, error) {
		return nil, struct{}{}, nil
	})
	select {
	case <-changed:
	case <-time.After(bound):
		t.Fatal("the server's tools/list_changed on the client's own session did not call ToolsChanged")
	}
	if n := toolCount(t, r.Adapter, ctx, x); n != 2 {
		t.Fatalf("after ToolsChanged the client's own list has %d tools; want 2 (the new list)", n)
	}
}

// toolCount is the number of tools clientTools lists to the client of x.
func toolCount(t *testing.T, a *Adapter, ctx context.Context, x *core.Exchange) int {
	t.Helper()
	res, err := a.clientTools(ctx, x)
	if err != nil {
		t.Fatal(err)
	}
	return len(res.(map[string][]json.RawMessage)["tools"])
}
