package mcpapi

import (
	"bytes"
	"context"
	"encoding/json"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/opentool-host/opentool-host/host"
	"github.com/opentool-host/opentool-host/protocol/argcheck"
)

// A client session's call is checked against what that client was
// shown. The host routes calls by the tools of a declared MCP server's
// shared session, which lists every tool a client may be shown (MCP
// Apps: UI tools only to clients that declare io.modelcontextprotocol/ui,
// which the shared session declares); a client session with an upstream
// session of its own is listed that session's tools (clientDefs). So a
// tools/call of such a tool by a client session (clientCallMiddleware):
//
//	the client's own list                the call
//	lacks the tool                       the JSON-RPC error of an unknown tool
//	                                     (callError, KindNotFound), as for a
//	                                     name the host does not serve: the
//	                                     client is not told the tool exists
//	has it with the shared inputSchema   as it is
//	has it with another inputSchema      its arguments checked against the
//	                                     client's (host.WithArguments), not the
//	                                     shared one: "invalid params" as ever
//	(the server lists the same tools to  as it is
//	every client, or its list failed)
//
// The client's list is its own session's, kept by the adapter until the
// server says its tools changed, so a call asks the server once.

// ownValidators bounds the compiled input schemas of clients' own lists
// kept (by served name and schema); past it they are dropped.
const ownValidators = 64

// clientSchemas keeps the validators of clients' own input schemas.
type clientSchemas struct {
	mu sync.Mutex
	by map[string]*argcheck.Validator // name + "\x00" + schema
}

// clientCallMiddleware checks a client session's tools/call against its
// own list (see above).
func (s *Server) clientCallMiddleware(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		if method != "tools/call" {
			return next(ctx, method, req)
		}
		ctx, err := s.clientCall(ctx, req)
		if err != nil {
			return nil, err
		}
		return next(ctx, method, req)
	}
}

// clientCall returns ctx for tools/call req, carrying the validator of
// the client's own input schema when it differs from the shared one;
// errors: the unknown tool's when the client's own list lacks the tool.
func (s *Server) clientCall(ctx context.Context, req mcp.Request) (context.Context, error) {
	ss, _ := req.GetSession().(*mcp.ServerSession)
	p, _ := req.GetParams().(*mcp.CallToolParamsRaw)
	if ss == nil || ss.ID() == "" || p == nil || (*s.defs.Load())[p.Name] == nil {
		return ctx, nil // no client session, or not an MCP server's tool
	}
	fi, ok := (*s.served.Load())[p.Name]
	if !ok {
		return ctx, nil
	}
	own := s.clientList(s.withClient(ctx, ss), fi.Plugin, p.Name)
	if own == nil {
		return ctx, nil
	}
	def, ok := own[mcpName(fi.Function)]
	if !ok {
		_, err := s.callError(p.Name, &host.Error{Kind: host.KindNotFound, Function: p.Name, Message: "not in the client's own tools/list"})
		return ctx, err
	}
	if v := s.ownValidator(fi, def); v != nil {
		return host.WithArguments(ctx, v), nil
	}
	return ctx, nil
}

// ownValidator returns the validator of the inputSchema of def, fi's
// tool as the client's own list defines it, when it differs from the
// shared one (fi.Function.MCPTool's); nil when it is the same, or does not
// compile (the shared one then checks, as for every caller).
func (s *Server) ownValidator(fi host.FunctionInfo, def json.RawMessage) *argcheck.Validator {
	own, shared := inputSchema(def), inputSchema(fi.Function.MCPTool)
	if own == nil || bytes.Equal(own, shared) {
		return nil
	}
	key := fi.Function.Name + "\x00" + string(own)
	s.schemas.mu.Lock()
	defer s.schemas.mu.Unlock()
	if v, ok := s.schemas.by[key]; ok {
		return v
	}
	f := fi.Function.Clone()
	f.InputSchema = own
	v, err := argcheck.Compile(f)
	if err != nil {
		s.cfg.Logger.Warn("MCP tools/call: a client's own input schema does not compile; checking the shared one", "tool", fi.Function.Name, "error", err)
		v = nil
	}
	if s.schemas.by == nil || len(s.schemas.by) >= ownValidators {
		s.schemas.by = map[string]*argcheck.Validator{}
	}
	s.schemas.by[key] = v
	return v
}

// inputSchema is the inputSchema member of an MCP tool definition, as
// written; nil without one.
func inputSchema(def json.RawMessage) json.RawMessage {
	var t struct {
		InputSchema json.RawMessage `json:"inputSchema"`
	}
	if json.Unmarshal(def, &t) != nil {
		return nil
	}
	return t.InputSchema
}
