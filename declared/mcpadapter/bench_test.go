package mcpadapter

import (
	"context"
	"os/exec"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/opentool-host/opentool-host/testkit"
)

// BenchmarkCall measures one call of the example server's repeat tool:
//
//   - direct: the SDK's client straight to the server process (stdio);
//   - adapter: Adapter.CallJSON in-process (the same client, plus the
//     name lookup and the result mapping);
//   - plugin: through go-plugin's in-process gRPC connection as well
//     (the host's side of the wire, without the host's HTTP front).
func BenchmarkCall(b *testing.B) {
	args := []byte(`{"text":"hello"}`)
	b.Run("direct", func(b *testing.B) {
		cs, err := mcp.NewClient(&mcp.Implementation{Name: "bench", Version: "1"}, nil).
			Connect(context.Background(), &mcp.CommandTransport{Command: exec.Command(notesBin(b))}, nil)
		if err != nil {
			b.Fatal(err)
		}
		defer cs.Close()
		params := &mcp.CallToolParams{Name: "repeat", Arguments: map[string]any{"text": "hello"}}
		b.ReportAllocs()
		for b.Loop() {
			if _, err := cs.CallTool(context.Background(), params); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("adapter", func(b *testing.B) {
		r := start(b, notesLaunch(b), Options{})
		load(b, r.Adapter)
		b.ReportAllocs()
		for b.Loop() {
			if _, err := r.CallJSON(context.Background(), "repeat", args); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("plugin", func(b *testing.B) {
		r := start(b, notesLaunch(b), Options{})
		load(b, r.Adapter)
		c := testkit.LocalConn(r.Adapter)
		b.ReportAllocs()
		for b.Loop() {
			if _, err := testkit.WireInvoke(context.Background(), c, "repeat", args, false); err != nil {
				b.Fatal(err)
			}
		}
	})
}
