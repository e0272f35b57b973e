package wire

import (
	"context"
	"fmt"

	"github.com/opentool-host/opentool-host/internal/wire/toolpb"
)

// ToolError is a tool's own error as it crossed the wire: the code and
// message the plugin chose (400 invalid arguments, 404 unknown function,
// 500 tool failure, or its own).
type ToolError struct {
	// Code is the tool's error code.
	Code int
	// Message is the tool's description.
	Message string
}

// Error implements error: "tool error CODE: MESSAGE".
func (e *ToolError) Error() string { return fmt.Sprintf("tool error %d: %s", e.Code, e.Message) }

// FromProto converts a toolpb.ToolError; nil gives nil.
func FromProto(e *toolpb.ToolError) *ToolError {
	if e == nil {
		return nil
	}
	return &ToolError{Code: int(e.GetCode()), Message: e.GetMessage()}
}

// Client is the host side of a plugin connection: what the host gets when
// it dispenses PluginName. It speaks JSON bytes so the host never decodes
// results on the call path. Safe for concurrent use; calls are
// multiplexed on one gRPC connection and do not wait for each other.
type Client struct {
	tool toolpb.ToolClient
}

// NewClient wraps a toolpb client. Hosts normally get a *Client from
// go-plugin's Dispense instead.
func NewClient(c toolpb.ToolClient) *Client { return &Client{tool: c} }

// Load returns the plugin's OpenTool document as JSON bytes. Errors: a
// *ToolError when the tool's Load failed; else the gRPC status error.
func (c *Client) Load(ctx context.Context) ([]byte, error) {
	resp, err := c.tool.Load(ctx, &toolpb.LoadRequest{})
	if err != nil {
		return nil, err
	}
	if e := FromProto(resp.GetError()); e != nil {
		return nil, e
	}
	return resp.GetDocument(), nil
}

// Invoke opens the Invoke stream of one call and sends the call: function
// name, its JSON arguments object (nil for none) and whether the function
// streams. ctx bounds the whole stream; cancelling it abandons the call
// without telling the plugin (use Call.Cancel for that). Errors: the gRPC
// status error when the stream could not be opened or the call not sent.
func (c *Client) Invoke(ctx context.Context, name string, args []byte, stream bool) (*Call, error) {
	s, err := c.tool.Invoke(InjectTrace(ctx))
	if err != nil {
		return nil, err
	}
	req := &toolpb.InvokeRequest{Msg: &toolpb.InvokeRequest_Call{Call: &toolpb.Call{Name: name, Arguments: args, Stream: stream}}}
	if err := s.Send(req); err != nil {
		return nil, err
	}
	return &Call{s: s}, nil
}

// Call is one call in flight on an Invoke stream. Recv may run
// concurrently with Cancel, but neither may run concurrently with itself.
type Call struct {
	s toolpb.Tool_InvokeClient
}

// cancelRequest is the one cancel message; it is never modified.
var cancelRequest = &toolpb.InvokeRequest{Msg: &toolpb.InvokeRequest_Cancel{Cancel: &toolpb.Cancel{}}}

// Cancel asks the plugin to end the call's context. It does not wait for
// the call to end; Recv tells when it has. Errors: the gRPC error when
// the stream is already broken.
func (c *Call) Cancel() error { return c.s.Send(cancelRequest) }

// Recv returns the next JSON object the plugin sent (a unary call's
// result, or one item of a stream). Errors: io.EOF when the plugin ended
// the call normally; a *ToolError when it ended it with the tool's error;
// else the gRPC status error (e.g. codes.Unavailable when the process
// died, codes.ResourceExhausted for a message over the receive limit).
func (c *Call) Recv() ([]byte, error) {
	ev, err := c.s.Recv()
	if err != nil {
		return nil, err
	}
	if e := FromProto(ev.GetError()); e != nil {
		return nil, e
	}
	return ev.GetData(), nil
}

// Watch opens the plugin's Watch stream (tool.proto): the returned
// function blocks until the plugin reports that its document changed
// (nil: call Load again) or the stream ends (an error: io.EOF when the
// plugin ended it, a gRPC status error with codes.Unimplemented when the
// plugin does not watch, codes.Canceled when ctx ended). ctx bounds the
// whole stream. Errors: the gRPC error when the stream could not be
// opened.
func (c *Client) Watch(ctx context.Context) (next func() error, err error) {
	s, err := c.tool.Watch(ctx, &toolpb.WatchRequest{})
	if err != nil {
		return nil, err
	}
	return func() error {
		_, err := s.Recv()
		return err
	}, nil
}
