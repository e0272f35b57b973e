// Command noauth is a test plugin served as an SDK without host
// authentication serves it: plain go-plugin, no AutoMTLS (it drops the
// host's PLUGIN_CLIENT_CERT), so its handshake carries no certificate
// and its socket takes any connection. A host must refuse it.
package main

import (
	"context"
	"os"

	plugin "github.com/hashicorp/go-plugin"
	"google.golang.org/grpc"

	"github.com/opentool-host/opentool-host/internal/wire"
	"github.com/opentool-host/opentool-host/pluginsdk"
	"github.com/opentool-host/opentool-host/protocol/opentool"
)

type noauth struct{}

// Load implements pluginsdk.Tool.
func (noauth) Load(context.Context) (*opentool.OpenTool, error) {
	return &opentool.OpenTool{OpenTool: "1.1.0", Info: opentool.Info{Title: "No host auth", Version: "1"},
		Functions: []opentool.Function{{Name: "hello", Description: "Says hello.", Parameters: []opentool.Parameter{}}}}, nil
}

// Call implements pluginsdk.Tool.
func (noauth) Call(context.Context, string, map[string]any) (map[string]any, error) {
	return map[string]any{"hello": "world"}, nil
}

func main() {
	_ = os.Unsetenv(pluginsdk.ClientCertEnv)
	plugin.Serve(&plugin.ServeConfig{
		HandshakeConfig: wire.Handshake, Plugins: pluginsdk.PluginSet(noauth{}),
		GRPCServer: func(opts []grpc.ServerOption) *grpc.Server {
			return plugin.DefaultGRPCServer(append(opts, wire.ServerOptions()...))
		},
	})
}
