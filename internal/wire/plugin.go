package wire

import (
	"context"
	"errors"

	plugin "github.com/hashicorp/go-plugin"
	"google.golang.org/grpc"

	"github.com/opentool-host/opentool-host/internal/wire/toolpb"
)

// GRPCPlugin is the go-plugin plugin.GRPCPlugin of the Tool service. In a
// plugin, Impl is the service to register; in the host, Impl is nil
// and GRPCClient returns a *Client.
type GRPCPlugin struct {
	plugin.NetRPCUnsupportedPlugin
	// Impl is the Tool service of the plugin process (nil in the host).
	Impl toolpb.ToolServer
	// Version is the app protocol version of this plugin set
	// (ProtocolVersion or ProtocolV3): the host's Client speaks it.
	Version int
}

var _ plugin.GRPCPlugin = (*GRPCPlugin)(nil)

// ErrNoServer is returned by GRPCServer when GRPCPlugin.Impl is nil.
var ErrNoServer = errors.New("wire: GRPCPlugin.Impl is nil")

// GRPCServer registers the Tool service on s (plugin side).
func (p *GRPCPlugin) GRPCServer(_ *plugin.GRPCBroker, s *grpc.Server) error {
	if p.Impl == nil {
		return ErrNoServer
	}
	toolpb.RegisterToolServer(s, p.Impl)
	return nil
}

// GRPCClient returns a *Client on conn (host side).
func (p *GRPCPlugin) GRPCClient(_ context.Context, _ *plugin.GRPCBroker, conn *grpc.ClientConn) (interface{}, error) {
	c := NewClient(toolpb.NewToolClient(conn))
	c.v3 = p.Version >= ProtocolV3
	return c, nil
}

// PluginSet returns the go-plugin plugin set of protocol 2 for a host
// (server nil) or a plugin (server set): {PluginName: &GRPCPlugin{Impl:
// impl}}.
func PluginSet(impl toolpb.ToolServer) plugin.PluginSet {
	return plugin.PluginSet{PluginName: &GRPCPlugin{Impl: impl, Version: ProtocolVersion}}
}

// VersionedPluginSets returns go-plugin's VersionedPlugins for a host
// (both nil) or a plugin: v2 serves protocol 2 and v3 protocol 3
// (ProtocolV3); go-plugin picks the highest version both sides speak.
func VersionedPluginSets(v2, v3 toolpb.ToolServer) map[int]plugin.PluginSet {
	return map[int]plugin.PluginSet{
		ProtocolVersion: {PluginName: &GRPCPlugin{Impl: v2, Version: ProtocolVersion}},
		ProtocolV3:      {PluginName: &GRPCPlugin{Impl: v3, Version: ProtocolV3}},
	}
}

// DialOptions are the host's dial options for a plugin connection: the
// pooled codec and buffers (codec.go), at most MaxMessageSize bytes sent
// per message and at most maxRecv bytes received (a larger message, such
// as an oversized result, fails its stream with codes.ResourceExhausted
// before it is buffered).
//
// gRPC's transparent retry is off: a call is never resent by gRPC (the
// host resends only a call that provably did not reach the plugin), and
// the stream need not buffer what it sent.
func DialOptions(maxRecv int) []grpc.DialOption {
	return append(poolDialOptions(), grpc.WithDisableRetry(), grpc.WithDefaultCallOptions(
		grpc.MaxCallRecvMsgSize(maxRecv),
		grpc.MaxCallSendMsgSize(MaxMessageSize),
	))
}

// ServerOptions are a plugin's gRPC server options: MaxMessageSize both
// ways and the pooled codec and buffers.
func ServerOptions() []grpc.ServerOption {
	return append(poolServerOptions(),
		grpc.MaxRecvMsgSize(MaxMessageSize),
		grpc.MaxSendMsgSize(MaxMessageSize),
	)
}
