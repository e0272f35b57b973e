package pluginsdk

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"runtime/debug"
	"sync"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/opentool-host/opentool-host/internal/wire"
	"github.com/opentool-host/opentool-host/internal/wire/toolpb"
)

// server adapts a Tool to the toolpb.Tool gRPC service (package wire). It
// runs in the plugin process.
type server struct {
	toolpb.UnimplementedToolServer
	tool Tool
	// v3: the host speaks plugin protocol 3 (wire.ProtocolV3): calls may
	// answer with MCP results and messages.
	v3 bool

	changesOnce sync.Once
	changes     <-chan struct{}      // DocumentWatcher's channel; nil when not one
	catChanges  <-chan CatalogChange // CatalogWatcher's (protocol 3); nil when not one
}

var _ toolpb.ToolServer = (*server)(nil)

// Load implements toolpb.ToolServer.
func (s *server) Load(ctx context.Context, _ *toolpb.LoadRequest) (resp *toolpb.LoadResponse, err error) {
	defer recoverInto("Load", func(e *Error) { resp, err = &toolpb.LoadResponse{Error: toProto(e)}, nil })
	doc, lerr := s.tool.Load(ctx)
	if lerr != nil {
		return &toolpb.LoadResponse{Error: toProto(AsError(lerr))}, nil
	}
	if doc == nil {
		return &toolpb.LoadResponse{Error: toProto(ToolFailure("Load returned no document"))}, nil
	}
	b, merr := json.Marshal(doc)
	if merr != nil {
		return &toolpb.LoadResponse{Error: toProto(ToolFailure("encode document: %v", merr))}, nil
	}
	return &toolpb.LoadResponse{Document: b}, nil
}

// Watch implements toolpb.ToolServer: it sends one event per value of
// the tool's DocumentWatcher channel, and under protocol 3 one per value
// of its CatalogWatcher channel (change CATALOG, or RESOURCE_UPDATED with
// the URI), until the host ends the stream. Errors: codes.Unimplemented
// when the tool watches neither.
func (s *server) Watch(_ *toolpb.WatchRequest, stream toolpb.Tool_WatchServer) error {
	s.changesOnce.Do(func() {
		if w, ok := s.tool.(DocumentWatcher); ok {
			s.changes = w.DocumentChanged()
		}
		if w, ok := s.tool.(CatalogWatcher); ok && s.v3 {
			s.catChanges = w.CatalogChanged()
		}
	})
	if s.changes == nil && s.catChanges == nil {
		return status.Error(codes.Unimplemented, "the tool's document does not change")
	}
	for {
		ev := &toolpb.WatchEvent{}
		select {
		case <-stream.Context().Done():
			return nil
		case <-s.changes:
		case c := <-s.catChanges:
			ev.Change, ev.Uri = toolpb.Change_CATALOG, c.URI
			if c.URI != "" {
				ev.Change = toolpb.Change_RESOURCE_UPDATED
			}
		}
		if err := stream.Send(ev); err != nil {
			return err
		}
	}
}

// Invoke implements toolpb.ToolServer: it runs the call of the stream's
// first message with a context that ends when the host sends cancel (or
// the connection goes), and answers with data events (or, protocol 3, an
// MCP result event and message events) or one error event.
func (s *server) Invoke(stream toolpb.Tool_InvokeServer) error {
	first, err := stream.Recv()
	if err != nil {
		return err
	}
	call := first.GetCall()
	if call == nil {
		return status.Error(codes.InvalidArgument, "the first message of Invoke must be a call")
	}
	// The caller's trace (W3C traceparent in the stream's metadata):
	// trace.SpanContextFromContext(ctx) in the tool gives its trace id.
	ctx, cancel := context.WithCancel(wire.ExtractTrace(stream.Context()))
	defer cancel()
	out := &grpcOut{stream: stream, v3: s.v3}
	var sendMsg func(wire.Message) error
	if s.v3 {
		sendMsg = func(m wire.Message) error {
			if err := ctx.Err(); err != nil {
				return err
			}
			return out.send(&toolpb.InvokeEvent{Message: wire.MessageToProto(m)})
		}
	}
	out.peer = wire.NewPeer(sendMsg, call.GetMeta())
	defer out.peer.Close()
	go watchCancel(stream, cancel, out.peer)
	if e := s.run(ctx, call, out); e != nil {
		return out.send(&toolpb.InvokeEvent{Error: toProto(e)})
	}
	return nil
}

// grpcOut is the wire.CallOut of a call on an Invoke stream; its sends
// are serialized (a stream takes one sender at a time, and messages may
// be sent from any goroutine of the tool).
type grpcOut struct {
	stream toolpb.Tool_InvokeServer
	v3     bool
	peer   *wire.Peer
	mu     sync.Mutex
}

func (o *grpcOut) send(ev *toolpb.InvokeEvent) error {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.stream.Send(ev)
}

// Send implements wire.CallOut.
func (o *grpcOut) Send(b []byte) error { return o.send(&toolpb.InvokeEvent{Data: b}) }

// SendMCP implements wire.CallOut.
func (o *grpcOut) SendMCP(b []byte) error {
	if !o.v3 {
		return ToolFailure("the host speaks plugin protocol 2, which has no MCP results")
	}
	return o.send(&toolpb.InvokeEvent{McpResult: b})
}

// Peer implements wire.CallOut.
func (o *grpcOut) Peer() *wire.Peer { return o.peer }

// callFrame implements wire.CallHandler: a call from the data channel
// runs exactly as one from an Invoke stream.
func (s *server) callFrame(ctx context.Context, cf *wire.CallFrame, out wire.CallOut) *wire.ToolError {
	e := s.run(ctx, &toolpb.Call{Name: cf.Name, Arguments: cf.Arguments, Stream: cf.Stream}, out)
	if e == nil {
		return nil
	}
	return WireError(e)
}

// WireError is err (AsError: a tool's *Error, any other error code 500)
// as the host's side of the plugin wire takes a tool's error: a
// *wire.ToolError with its code, message, exit status and login link.
// A tool served in the host's process that the host calls itself
// (host/supervise.Direct: declared/mcpadapter, declared/cmdtool) fails
// its calls with it.
func WireError(err error) *wire.ToolError {
	e := AsError(err)
	return &wire.ToolError{Code: e.Code, Message: e.Message, Exited: e.Exited != "", Status: e.Exited, Login: e.Login}
}

// watchCancel ends the call's context when the host sends cancel or the
// stream breaks, and hands the host's replies to the call's peer. A
// half-close by the host alone does not cancel.
func watchCancel(stream toolpb.Tool_InvokeServer, cancel context.CancelFunc, peer *wire.Peer) {
	for {
		m, err := stream.Recv()
		if err == io.EOF {
			return
		}
		if r := m.GetReply(); err == nil && r != nil {
			if peer.Deliver(wire.ReplyFromProto(r)) != nil {
				cancel() // a reply to nothing: the host is confused
				return
			}
			continue
		}
		if err != nil || m.GetCancel() != nil {
			cancel()
			return
		}
	}
}

// run calls the tool's method for call and hands each encoded result to
// out. A panic becomes a code-500 *Error. The tool's context carries the
// call's peer (Progress, Log, ClientRequest).
func (s *server) run(ctx context.Context, call *toolpb.Call, out wire.CallOut) (e *Error) {
	defer recoverInto(call.GetName(), func(pe *Error) { e = pe })
	ctx = withPeer(ctx, out.Peer())
	send := out.Send
	if call.GetStream() {
		return s.stream(ctx, call, send)
	}
	if rc, ok := s.tool.(ResultCaller); ok {
		res, err := rc.CallResult(ctx, call.GetName(), call.GetArguments())
		if err != nil {
			return AsError(err)
		}
		return sendResult(res, out)
	}
	if jc, ok := s.tool.(JSONCaller); ok {
		out, err := jc.CallJSON(ctx, call.GetName(), call.GetArguments())
		if err != nil {
			return AsError(err)
		}
		if len(out) == 0 {
			out = []byte("{}")
		}
		return AsError(send(out))
	}
	args, aerr := decodeArgs(call.GetArguments())
	if aerr != nil {
		return aerr
	}
	result, err := s.tool.Call(ctx, call.GetName(), args)
	if err != nil {
		return AsError(err)
	}
	b, merr := encodeResult(result)
	if merr != nil {
		return merr
	}
	return AsError(send(b))
}

// stream runs a streaming function through the tool's Streamer.
func (s *server) stream(ctx context.Context, call *toolpb.Call, send func([]byte) error) *Error {
	st, ok := s.tool.(Streamer)
	if !ok {
		return Errorf(CodeNotFound, "function %q does not stream", call.GetName())
	}
	args, aerr := decodeArgs(call.GetArguments())
	if aerr != nil {
		return aerr
	}
	return AsError(st.StreamCall(ctx, call.GetName(), args, func(item map[string]any) error {
		b, merr := encodeResult(item)
		if merr != nil {
			return merr
		}
		return send(b)
	}))
}

// sendResult sends res: an MCP result as it is when the host takes it
// (protocol 3), else its projection; an object as it is ({} when empty).
func sendResult(res Result, out wire.CallOut) *Error {
	if res.MCP == nil {
		if len(res.Object) == 0 {
			res.Object = []byte("{}")
		}
		return AsError(out.Send(res.Object))
	}
	if !out.Peer().V3() {
		obj, err := ProjectResult(res.MCP)
		if err != nil {
			return AsError(err)
		}
		return AsError(out.Send(obj))
	}
	if res.MCPJSON != nil {
		return AsError(out.SendMCP(res.MCPJSON))
	}
	b, err := encodeMCPResult(res.MCP)
	if err != nil {
		return AsError(err)
	}
	return AsError(out.SendMCP(b))
}

// decodeArgs decodes a JSON arguments object; empty or "null" gives nil.
func decodeArgs(b []byte) (map[string]any, *Error) {
	if len(b) == 0 || string(b) == "null" {
		return nil, nil
	}
	var args map[string]any
	if err := json.Unmarshal(b, &args); err != nil {
		return nil, InvalidArguments("arguments must be a JSON object: %v", err)
	}
	return args, nil
}

// encodeResult encodes a result object; nil gives "{}".
func encodeResult(m map[string]any) ([]byte, *Error) {
	if m == nil {
		return []byte("{}"), nil
	}
	b, err := json.Marshal(m)
	if err != nil {
		return nil, ToolFailure("encode result: %v", err)
	}
	return b, nil
}

// recoverInto turns a panic in a tool method into a code-500 *Error handed
// to set, and prints the stack to stderr (the host logs it under the
// plugin's name). It must be deferred directly.
func recoverInto(what string, set func(*Error)) {
	if r := recover(); r != nil {
		fmt.Fprintf(os.Stderr, "[ERROR] panic in %s: %v\n%s", what, r, debug.Stack())
		set(ToolFailure("%s panicked: %v", what, r))
	}
}

func toProto(e *Error) *toolpb.ToolError {
	if e == nil {
		return nil
	}
	return &toolpb.ToolError{Code: int32(e.Code), Message: e.Message}
}
