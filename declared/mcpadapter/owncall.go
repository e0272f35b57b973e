package mcpadapter

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/opentool-host/opentool-host/internal/mcpresult"
	"github.com/opentool-host/opentool-host/protocol/mcpmethod"
)

// A tools/call over stdio or HTTP+SSE in a revision before
// SessionlessRevision is sent by the adapter itself on the session's
// connection (rawConn.call), not by the SDK's client session: the
// request written as one JSON-RPC message (the caller's arguments as
// they came, the relay's _meta), its response taken off the connection
// before the SDK sees it, its result decoded once (CallToolResult's own
// decoding, as the SDK's). The SDK's session stays the session: it made
// the handshake, and it answers what the server asks and hears what it
// tells during the call, which the relay routes to the caller by the
// calls in flight, as for every call. What the SDK's client call adds on
// that path, and the adapter does not need, is left out: its sending
// middleware, its in-flight registry and its multi round-trip loop,
// which a server of those revisions does not use (callResult refuses an
// input-required result). Over streamable HTTP (the SDK keeps the
// session's state on its own connection), in SessionlessRevision and for
// a task the SDK's client sends it (cs.CallTool).

// connNote is where Connect of a connection of the adapter's notes it
// (noteConn), so that the session made over it can be given it
// (keepConn).
type connNote struct{ c *rawConn }

// connNoteKey is the context key of a *connNote.
type connNoteKey struct{}

// withConnNote returns ctx, whose Connect notes its connection in the
// *connNote returned.
func withConnNote(ctx context.Context) (context.Context, *connNote) {
	n := new(connNote)
	return context.WithValue(ctx, connNoteKey{}, n), n
}

// noteConn notes c in ctx's *connNote, if any, and returns c.
func noteConn(ctx context.Context, c *rawConn) *rawConn {
	if n, _ := ctx.Value(connNoteKey{}).(*connNote); n != nil {
		n.c = c
	}
	return c
}

// keepConn records that cs runs over n's connection, until reading it
// ends, when the adapter sends cs's tools/call itself: a connection was
// noted (stdio, HTTP+SSE; not streamable HTTP) and cs speaks a revision
// before SessionlessRevision.
func (a *Adapter) keepConn(cs *mcp.ClientSession, n *connNote) {
	if ir := cs.InitializeResult(); n.c == nil || ir == nil || ir.ProtocolVersion >= SessionlessRevision {
		return
	}
	a.conns.Store(cs, n.c)
	n.c.whenEnded(func() { a.conns.Delete(cs) })
}

// sendCall is tools/call of params on cs: sent by the adapter itself
// when it keeps cs's connection (keepConn), else by the SDK's client
// session. A result the adapter received itself is kept as the server
// wrote it when it is plain (mcpresult.Plain: the SDK would decode it and
// encode it back to the same JSON value), else decoded once
// (CallToolResult's own decoding, as the SDK's). Errors: the call's
// (rawConn.call: the server's JSON-RPC error wrapped, ctx's,
// mcp.ErrConnectionClosed wrapped); a result that does not decode.
func (a *Adapter) sendCall(ctx context.Context, cs *mcp.ClientSession, params *mcp.CallToolParams) (toolResult, error) {
	v, ok := a.conns.Load(cs)
	if !ok {
		return decodedResult(cs.CallTool(ctx, params))
	}
	body, err := callParams(params)
	if err != nil {
		return toolResult{}, err
	}
	raw, err := v.(*rawConn).call(ctx, mcpmethod.ToolsCall, body)
	if err != nil {
		return toolResult{}, err
	}
	if mcpresult.Plain(raw) {
		return toolResult{plain: raw}, nil
	}
	return decodedResult(decodeResult(raw))
}

// decodeResult is raw, a tools/call result, decoded as the SDK's client
// decodes one (CallToolResult's own decoding). Errors: raw does not
// decode.
func decodeResult(raw []byte) (*mcp.CallToolResult, error) {
	res := new(mcp.CallToolResult)
	if err := res.UnmarshalJSON(raw); err != nil {
		return nil, fmt.Errorf("calling %q: decoding the result: %w", mcpmethod.ToolsCall, err)
	}
	return res, nil
}

// toolResult is a tools/call result as the adapter received it: decoded
// (res), or plain, the server's JSON of a result mcpresult.Plain passed
// (owned: the response's own bytes), not decoded. One of the two is set.
type toolResult struct {
	res   *mcp.CallToolResult
	plain []byte
}

// decodedResult is res and err, a call's decoded result, as a toolResult.
func decodedResult(res *mcp.CallToolResult, err error) (toolResult, error) {
	return toolResult{res: res}, err
}

// decoded returns t's result decoded: res, or plain decoded as the SDK's
// client decodes a result. Errors: plain that does not decode (a plain
// result always does).
func (t toolResult) decoded() (*mcp.CallToolResult, error) {
	if t.plain == nil {
		return t.res, nil
	}
	return decodeResult(t.plain)
}

// callParams is the params of tools/call p as the adapter sends them:
// {"_meta": p.Meta (when it has any), "name": p.Name, "arguments":
// p.Arguments}, the arguments as they are when they are JSON already
// (callTool's rawArgs). Errors: a _meta or arguments that do not encode.
func callParams(p *mcp.CallToolParams) (json.RawMessage, error) {
	args, ok := p.Arguments.(json.RawMessage)
	if !ok {
		var err error
		if args, err = json.Marshal(p.Arguments); err != nil {
			return nil, fmt.Errorf("tools/call arguments: %w", err)
		}
	}
	b := make([]byte, 0, len(p.Name)+len(args)+32)
	b = append(b, '{')
	if len(p.Meta) > 0 {
		meta, err := json.Marshal(p.Meta)
		if err != nil {
			return nil, fmt.Errorf("tools/call _meta: %w", err)
		}
		b = append(append(append(b, `"_meta":`...), meta...), ',')
	}
	b = appendQuoted(append(b, `"name":`...), p.Name)
	b = append(append(append(b, `,"arguments":`...), args...), '}')
	return b, nil
}

// appendQuoted appends s as a JSON string to b: as it is between quotes
// when it is printable ASCII without a quote or a backslash (a tool's
// name, as good as always), else as json.Marshal writes it.
func appendQuoted(b []byte, s string) []byte {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c > 0x7e || c == '"' || c == '\\' {
			q, _ := json.Marshal(s) // a string: never fails
			return append(b, q...)
		}
	}
	return append(append(append(b, '"'), s...), '"')
}
