// Package floor is the bare go-plugin gRPC echo used to measure the floor
// of the plugin hop: a go-plugin gRPC plugin serving toolpb.Tool with an
// echo Call and nothing else (no pluginsdk server, no call table, no
// cancellation), dialled straight by the benchmark, not through the host.
//
// The plugin binary is ./bench/floor/plugin; the benchmark side is Start.
package floor

import (
	"context"
	"errors"
	"fmt"
	"os/exec"

	"github.com/hashicorp/go-hclog"
	plugin "github.com/hashicorp/go-plugin"
	"google.golang.org/grpc"

	"github.com/opentool-host/opentool-host/pluginsdk/toolpb"
)

// Handshake is the floor plugin's go-plugin handshake (its own cookie, so
// the host never mistakes it for an OpenTool plugin).
var Handshake = plugin.HandshakeConfig{
	ProtocolVersion:  1,
	MagicCookieKey:   "OPENTOOL_BENCH_FLOOR",
	MagicCookieValue: "floor",
}

// PluginName is the name the floor plugin is dispensed under.
const PluginName = "floor"

// Plugin is the go-plugin plugin.GRPCPlugin of the floor: the server side
// registers echoServer, the client side returns a toolpb.ToolClient.
type Plugin struct {
	plugin.NetRPCUnsupportedPlugin
}

var _ plugin.GRPCPlugin = (*Plugin)(nil)

// GRPCServer registers the echo service (plugin side).
func (Plugin) GRPCServer(_ *plugin.GRPCBroker, s *grpc.Server) error {
	toolpb.RegisterToolServer(s, echoServer{})
	return nil
}

// GRPCClient returns a toolpb.ToolClient on conn (benchmark side).
func (Plugin) GRPCClient(_ context.Context, _ *plugin.GRPCBroker, conn *grpc.ClientConn) (interface{}, error) {
	return toolpb.NewToolClient(conn), nil
}

// echoServer answers Call with {"echo":ARGUMENTS}, the same bytes the
// echo test plugin returns, and nothing else.
type echoServer struct {
	toolpb.UnimplementedToolServer
}

// Call implements toolpb.ToolServer.
func (echoServer) Call(_ context.Context, req *toolpb.CallRequest) (*toolpb.CallResponse, error) {
	args := req.GetArguments()
	out := make([]byte, 0, len(args)+10)
	out = append(out, `{"echo":`...)
	out = append(out, args...)
	return &toolpb.CallResponse{Result: append(out, '}')}, nil
}

// Serve runs the floor plugin; call it from main.
func Serve() {
	plugin.Serve(&plugin.ServeConfig{
		HandshakeConfig: Handshake,
		Plugins:         plugin.PluginSet{PluginName: Plugin{}},
		GRPCServer:      plugin.DefaultGRPCServer,
		Logger:          hclog.NewNullLogger(),
	})
}

// Client is the benchmark's connection to a running floor plugin.
type Client struct {
	pc   *plugin.Client
	tool toolpb.ToolClient
}

// Start runs the floor plugin binary bin, performs the handshake and
// dispenses the echo client. Close stops the process.
func Start(bin string) (*Client, error) {
	pc := plugin.NewClient(&plugin.ClientConfig{
		HandshakeConfig:  Handshake,
		Plugins:          plugin.PluginSet{PluginName: Plugin{}},
		Cmd:              exec.Command(bin),
		AllowedProtocols: []plugin.Protocol{plugin.ProtocolGRPC},
		Logger:           hclog.NewNullLogger(),
	})
	rpc, err := pc.Client()
	if err != nil {
		pc.Kill()
		return nil, fmt.Errorf("floor plugin handshake: %w", err)
	}
	raw, err := rpc.Dispense(PluginName)
	if err != nil {
		pc.Kill()
		return nil, fmt.Errorf("floor plugin dispense: %w", err)
	}
	return &Client{pc: pc, tool: raw.(toolpb.ToolClient)}, nil
}

// ErrBadEcho is returned by Call when the reply is not the echo of args.
var ErrBadEcho = errors.New("floor plugin: reply is not the echo of the arguments")

// Call sends one echo call with args and returns the reply's result.
func (c *Client) Call(ctx context.Context, args []byte) ([]byte, error) {
	resp, err := c.tool.Call(ctx, &toolpb.CallRequest{Name: "echo", Arguments: args})
	if err != nil {
		return nil, err
	}
	if len(resp.GetResult()) != len(args)+9 {
		return nil, ErrBadEcho
	}
	return resp.GetResult(), nil
}

// Close stops the plugin process.
func (c *Client) Close() { c.pc.Kill() }

// PID returns the plugin process's id.
func (c *Client) PID() int {
	if rc := c.pc.ReattachConfig(); rc != nil {
		return rc.Pid
	}
	return 0
}
