package mcpsession

import "github.com/modelcontextprotocol/go-sdk/mcp"

// SessionlessRevision is the first MCP revision without sessions
// (2026-07-28, SEP-2575): a client of it or a later one sends each
// request on its own, with its protocol version in the request.
const SessionlessRevision = "2026-07-28"

// SpeaksSessionless reports whether the client of ss initialized with
// SessionlessRevision or a later one (the stateless handler's sessions
// carry the request's revision as their initialize params).
func SpeaksSessionless(ss *mcp.ServerSession) bool {
	ip := ss.InitializeParams()
	return ip != nil && ip.ProtocolVersion >= SessionlessRevision
}
