package mcpadapter

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// The own view of a caller of 2026-07-28. Such a caller has no session:
// each request declares its clientInfo, capabilities and protocol version
// in its _meta (mcpsession.Request.Init). Its tools/list of a per-client
// server (not "sessions": "shared") is the list a new session of a client
// with that identity is given (callerTools), the same toolLists entry a
// client session with that identity is shown (identityOf), so that any
// replica lists it alike and the host keeps nothing per caller. An
// identity not yet listed is listed on a session opened for it alone
// (for a command server, one more process) and closed at once; one such
// listing runs at a time per server (a caller that varies its clientInfo
// per request costs one listing at a time, never a process each at
// once), and at most maxToolLists identities are kept. The _meta is the
// caller's own claim: it chooses which client's view it is held to, and
// that view only narrows what its API key is served (the front end lists
// and serves nothing the shared session did not list).

// callerTools returns the tools the server lists to a new session of the
// client of init (toolLists by identityOf; listed now, listAs, when no
// such client was listed before). Errors: ctx's while another identity
// is listed; the adapter stopped; listAs's.
func (a *Adapter) callerTools(ctx context.Context, init *mcp.InitializeParams) ([]json.RawMessage, error) {
	id := identityOf(init)
	if tools, ok := a.toolLists.get(id); ok {
		return tools, nil
	}
	release, err := a.toolLists.turn(ctx)
	if err != nil {
		return nil, err
	}
	defer release()
	if tools, ok := a.toolLists.get(id); ok { // listed while this one waited
		return tools, nil
	}
	tools, err := a.listAs(ctx, init)
	if err != nil {
		return nil, err
	}
	a.toolLists.put(id, tools)
	return tools, nil
}

// listAs opens a session of the client of init with the server (a
// command: one more process, through the same launcher.Starter), lists
// its tools, every page, as the server wrote them, and closes it, within
// upstreamInitTimeout. Errors: the adapter stopped; the transport's, the
// connection's, the list's; ctx's.
func (a *Adapter) listAs(ctx context.Context, init *mcp.InitializeParams) ([]json.RawMessage, error) {
	a.clients.mu.Lock()
	closed := a.clients.closed
	a.clients.mu.Unlock()
	if closed {
		return nil, fmt.Errorf("MCP server %q: stopped", a.launch.Name)
	}
	ctx, cancel := context.WithTimeout(ctx, upstreamInitTimeout)
	defer cancel()
	u := &upstream{ready: make(chan struct{}), relay: newRelay(a.launch.Name, a.log)}
	cs, err := a.connectAs(ctx, u, a.clientAs(init, &mcp.ClientOptions{}, u.relay), clientVersion(init.ProtocolVersion))
	if err != nil {
		return nil, fmt.Errorf("MCP server %q: a session to list its tools to a client of %s: %w", a.launch.Name, init.ProtocolVersion, err)
	}
	defer func() { _ = cs.Close() }()
	_, tools, err := collect(ctx, "tools", cs.Tools)
	return tools, err
}
