package mcpadapter

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/modelcontextprotocol/go-sdk/mcp"

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
// ends; nothing when none was noted (streamable HTTP).
func (a *Adapter) keepConn(cs *mcp.ClientSession, n *connNote) {
	if n.c == nil {
		return
	}
	a.conns.Store(cs, n.c)
	n.c.whenEnded(func() { a.conns.Delete(cs) })
}

// sendCall is tools/call of params, with args the caller's arguments (a
// JSON object, as rawArgs gives them), on cs: sent by the adapter itself
// when cs runs over a connection it keeps (keepConn) in a revision before
// SessionlessRevision, else by the SDK's client session. Errors: the
// call's (rawConn.call: the server's JSON-RPC error wrapped, ctx's,
// mcp.ErrConnectionClosed wrapped); a result that does not decode.
func (a *Adapter) sendCall(ctx context.Context, cs *mcp.ClientSession, params *mcp.CallToolParams, args []byte) (*mcp.CallToolResult, error) {
	v, ok := a.conns.Load(cs)
	ir := cs.InitializeResult()
	if !ok || ir == nil || ir.ProtocolVersion >= SessionlessRevision {
		return cs.CallTool(ctx, params)
	}
	body, err := callParams(params, rawArgs(args))
	if err != nil {
		return nil, err
	}
	raw, err := v.(*rawConn).call(ctx, mcpmethod.ToolsCall, body)
	if err != nil {
		return nil, err
	}
	res := new(mcp.CallToolResult)
	if err := res.UnmarshalJSON(raw); err != nil {
		return nil, fmt.Errorf("calling %q: decoding the result: %w", mcpmethod.ToolsCall, err)
	}
	return res, nil
}

// callParams is the params of tools/call p as the adapter sends them:
// {"_meta": p.Meta (when it has any), "name": p.Name, "arguments": args}.
// Errors: a _meta that does not encode.
func callParams(p *mcp.CallToolParams, args json.RawMessage) (json.RawMessage, error) {
	name := quoted(p.Name)
	b := make([]byte, 0, len(name)+len(args)+32)
	b = append(b, '{')
	if len(p.Meta) > 0 {
		meta, err := json.Marshal(p.Meta)
		if err != nil {
			return nil, fmt.Errorf("tools/call _meta: %w", err)
		}
		b = append(append(append(b, `"_meta":`...), meta...), ',')
	}
	b = append(append(b, `"name":`...), name...)
	b = append(append(append(b, `,"arguments":`...), args...), '}')
	return b, nil
}

// quoted is s as a JSON string: as it is between quotes when it is
// printable ASCII without a quote or a backslash (a tool's name, as good
// as always), else as json.Marshal writes it.
func quoted(s string) []byte {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c > 0x7e || c == '"' || c == '\\' {
			b, _ := json.Marshal(s) // a string: never fails
			return b
		}
	}
	return append(append(append(make([]byte, 0, len(s)+2), '"'), s...), '"')
}
