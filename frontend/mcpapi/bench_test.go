package mcpapi_test

import (
	"context"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/opentool-host/opentool-host/frontend/mcpapi"
)

// BenchmarkMCP compares one tools/call of the echo plugin over /mcp
// (stateless, with sessions, and in-process without HTTP) with the same
// call over /opentool/call and with host.Call itself (the floor), and
// measures tools/list of the example plugins (15 tools), all against one
// host in the same run.
func BenchmarkMCP(b *testing.B) {
	r := newRig(b, nil, mcpapi.Config{}, "./plugins/mock", "./plugins/calculator", "./plugins/files", "./testkit/plugins/echo")
	args := map[string]any{"data": "hello"}
	for _, m := range []mode{modes[0], modes[2]} {
		cs := r.connect(b, m, nil)
		b.Run("call/"+m.name, func(b *testing.B) { benchCall(b, cs, args) })
	}
	b.Run("call/in-process", func(b *testing.B) { benchCall(b, inProcess(b, r.s), args) })
	b.Run("call/opentool-http", func(b *testing.B) { benchOpenToolCall(b, r.url) })
	b.Run("call/host-direct", func(b *testing.B) {
		for b.Loop() {
			if _, err := r.h.Call(context.Background(), "echo", []byte(`{"data":"hello"}`)); err != nil {
				b.Fatal(err)
			}
		}
	})
	cs := r.connect(b, modes[0], nil)
	b.Run("list/stateless", func(b *testing.B) {
		for b.Loop() {
			res, err := cs.ListTools(context.Background(), nil)
			if err != nil || len(res.Tools) < 15 {
				b.Fatal(res, err)
			}
		}
	})
}

// inProcess connects a client to s over the SDK's in-memory transport.
func inProcess(b *testing.B, s *mcpapi.Server) *mcp.ClientSession {
	ct, st := mcp.NewInMemoryTransports()
	ss, err := s.MCP().Connect(context.Background(), st, nil)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = ss.Close() })
	return connectWith(b, ct, "", nil)
}

func benchCall(b *testing.B, cs *mcp.ClientSession, args any) {
	for b.Loop() {
		res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "echo", Arguments: args})
		if err != nil || res.IsError {
			b.Fatal(res, err)
		}
	}
}

func benchOpenToolCall(b *testing.B, url string) {
	c := &http.Client{Transport: keyTransport{}}
	body := `{"jsonrpc":"2.0","method":"echo","params":{"data":"hello"},"id":1}`
	for b.Loop() {
		resp, err := c.Post(url+"/opentool/call", "application/json", strings.NewReader(body))
		if err != nil {
			b.Fatal(err)
		}
		out, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if !strings.Contains(string(out), `"echo":{"data":"hello"}`) {
			b.Fatal(string(out))
		}
	}
}
