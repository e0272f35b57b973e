package mcpadapter

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"sync/atomic"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/opentool-host/opentool-host/host/core"
	"github.com/opentool-host/opentool-host/internal/mcpsession"
	"github.com/opentool-host/opentool-host/pluginsdk"
	"github.com/opentool-host/opentool-host/protocol/decl"
	"github.com/opentool-host/opentool-host/testkit"
)

// TestCallerToolsOncePerIdentity (issue 32): a 2026-07-28 caller's
// tools/list (clientTools with an mcpsession.Request carrying its _meta
// identity) is the list of a session opened as a client of that identity,
// opened once per identity: the same identity again opens none, another
// one opens one more; a server declared "sessions": "shared" opens none
// (-32601, the shared list). Before, a caller without a session was
// always answered -32601.
func TestCallerToolsOncePerIdentity(t *testing.T) {
	var inits atomic.Int64
	s := mcp.NewServer(&mcp.Implementation{Name: "remote", Version: "1"}, nil)
	s.AddReceivingMiddleware(func(next mcp.MethodHandler) mcp.MethodHandler {
		return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
			if method == "initialize" {
				inits.Add(1)
			}
			return next(ctx, method, req)
		}
	})
	mcp.AddTool(s, &mcp.Tool{Name: "hello"}, func(context.Context, *mcp.CallToolRequest, struct{}) (*mcp.CallToolResult, struct{}, error) {
		return nil, struct{}{}, nil
	})
	url := testkit.Serve(t, mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s }, nil)) + "/mcp"

	caller := func(name string) *core.Exchange {
		return withSessionless(&mcpsession.Request{Revision: SessionlessRevision, Init: &mcp.InitializeParams{
			ProtocolVersion: SessionlessRevision, ClientInfo: &mcp.Implementation{Name: name, Version: "1"}, Capabilities: &mcp.ClientCapabilities{},
		}})
	}
	for _, shared := range []bool{false, true} {
		r := start(t, decl.Launch{Name: "remote", Server: decl.MCPServer{URL: url}}, Options{Shared: shared})
		ctx, cancel := context.WithTimeout(context.Background(), bound)
		if _, err := r.Load(ctx); err != nil {
			cancel()
			t.Fatal(err)
		}
		cancel()
		for i, c := range []struct {
			who   string
			opens int64
		}{{"a", 1}, {"a", 0}, {"b", 1}, {"a", 0}} {
			before := inits.Load()
			res, err := r.clientTools(context.Background(), caller(c.who))
			if shared {
				var re *pluginsdk.RPCError
				if !errors.As(err, &re) || re.Code != jsonrpc.CodeMethodNotFound || inits.Load() != before {
					t.Errorf("shared: caller %s: %v, %v (%d sessions opened); want -32601 and none", c.who, res, err, inits.Load()-before)
				}
				continue
			}
			tools, _ := res.(map[string][]json.RawMessage)
			if err != nil || len(tools["tools"]) != 1 {
				t.Fatalf("list %d, caller %s: %v, %v; want the one tool", i, c.who, res, err)
			}
			if got := inits.Load() - before; got != c.opens {
				t.Errorf("list %d, caller %s: %d sessions opened; want %d", i, c.who, got, c.opens)
			}
		}
	}
}
