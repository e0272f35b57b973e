// Package floor is the bare go-plugin gRPC echo used to measure the floor
// of the plugin hop: a go-plugin gRPC plugin serving one unary echo method
// (raw bytes, no protobuf message, no pluginsdk server, no cancellation),
// dialled straight by the benchmark, not through the host.
//
// The plugin binary is ./bench/floor/plugin; the benchmark side is Start.
//
// It also holds the raw unix-socket round trip between two processes
// (unix.go: StartUnix, ServeUnix), the floor of the plugin hop over the
// data channel.
package floor

import (
	"context"
	"errors"
	"fmt"
	"os/exec"

	"github.com/hashicorp/go-hclog"
	plugin "github.com/hashicorp/go-plugin"
	"google.golang.org/grpc"
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
// registers the echo service, the client side returns its connection.
type Plugin struct {
	plugin.NetRPCUnsupportedPlugin
}

var _ plugin.GRPCPlugin = (*Plugin)(nil)

// GRPCServer registers the echo service (plugin side).
func (Plugin) GRPCServer(_ *plugin.GRPCBroker, s *grpc.Server) error {
	s.RegisterService(&echoService, nil)
	return nil
}

// GRPCClient returns the connection (benchmark side).
func (Plugin) GRPCClient(_ context.Context, _ *plugin.GRPCBroker, conn *grpc.ClientConn) (interface{}, error) {
	return conn, nil
}

// echoMethod is the full name of the floor's one method.
const echoMethod = "/opentool.bench.Floor/Echo"

// echoService answers Echo with {"echo":ARGUMENTS}, the same bytes the
// echo test plugin returns, and nothing else.
var echoService = grpc.ServiceDesc{
	ServiceName: "opentool.bench.Floor",
	HandlerType: (*any)(nil),
	Methods: []grpc.MethodDesc{{MethodName: "Echo", Handler: func(_ any, _ context.Context, dec func(any) error, _ grpc.UnaryServerInterceptor) (any, error) {
		var args []byte
		if err := dec(&args); err != nil {
			return nil, err
		}
		out := make([]byte, 0, len(args)+10)
		out = append(out, `{"echo":`...)
		out = append(out, args...)
		return append(out, '}'), nil
	}}},
}

// rawCodec sends []byte messages as they are (no protobuf envelope).
type rawCodec struct{}

// Marshal implements encoding.Codec.
func (rawCodec) Marshal(v any) ([]byte, error) {
	switch b := v.(type) {
	case []byte:
		return b, nil
	case *[]byte:
		return *b, nil
	}
	return nil, fmt.Errorf("floor: cannot marshal %T", v)
}

// Unmarshal implements encoding.Codec.
func (rawCodec) Unmarshal(data []byte, v any) error {
	b, ok := v.(*[]byte)
	if !ok {
		return fmt.Errorf("floor: cannot unmarshal into %T", v)
	}
	*b = append((*b)[:0], data...)
	return nil
}

// Name implements encoding.Codec.
func (rawCodec) Name() string { return "floor-raw" }

// Serve runs the floor plugin; call it from main.
func Serve() {
	plugin.Serve(&plugin.ServeConfig{
		HandshakeConfig: Handshake,
		Plugins:         plugin.PluginSet{PluginName: Plugin{}},
		GRPCServer: func(opts []grpc.ServerOption) *grpc.Server {
			return plugin.DefaultGRPCServer(append(opts, grpc.ForceServerCodec(rawCodec{})))
		},
		Logger: hclog.NewNullLogger(),
	})
}

// Client is the benchmark's connection to a running floor plugin.
type Client struct {
	pc   *plugin.Client
	conn *grpc.ClientConn
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
	return &Client{pc: pc, conn: raw.(*grpc.ClientConn)}, nil
}

// ErrBadEcho is returned by Call when the reply is not the echo of args.
var ErrBadEcho = errors.New("floor plugin: reply is not the echo of the arguments")

// Call sends one echo call with args and returns the reply's result.
func (c *Client) Call(ctx context.Context, args []byte) ([]byte, error) {
	var resp []byte
	if err := c.conn.Invoke(ctx, echoMethod, args, &resp, grpc.ForceCodec(rawCodec{})); err != nil {
		return nil, err
	}
	if len(resp) != len(args)+9 {
		return nil, ErrBadEcho
	}
	return resp, nil
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
