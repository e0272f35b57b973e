package wire

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

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
	// Exited is set by a plugin served in the host's process (Local)
	// whose program had ended when the call failed (a declared MCP
	// server that exited during the call): the failure is the plugin's
	// exit, not the tool's own error. Never set over a connection.
	Exited bool
	// Status, with Exited, is the exit status of a program the plugin
	// ran for this call alone (pluginsdk.Error.Exited), the plugin
	// itself running on; "" when the plugin's own program exited.
	Status string
	// Login is set by a plugin served in the host's process (Local)
	// when the caller must log in first (pluginsdk.Error.Login): the URL
	// to open or the command to run. Never set over a connection.
	Login string
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

// ErrResultTooLarge is wrapped by Call.Recv's error when the plugin sent a
// result or item over the host's receive limit; on either transport it
// ends that call only.
var ErrResultTooLarge = errors.New("result over the receive limit")

// Client is the host side of a plugin connection: what the host gets when
// it dispenses PluginName. It speaks JSON bytes so the host never decodes
// results on the call path. Safe for concurrent use; calls are
// multiplexed on one connection and do not wait for each other: the
// plugin's data channel once UseChannel was called (channel.go), else the
// gRPC connection's Invoke streams. Load and Watch are always gRPC. A
// plugin served in the host's process (NewLocalClient) is called
// directly.
type Client struct {
	tool toolpb.ToolClient
	ch   *Channel
	v3   bool // the plugin speaks protocol 3 (ProtocolV3)

	// local, when set, is the plugin served in the host's process
	// (NewLocalClient): every method calls it directly.
	local        Local
	localMax     int
	localStopped context.Context
}

// NewClient wraps a toolpb client. Hosts normally get a *Client from
// go-plugin's Dispense instead.
func NewClient(c toolpb.ToolClient) *Client { return &Client{tool: c} }

// Load returns the plugin's OpenTool document as JSON bytes. Errors: a
// *ToolError when the tool's Load failed; else the gRPC status error.
func (c *Client) Load(ctx context.Context) ([]byte, error) {
	if c.local != nil {
		return c.local.Load(ctx)
	}
	resp, err := c.tool.Load(ctx, &toolpb.LoadRequest{})
	if err != nil {
		return nil, err
	}
	if e := FromProto(resp.GetError()); e != nil {
		return nil, e
	}
	return resp.GetDocument(), nil
}

// V3 reports whether the plugin speaks protocol 3 (ProtocolV3): MCP
// results, messages, the caller's _meta, Catalog and Request.
func (c *Client) V3() bool { return c.v3 }

// UseChannel makes Invoke send calls over ch, the plugin's data channel
// (AcceptChannel). Call it before the first Invoke.
func (c *Client) UseChannel(ch *Channel) { c.ch = ch }

// Channel is the data channel calls use; nil when they use gRPC.
func (c *Client) Channel() *Channel { return c.ch }

// Invoke sends one call: function name, its JSON arguments object (nil
// for none) and whether the function streams, with ctx's trace context.
// On gRPC it opens an Invoke stream, which ctx bounds; cancelling ctx
// abandons the call without telling the plugin (use Call.Cancel for
// that). Errors: the gRPC status error, or the data channel's (wrapping
// ErrChannelClosed once it has closed), when the call could not be sent.
func (c *Client) Invoke(ctx context.Context, name string, args []byte, stream bool) (*Call, error) {
	return c.Start(ctx, Invocation{Name: name, Args: args, Stream: stream})
}

// Start is Invoke with the whole Invocation: the caller's _meta reaches
// plugins of protocol 3.
func (c *Client) Start(ctx context.Context, inv Invocation) (*Call, error) {
	if !c.v3 {
		inv.Meta = nil
	}
	if c.local != nil {
		return &Call{s: c.startLocal(ctx, inv)}, nil
	}
	if c.ch != nil {
		fs, err := c.ch.invoke(ctx, inv)
		if err != nil {
			return nil, err
		}
		return &Call{s: fs}, nil
	}
	s, err := c.tool.Invoke(InjectTrace(ctx))
	if err != nil {
		return nil, err
	}
	req := &toolpb.InvokeRequest{Msg: &toolpb.InvokeRequest_Call{Call: &toolpb.Call{Name: inv.Name, Arguments: inv.Args, Stream: inv.Stream, Meta: inv.Meta}}}
	if err := s.Send(req); err != nil {
		return nil, err
	}
	return &Call{s: &grpcStream{s: s}}, nil
}

// Call is one call in flight, on either transport. Next (or Recv) may
// run concurrently with Cancel and Reply, but not with itself.
type Call struct {
	s callStream
}

// callStream is one call on a transport: an Invoke stream (grpcStream)
// or a data channel call (frameStream).
type callStream interface {
	Next() (Event, error)
	Cancel() error
	Reply(Reply) error
}

var (
	_ callStream = (*grpcStream)(nil)
	_ callStream = (*frameStream)(nil)
	_ callStream = (*localStream)(nil)
)

// Cancel asks the plugin to end the call's context. It does not wait for
// the call to end; Next tells when it has. Errors: the transport's error
// when it is already broken.
func (c *Call) Cancel() error { return c.s.Cancel() }

// Reply answers the plugin's request r.ID (protocol 3). Errors: the
// transport's error when it is broken.
func (c *Call) Reply(r Reply) error { return c.s.Reply(r) }

// Next returns the next thing the plugin sent: a result or item
// (Event.Data, an MCP result with Event.MCP), or a message (protocol 3:
// a notification, or a request the caller answers with Reply). Errors:
// io.EOF when the plugin ended the call normally; a *ToolError when it
// ended it with the tool's error; ErrResultTooLarge (wrapped) for a
// result over the receive limit; else the transport's error (a gRPC
// status error such as codes.Unavailable, or ErrChannelClosed wrapped,
// when the process died).
func (c *Call) Next() (Event, error) { return c.s.Next() }

// Recv is Next for callers that take no messages: it returns the next
// result or item (an MCP result too), drops notifications and answers
// requests with CodeMethodNotFound. Errors are Next's.
func (c *Call) Recv() ([]byte, error) {
	for {
		ev, err := c.s.Next()
		if err != nil {
			return nil, err
		}
		if ev.Message == nil {
			return ev.Data, nil
		}
		if ev.Message.IsRequest() {
			_ = c.s.Reply(Reply{ID: ev.Message.ID, Error: &RPCError{Code: CodeMethodNotFound, Message: "the caller takes no requests"}})
		}
	}
}

// grpcStream is a call on an Invoke stream. Sends (cancel, replies) are
// serialized: a gRPC stream takes one sender at a time.
type grpcStream struct {
	s  toolpb.Tool_InvokeClient
	mu sync.Mutex
}

// cancelRequest is the one cancel message; it is never modified.
var cancelRequest = &toolpb.InvokeRequest{Msg: &toolpb.InvokeRequest_Cancel{Cancel: &toolpb.Cancel{}}}

// Cancel implements callStream.
func (g *grpcStream) Cancel() error { return g.send(cancelRequest) }

// Reply implements callStream.
func (g *grpcStream) Reply(r Reply) error { return g.send(replyRequest(r)) }

func (g *grpcStream) send(m *toolpb.InvokeRequest) error {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.s.Send(m)
}

// Next implements callStream.
func (g *grpcStream) Next() (Event, error) {
	ev, err := g.s.Recv()
	if err != nil {
		if status.Code(err) == codes.ResourceExhausted {
			return Event{}, fmt.Errorf("%w: %v", ErrResultTooLarge, err)
		}
		return Event{}, err
	}
	if e := FromProto(ev.GetError()); e != nil {
		return Event{}, e
	}
	if m := ev.GetMessage(); m != nil {
		if m.GetMethod() == "" || m.GetId() < 0 {
			return Event{}, fmt.Errorf("%w: a message without a method", ErrProtocol)
		}
		return Event{Message: &Message{ID: m.GetId(), Method: m.GetMethod(), Params: m.GetParams()}}, nil
	}
	if r := ev.GetMcpResult(); r != nil {
		return Event{Data: r, MCP: true}, nil
	}
	return Event{Data: ev.GetData()}, nil
}

// WatchEvent is what a plugin's Watch stream reported (tool.proto).
type WatchEvent struct {
	// Catalog: the MCP catalog changed; call Catalog again (protocol 3).
	Catalog bool
	// URI, when set, is the resource whose content changed (protocol 3).
	URI string
	// Log, when set, is the params of a notifications/message the plugin
	// sent outside any call (MCP "Server Utilities: Logging"): a declared
	// MCP server's log message, for the clients that asked for its level
	// (a Local plugin's only).
	Log json.RawMessage
	// List, when set, names the list (ListTools, ListPrompts,
	// ListResources) whose notifications/*/list_changed the plugin's MCP
	// server sent, for the host to pass on to its MCP clients as it came,
	// whether or not the lists the host serves changed (a Local plugin's
	// only).
	List string
}

// The lists of WatchEvent.List: MCP's tools, prompts and resources (with
// their templates), named as in notifications/NAME/list_changed.
const (
	ListTools     = "tools"
	ListPrompts   = "prompts"
	ListResources = "resources"
)

// Document reports whether the event says the document changed (the
// only event of protocol 2).
func (e WatchEvent) Document() bool {
	return !e.Catalog && e.URI == "" && e.Log == nil && e.List == ""
}

// Watch opens the plugin's Watch stream (tool.proto): the returned
// function blocks until the plugin reports a change (the event; nil
// error: the document changed, call Load again; under protocol 3 also
// the catalog or a resource) or the stream ends (an error: io.EOF when
// the plugin ended it, a gRPC status error with codes.Unimplemented when
// the plugin does not watch, codes.Canceled when ctx ended). ctx bounds
// the whole stream. Errors: the gRPC error when the stream could not be
// opened.
func (c *Client) Watch(ctx context.Context) (next func() (WatchEvent, error), err error) {
	if c.local != nil {
		return c.local.Watch(ctx)
	}
	s, err := c.tool.Watch(ctx, &toolpb.WatchRequest{})
	if err != nil {
		return nil, err
	}
	return func() (WatchEvent, error) {
		ev, err := s.Recv()
		if err != nil || !c.v3 {
			return WatchEvent{}, err
		}
		switch ev.GetChange() {
		case toolpb.Change_CATALOG:
			return WatchEvent{Catalog: true}, nil
		case toolpb.Change_RESOURCE_UPDATED:
			return WatchEvent{URI: ev.GetUri()}, nil
		}
		return WatchEvent{}, nil
	}, nil
}

// Catalog returns the plugin's MCP catalog as JSON (protocol 3), nil
// when the plugin has none (it answers UNIMPLEMENTED, or speaks protocol
// 2). Errors: a *ToolError when its Catalog failed; else the gRPC error.
func (c *Client) Catalog(ctx context.Context) ([]byte, error) {
	if !c.v3 {
		return nil, nil
	}
	if c.local != nil {
		return c.local.Catalog(ctx)
	}
	resp, err := c.tool.Catalog(ctx, &toolpb.CatalogRequest{})
	if status.Code(err) == codes.Unimplemented {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	if e := FromProto(resp.GetError()); e != nil {
		return nil, e
	}
	return resp.GetCatalog(), nil
}

// Request sends MCP request method with params (JSON) to the plugin's
// catalog (protocol 3) and returns its result (JSON). Errors: the
// plugin's *RPCError; one with CodeMethodNotFound when the plugin has no
// catalog; else the gRPC error.
func (c *Client) Request(ctx context.Context, method string, params []byte) ([]byte, error) {
	if !c.v3 {
		return nil, &RPCError{Code: CodeMethodNotFound, Message: method + ": the plugin speaks plugin protocol 2, which has no MCP catalog"}
	}
	if c.local != nil {
		return c.local.Request(ctx, method, params)
	}
	resp, err := c.tool.Request(ctx, &toolpb.MCPRequest{Method: method, Params: params})
	if status.Code(err) == codes.Unimplemented {
		return nil, &RPCError{Code: CodeMethodNotFound, Message: method + ": the plugin serves no MCP catalog"}
	}
	if err != nil {
		return nil, err
	}
	if e := FromProtoRPCError(resp.GetError()); e != nil {
		return nil, e
	}
	return resp.GetResult(), nil
}
