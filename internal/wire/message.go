package wire

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"

	"github.com/opentool-host/opentool-host/internal/rpcerr"
	"github.com/opentool-host/opentool-host/internal/wire/toolpb"
)

// Protocol 3 (ProtocolV3) carries, beside a call's result, what MCP
// carries during a call (MCP 2025-11-25 "Utilities: Progress", "Server
// Utilities: Logging", "Client Features": sampling, elicitation, roots):
//
//   - the caller's request _meta, sent with the call (Invocation.Meta);
//   - Messages from the plugin: notifications (notifications/progress,
//     notifications/message) and requests (sampling/createMessage,
//     elicitation/create, roots/list) that the caller answers;
//   - Replies from the host, one per request, by id;
//   - a unary result that is an MCP CallToolResult (Event.MCP).
//
// They travel on the call's own stream (gRPC Invoke, or the data
// channel's call id), so a notification the plugin sends before its
// result reaches the caller before the result does.

// Message is a JSON-RPC notification (ID 0) or request from the plugin to
// the caller of the call it travels on.
type Message struct {
	// ID is the request's id, unique within the call; 0 for a
	// notification.
	ID int64 `json:"id,omitempty"`
	// Method is the MCP method, e.g. "notifications/progress".
	Method string `json:"method"`
	// Params is the method's params, a JSON object (nil: none).
	Params json.RawMessage `json:"params,omitempty"`
}

// IsRequest reports whether m expects a Reply.
func (m *Message) IsRequest() bool { return m.ID != 0 }

// Reply answers the plugin's request ID: Result, or Error when it failed.
type Reply struct {
	// ID is the request's Message.ID.
	ID int64 `json:"id"`
	// Result is the caller's result, a JSON object.
	Result json.RawMessage `json:"result,omitempty"`
	// Error is set when the request failed.
	Error *RPCError `json:"error,omitempty"`
}

// RPCError is a JSON-RPC 2.0 error object (rpcerr.Error, which
// internal/coderun's inner calls carry too). It is an error: "MESSAGE
// (JSON-RPC error CODE)".
type RPCError = rpcerr.Error

// JSON-RPC error codes the host uses in replies (JSON-RPC 2.0, section
// 5.1).
const (
	// CodeMethodNotFound: nobody can answer the request (an OpenTool
	// caller, an MCP client without the capability, a host or plugin of
	// protocol 2).
	CodeMethodNotFound = -32601
	// CodeInternalError: the relay failed.
	CodeInternalError = -32603
)

// toProtoRPCError converts e for the gRPC wire; nil gives nil.
func toProtoRPCError(e *RPCError) *toolpb.RPCError {
	if e == nil {
		return nil
	}
	return &toolpb.RPCError{Code: int32(e.Code), Message: e.Message, Data: e.Data}
}

// FromProtoRPCError converts a toolpb.RPCError; nil gives nil.
func FromProtoRPCError(e *toolpb.RPCError) *RPCError {
	if e == nil {
		return nil
	}
	return &RPCError{Code: int(e.GetCode()), Message: e.GetMessage(), Data: e.GetData()}
}

// ToProtoRPCError converts e for the gRPC wire; nil gives nil.
func ToProtoRPCError(e *RPCError) *toolpb.RPCError { return toProtoRPCError(e) }

// ReplyToProto converts r to the gRPC InvokeRequest that carries it.
func replyRequest(r Reply) *toolpb.InvokeRequest {
	return &toolpb.InvokeRequest{Msg: &toolpb.InvokeRequest_Reply{Reply: &toolpb.Reply{Id: r.ID, Result: r.Result, Error: toProtoRPCError(r.Error)}}}
}

// ReplyFromProto converts a gRPC reply.
func ReplyFromProto(r *toolpb.Reply) Reply {
	return Reply{ID: r.GetId(), Result: r.GetResult(), Error: FromProtoRPCError(r.GetError())}
}

// MessageToProto converts m for the gRPC wire.
func MessageToProto(m Message) *toolpb.Message {
	return &toolpb.Message{Id: m.ID, Method: m.Method, Params: m.Params}
}

// Event is one thing the plugin sent on a call (Call.Next): a result or
// item (Data), or a Message.
type Event struct {
	// Data is a unary call's result or one item of a streaming call, a
	// JSON object; nil for a message.
	Data []byte
	// MCP reports that Data is an MCP CallToolResult (MCP 2025-11-25
	// "Tools", Tool Result) rather than a result object (protocol 3,
	// unary calls only).
	MCP bool
	// Message is a notification or request from the plugin (protocol 3);
	// nil for a result or item.
	Message *Message
}

// Invocation is one call to start (Client.Start).
type Invocation struct {
	// Name is the function's name as the plugin declares it.
	Name string
	// Args is the JSON object of arguments (nil: none).
	Args []byte
	// Stream is true for a streaming function.
	Stream bool
	// Meta is the caller's MCP request _meta, a JSON object (nil: none);
	// sent to plugins of protocol 3 only.
	Meta []byte
}

// CallOut is how a call's handler in the plugin answers (CallHandler,
// and pluginsdk's gRPC server): results and items, an MCP result, and
// messages to the caller.
type CallOut interface {
	// Send sends a unary call's result or one item of a streaming call.
	Send(data []byte) error
	// SendMCP sends a unary call's result as an MCP CallToolResult, its
	// JSON (protocol 3; Peer().V3 says whether the host takes it).
	SendMCP(result []byte) error
	// Peer is the call's side of the messages to its caller.
	Peer() *Peer
}

// Peer is the plugin's side of the messages of one call (protocol 3):
// it sends notifications and requests to the caller and matches the
// host's replies to the requests waiting for them. Safe for concurrent
// use. Under protocol 2 notifications are dropped and requests fail with
// CodeMethodNotFound.
type Peer struct {
	send func(Message) error // nil under protocol 2
	meta []byte

	mu      sync.Mutex
	next    int64
	pending map[int64]chan Reply
	closed  bool
}

// NewPeer returns the peer of a call whose messages go out through send
// (nil: the host speaks protocol 2 and takes none), with the caller's
// _meta (nil: none).
func NewPeer(send func(Message) error, meta []byte) *Peer {
	return &Peer{send: send, meta: meta} // pending made by the first Request: most calls send none
}

// V3 reports whether the host takes protocol 3's messages and MCP
// results on this call.
func (p *Peer) V3() bool { return p != nil && p.send != nil }

// Meta is the caller's MCP request _meta, a JSON object; nil when the
// caller sent none (or the host speaks protocol 2).
func (p *Peer) Meta() []byte {
	if p == nil {
		return nil
	}
	return p.meta
}

// DecodeMeta is b, an MCP request's _meta (Peer.Meta, a JSON object),
// decoded; nil when b is empty or not an object.
func DecodeMeta(b []byte) map[string]any {
	if len(b) == 0 {
		return nil
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		return nil
	}
	return m
}

// ErrNoCaller is the error of a request on a call whose host takes no
// messages (protocol 2) or that has ended.
var ErrNoCaller = &RPCError{Code: CodeMethodNotFound, Message: "no caller can answer this request: the host speaks plugin protocol 2"}

// Notify sends notification method with params (JSON, nil for none) to
// the caller. Under protocol 2 it does nothing. Errors: the transport's.
func (p *Peer) Notify(method string, params []byte) error {
	if !p.V3() {
		return nil
	}
	return p.send(Message{Method: method, Params: params})
}

// Request sends request method with params to the caller and waits for
// the reply, or for ctx. Errors: the caller's *RPCError; ErrNoCaller
// under protocol 2 or once the call ended; ctx's error; the transport's.
func (p *Peer) Request(ctx context.Context, method string, params []byte) (json.RawMessage, error) {
	if !p.V3() {
		return nil, ErrNoCaller
	}
	ch := make(chan Reply, 1)
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return nil, ErrNoCaller
	}
	p.next++
	id := p.next
	if p.pending == nil {
		p.pending = map[int64]chan Reply{}
	}
	p.pending[id] = ch
	p.mu.Unlock()
	defer p.forget(id)
	if err := p.send(Message{ID: id, Method: method, Params: params}); err != nil {
		return nil, err
	}
	select {
	case r := <-ch:
		if r.Error != nil {
			return nil, r.Error
		}
		return r.Result, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// forget drops request id.
func (p *Peer) forget(id int64) {
	p.mu.Lock()
	delete(p.pending, id)
	p.mu.Unlock()
}

// Deliver hands the host's reply to the request waiting for it. Errors:
// a reply to no request in flight (a late reply to a request whose
// waiter gave up is dropped without error when its id was issued).
func (p *Peer) Deliver(r Reply) error {
	p.mu.Lock()
	ch, ok := p.pending[r.ID]
	issued := r.ID > 0 && r.ID <= p.next
	p.mu.Unlock()
	if !ok {
		if issued {
			return nil
		}
		return fmt.Errorf("%w: a reply to request %d, which was never sent", ErrProtocol, r.ID)
	}
	select {
	case ch <- r:
	default:
	}
	return nil
}

// Close fails the requests still waiting with ErrNoCaller; requests
// after it fail at once.
func (p *Peer) Close() {
	p.mu.Lock()
	p.closed = true
	pending := p.pending
	p.pending = nil
	p.mu.Unlock()
	for _, ch := range pending {
		select {
		case ch <- Reply{Error: ErrNoCaller}:
		default:
		}
	}
}

// encodeMessage is the body of a message frame.
func encodeMessage(m Message) ([]byte, error) { return json.Marshal(m) }

// decodeMessage decodes a message frame's body. Errors: ErrProtocol
// wrapped when it is not a message.
func decodeMessage(body []byte) (*Message, error) {
	var m Message
	if err := json.Unmarshal(body, &m); err != nil || m.Method == "" || m.ID < 0 {
		return nil, fmt.Errorf("%w: a message frame that is not a JSON-RPC message", ErrProtocol)
	}
	return &m, nil
}

// decodeReply decodes a reply frame's body. Errors: ErrProtocol wrapped.
func decodeReply(body []byte) (Reply, error) {
	var r Reply
	if err := json.Unmarshal(body, &r); err != nil || r.ID <= 0 {
		return Reply{}, fmt.Errorf("%w: a reply frame that is not a reply", ErrProtocol)
	}
	return r, nil
}

// errNotV3 is the error of a protocol 3 send under protocol 2.
var errNotV3 = errors.New("the host speaks plugin protocol 2, which has no MCP results")
