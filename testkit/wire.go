package testkit

import (
	"context"
	"errors"
	"io"
	"testing"

	plugin "github.com/hashicorp/go-plugin"

	"github.com/opentool-host/opentool-host/internal/wire"
	"github.com/opentool-host/opentool-host/pluginsdk"
)

// WireConn serves tool over a real in-process go-plugin gRPC connection
// (plugin.TestPluginGRPCConn) and returns the host side of it.
func WireConn(t testing.TB, tool pluginsdk.Tool) *wire.Client {
	t.Helper()
	client, _ := plugin.TestPluginGRPCConn(t, false, pluginsdk.PluginSet(tool))
	t.Cleanup(func() { client.Close() })
	raw, err := client.Dispense(wire.PluginName)
	if err != nil {
		t.Fatal(err)
	}
	return raw.(*wire.Client)
}

// WireInvoke runs one call on c and returns every data event (one for a
// unary function). A tool error is a *wire.ToolError.
func WireInvoke(ctx context.Context, c *wire.Client, name string, args []byte, stream bool) ([][]byte, error) {
	call, err := c.Invoke(ctx, name, args, stream)
	if err != nil {
		return nil, err
	}
	var out [][]byte
	for {
		item, err := call.Recv()
		if errors.Is(err, io.EOF) {
			return out, nil
		}
		if err != nil {
			return out, err
		}
		out = append(out, item)
	}
}

// LocalConn serves tool in the test's process as the host serves a
// declared plugin (pluginsdk.Local over wire.NewLocalClient: no gRPC, no
// encoding) and returns the host's side of it.
func LocalConn(tool pluginsdk.Tool) *wire.Client {
	return wire.NewLocalClient(pluginsdk.Local(tool), 0, nil)
}
