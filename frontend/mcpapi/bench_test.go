package mcpapi_test

import (
	"context"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/opentool-host/opentool-host/declared"
	"github.com/opentool-host/opentool-host/frontend/mcpapi"
	"github.com/opentool-host/opentool-host/host/core"
	"github.com/opentool-host/opentool-host/testkit"
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
	// A client that declares an experimental capability: its calls are
	// answered by the SDK; those of the SDK's default client, which
	// declares roots, by the host itself (fastcall.go).
	cs := r.connect(b, modes[2], &mcp.ClientOptions{Capabilities: &mcp.ClientCapabilities{Experimental: map[string]any{"x-bench": map[string]any{}}}})
	b.Run("call/sessions-sdk", func(b *testing.B) { benchCall(b, cs, args) })
	b.Run("call/in-process", func(b *testing.B) { benchCall(b, inProcess(b, r.s), args) })
	b.Run("call/opentool-http", func(b *testing.B) { benchOpenToolCall(b, r.url) })
	b.Run("call/host-direct", func(b *testing.B) {
		for b.Loop() {
			if _, err := r.h.Call(context.Background(), "echo", []byte(`{"data":"hello"}`)); err != nil {
				b.Fatal(err)
			}
		}
	})
	cs = r.connect(b, modes[0], nil)
	b.Run("list/stateless", func(b *testing.B) {
		for b.Loop() {
			res, err := cs.ListTools(context.Background(), nil)
			if err != nil || len(res.Tools) < 15 {
				b.Fatal(res, err)
			}
		}
	})
}

// BenchmarkOwnListCall measures repeated tools/calls of a declared MCP
// server's tool (examples/mcp-notes' repeat) through one client session
// of /mcp: "per-client" of a server that gives each client session an
// upstream session of its own (the default), whose calls are held to the
// client's own list (frontend/mcpapi/clientview: kept by the session, asked for at
// its first call), and "shared" of the same server declared "sessions":
// "shared" (no list asked: the floor).
func BenchmarkOwnListCall(b *testing.B) {
	bin := testkit.Build(b, "./examples/mcp-notes")
	r := newRig(b, func(c *core.Config) {
		c.Declared = declared.Serve
		for name, file := range map[string]string{
			"shared.mcp.json": `{"mcpServers":{"shared":{"command":` + strconv.Quote(bin) + `,"sessions":"shared"}}}`,
			"own.mcp.json":    `{"mcpServers":{"own":{"command":` + strconv.Quote(bin) + `}}}`,
			"own.policy.json": `{"prefix":"own_"}`,
		} {
			if err := os.WriteFile(filepath.Join(c.Dir, name), []byte(file), 0o600); err != nil {
				b.Fatal(err)
			}
		}
	}, mcpapi.Config{})
	cs := r.connect(b, mode{"sessions", "/sessions" + mcpapi.Path, "2025-11-25"}, nil)
	args := map[string]any{"text": "hello"}
	for _, c := range []struct{ name, tool string }{{"per-client", "own_repeat"}, {"shared", "repeat"}} {
		b.Run(c.name, func(b *testing.B) {
			for b.Loop() {
				res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: c.tool, Arguments: args})
				if err != nil || res.IsError {
					b.Fatal(res, err)
				}
			}
		})
	}
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
