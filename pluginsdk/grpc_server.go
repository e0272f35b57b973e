package pluginsdk

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"runtime/debug"
	"sync"

	"github.com/opentool-host/opentool-host/pluginsdk/toolpb"
)

// grpcServer adapts a Tool to the toolpb.Tool gRPC service. It runs in the
// plugin process.
type grpcServer struct {
	toolpb.UnimplementedToolServer
	tool  Tool
	calls callTable
}

var _ toolpb.ToolServer = (*grpcServer)(nil)

// Load implements toolpb.ToolServer.
func (s *grpcServer) Load(ctx context.Context, _ *toolpb.LoadRequest) (resp *toolpb.LoadResponse, err error) {
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

// Call implements toolpb.ToolServer.
func (s *grpcServer) Call(ctx context.Context, req *toolpb.CallRequest) (resp *toolpb.CallResponse, err error) {
	defer recoverInto(req.GetName(), func(e *Error) { resp, err = &toolpb.CallResponse{Error: toProto(e)}, nil })
	if id := req.GetCallId(); id != 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithCancel(ctx)
		s.calls.add(id, cancel)
		defer s.calls.remove(id)
		defer cancel()
	}
	if jc, ok := s.tool.(JSONCaller); ok {
		out, cerr := jc.CallJSON(ctx, req.GetName(), req.GetArguments())
		if cerr != nil {
			return &toolpb.CallResponse{Error: toProto(AsError(cerr))}, nil
		}
		if len(out) == 0 {
			out = []byte("{}")
		}
		return &toolpb.CallResponse{Result: out}, nil
	}
	args, aerr := decodeArgs(req.GetArguments())
	if aerr != nil {
		return &toolpb.CallResponse{Error: toProto(aerr)}, nil
	}
	result, cerr := s.tool.Call(ctx, req.GetName(), args)
	if cerr != nil {
		return &toolpb.CallResponse{Error: toProto(AsError(cerr))}, nil
	}
	b, merr := encodeResult(result)
	if merr != nil {
		return &toolpb.CallResponse{Error: toProto(merr)}, nil
	}
	return &toolpb.CallResponse{Result: b}, nil
}

// StreamCall implements toolpb.ToolServer.
func (s *grpcServer) StreamCall(req *toolpb.CallRequest, stream toolpb.Tool_StreamCallServer) (err error) {
	defer recoverInto(req.GetName(), func(e *Error) { err = stream.Send(&toolpb.StreamEvent{Error: toProto(e)}) })
	st, ok := s.tool.(Streamer)
	if !ok {
		return stream.Send(&toolpb.StreamEvent{Error: toProto(Errorf(CodeNotFound, "function %q does not stream", req.GetName()))})
	}
	args, aerr := decodeArgs(req.GetArguments())
	if aerr != nil {
		return stream.Send(&toolpb.StreamEvent{Error: toProto(aerr)})
	}
	send := func(item map[string]any) error {
		b, merr := encodeResult(item)
		if merr != nil {
			return merr
		}
		return stream.Send(&toolpb.StreamEvent{Data: b})
	}
	if serr := st.StreamCall(stream.Context(), req.GetName(), args, send); serr != nil {
		if stream.Context().Err() != nil {
			return stream.Context().Err()
		}
		return stream.Send(&toolpb.StreamEvent{Error: toProto(AsError(serr))})
	}
	return nil
}

// Cancel implements toolpb.ToolServer: it ends the context of the call
// with the given id.
func (s *grpcServer) Cancel(_ context.Context, req *toolpb.CancelRequest) (*toolpb.CancelResponse, error) {
	return &toolpb.CancelResponse{Found: s.calls.cancel(req.GetCallId())}, nil
}

// callTable maps in-flight call ids to their cancel functions.
type callTable struct {
	mu sync.Mutex
	m  map[uint64]context.CancelFunc
}

func (t *callTable) add(id uint64, cancel context.CancelFunc) {
	t.mu.Lock()
	if t.m == nil {
		t.m = make(map[uint64]context.CancelFunc)
	}
	t.m[id] = cancel
	t.mu.Unlock()
}

func (t *callTable) remove(id uint64) {
	t.mu.Lock()
	delete(t.m, id)
	t.mu.Unlock()
}

func (t *callTable) cancel(id uint64) bool {
	t.mu.Lock()
	c, ok := t.m[id]
	t.mu.Unlock()
	if ok {
		c()
	}
	return ok
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

func fromProto(e *toolpb.ToolError) *Error {
	if e == nil {
		return nil
	}
	return &Error{Code: int(e.GetCode()), Message: e.GetMessage()}
}
