package pluginsdk

import (
	"context"
	"errors"

	plugin "github.com/hashicorp/go-plugin"
	"google.golang.org/grpc"

	"github.com/opentool-host/opentool-host/pluginsdk/toolpb"
)

// GRPCPlugin is the go-plugin plugin.GRPCPlugin for OpenTool tools. In a
// plugin, Impl is the Tool to serve; in the host, Impl is nil and
// GRPCClient returns a *GRPCClient.
type GRPCPlugin struct {
	plugin.NetRPCUnsupportedPlugin
	// Impl is the tool served by the plugin process (nil in the host).
	Impl Tool
}

var _ plugin.GRPCPlugin = (*GRPCPlugin)(nil)

// ErrNoImpl is returned by GRPCServer when GRPCPlugin.Impl is nil.
var ErrNoImpl = errors.New("pluginsdk: GRPCPlugin.Impl is nil")

// GRPCServer registers the Tool service on s (plugin side).
func (p *GRPCPlugin) GRPCServer(_ *plugin.GRPCBroker, s *grpc.Server) error {
	if p.Impl == nil {
		return ErrNoImpl
	}
	toolpb.RegisterToolServer(s, &grpcServer{tool: p.Impl})
	return nil
}

// GRPCClient returns a *GRPCClient on conn (host side).
func (p *GRPCPlugin) GRPCClient(_ context.Context, _ *plugin.GRPCBroker, conn *grpc.ClientConn) (interface{}, error) {
	return NewGRPCClient(toolpb.NewToolClient(conn)), nil
}

// PluginSet returns the go-plugin plugin set for a host (impl nil) or a
// plugin (impl set): {PluginName: &GRPCPlugin{Impl: impl}}.
func PluginSet(impl Tool) plugin.PluginSet {
	return plugin.PluginSet{PluginName: &GRPCPlugin{Impl: impl}}
}

// GRPCDialOptions are the dial options a host uses for plugin connections:
// message limits of MaxMessageSize in both directions.
func GRPCDialOptions() []grpc.DialOption {
	return []grpc.DialOption{grpc.WithDefaultCallOptions(
		grpc.MaxCallRecvMsgSize(MaxMessageSize),
		grpc.MaxCallSendMsgSize(MaxMessageSize),
	)}
}
