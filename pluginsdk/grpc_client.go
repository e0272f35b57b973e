package pluginsdk

import (
	"context"
	"errors"
	"io"

	"github.com/opentool-host/opentool-host/pluginsdk/toolpb"
)

// GRPCClient is the host side of a plugin connection: what the host gets
// when it dispenses PluginName. It speaks JSON bytes so the host never
// decodes arguments or results on the call path. Safe for concurrent use;
// calls are multiplexed on one gRPC connection and do not wait for each
// other.
type GRPCClient struct {
	client toolpb.ToolClient
}

// NewGRPCClient wraps a toolpb client. Hosts normally get a *GRPCClient from
// go-plugin's Dispense instead.
func NewGRPCClient(c toolpb.ToolClient) *GRPCClient { return &GRPCClient{client: c} }

// Load returns the plugin's OpenTool document as JSON bytes. A tool error
// is returned as *Error; a transport failure as the gRPC error.
func (c *GRPCClient) Load(ctx context.Context) ([]byte, error) {
	resp, err := c.client.Load(ctx, &toolpb.LoadRequest{})
	if err != nil {
		return nil, err
	}
	if e := fromProto(resp.GetError()); e != nil {
		return nil, e
	}
	return resp.GetDocument(), nil
}

// Call runs function name with the JSON object args (nil for none) and
// returns the JSON result object. A tool error is returned as *Error (use
// errors.As); anything else is a transport failure (the gRPC status error,
// e.g. codes.Unavailable when the plugin died, codes.Canceled or
// codes.DeadlineExceeded when ctx ended).
//
// callID, when not 0, lets Cancel end the call's context in the plugin
// while the host keeps waiting for Call to return (see host's cancel grace).
func (c *GRPCClient) Call(ctx context.Context, name string, args []byte, callID uint64) ([]byte, error) {
	resp, err := c.client.Call(ctx, &toolpb.CallRequest{Name: name, Arguments: args, CallId: callID})
	if err != nil {
		return nil, err
	}
	if e := fromProto(resp.GetError()); e != nil {
		return nil, e
	}
	return resp.GetResult(), nil
}

// Cancel ends the plugin-side context of the in-flight call callID. It
// reports whether the call was still running.
func (c *GRPCClient) Cancel(ctx context.Context, callID uint64) (bool, error) {
	resp, err := c.client.Cancel(ctx, &toolpb.CancelRequest{CallId: callID})
	if err != nil {
		return false, err
	}
	return resp.GetFound(), nil
}

// StreamCall runs streaming function name and calls onItem with each JSON
// item in order. It returns nil when the stream completed, an *Error when
// the tool ended it with an error, the error onItem returned, or a transport
// error.
func (c *GRPCClient) StreamCall(ctx context.Context, name string, args []byte, onItem func(item []byte) error) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	stream, err := c.client.StreamCall(ctx, &toolpb.CallRequest{Name: name, Arguments: args})
	if err != nil {
		return err
	}
	for {
		ev, err := stream.Recv()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return err
		}
		if e := fromProto(ev.GetError()); e != nil {
			return e
		}
		if err := onItem(ev.GetData()); err != nil {
			return err
		}
	}
}
