package mcpadapter

import (
	"context"
	"errors"
	"fmt"
	"maps"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/opentool-host/opentool-host/host/core"
	"github.com/opentool-host/opentool-host/host/tasks/mcptasks"
	"github.com/opentool-host/opentool-host/internal/mcpsession"
)

// Callers of MCP 2026-07-28 (SEP-2575, SEP-2322). A tools/call of a
// downstream client of 2026-07-28 or later (its context carries an
// mcpsession.Request, set by the host's MCP front end) goes, when the
// server speaks 2026-07-28 too, to the adapter's session of that revision
// with the server (one for every such caller: the revision has no
// session state; for a command, one more server process, started through
// the same launcher.Starter, at the first such call), as the caller made
// it:
//
//	the caller's _meta                  sent with the call, its own protocol
//	                                    context included: protocolVersion (the
//	                                    session's), clientInfo,
//	                                    clientCapabilities (but the Tasks
//	                                    extension, which the host serves
//	                                    itself), logLevel; so the server judges
//	                                    the caller's capabilities, and answers
//	                                    -32021 for one it lacks
//	an input_required result            passed on as the server wrote it: its
//	                                    inputRequests keys and requestState
//	a retry (inputResponses,            sent to the server as they are: the
//	requestState the host did not       server checks its own state; the host
//	issue)                              holds nothing, and any replica relays it
//	a JSON-RPC error of the server      the caller's error as it is (code,
//	                                    message, data), not a tool error
//
// That session is, for a command server, a process of its own, as a
// session client's own upstream session is (clients.go): state the server
// keeps in its process (what a tool stored) is shared by the callers of
// 2026-07-28, not with the shared session's callers (OpenTool, OTC, the
// stdio front end, stateless requests of earlier revisions), and the
// catalog follows the shared session. A declaration with "sessions":
// "shared" (Options.Shared) keeps every caller on the shared session:
// there a caller of 2026-07-28 is served as one of 2025-11-25 (the host's
// capabilities, its requests the host's own input_required rounds).
//
// A server that does not speak 2026-07-28 (server/discover fails: the SDK
// falls back to initialize, which the adapter then closes; or no answer
// within upstreamInitTimeout, while which the first such call waits) is
// asked once per run; its callers' calls go to the session of 2025-11-25 as before,
// where its requests to the client become the host's own input_required
// rounds (frontend/mcpapi/rounds, held.go), and a retry carrying a
// requestState the host did not issue is refused with -32602. A tool the
// adapter calls as a task (execution.taskSupport "required") is called as
// a task on the same session, so that every call of such a caller reaches
// the same server process.

// SessionlessRevision is the MCP revision the adapter speaks to a server
// for callers of that revision or later: 2026-07-28, the first without
// sessions (SEP-2575) and with multi-round-trip requests (SEP-2322).
const SessionlessRevision = "2026-07-28"

// sessionless is the adapter's session with the server in
// SessionlessRevision, guarded by clients.mu.
type sessionless struct {
	u    *upstream // nil until a caller of the revision first calls
	none bool      // the server does not speak it (asked once per Run)
}

// sessionlessFor returns the session of SessionlessRevision a call for
// the caller of x goes to, nil when the call has no caller of that
// revision (no mcpsession.Request in x), the server does not speak it, or it could not be
// opened (logged; the call then takes the session of ProtocolVersion).
// Errors: ctx's, while the session opens.
func (a *Adapter) sessionlessFor(ctx context.Context, x *core.Exchange) (*upstream, error) {
	r := x.SessionlessRequest()
	if r == nil || r.Revision < SessionlessRevision || a.opts.Shared {
		return nil, nil
	}
	a.clients.mu.Lock()
	s := &a.clients.sessionless
	if s.none || a.clients.closed {
		a.clients.mu.Unlock()
		return nil, nil
	}
	if s.u == nil {
		s.u = &upstream{ready: make(chan struct{}), relay: newRelay(a.launch.Name, a.log)}
		go a.openSessionless(s.u, a.endedLocked())
	}
	u := s.u
	a.clients.mu.Unlock()
	select {
	case <-u.ready:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	if u.cs == nil {
		return nil, nil
	}
	return u, nil
}

// openSessionless connects u in SessionlessRevision and closes it when
// ended closes (endClients); a server that does not speak the revision
// (or fails to connect) is marked none.
func (a *Adapter) openSessionless(u *upstream, ended <-chan struct{}) {
	ctx, cancel := context.WithTimeout(context.Background(), upstreamInitTimeout)
	stop := context.AfterFunc(a.abandonCtx, cancel)
	cs, err := a.connectSessionless(ctx, u)
	stop()
	cancel()
	if err != nil {
		a.log.Info("MCP server: no session of "+SessionlessRevision+"; its callers of that revision are served in "+ProtocolVersion, "server", a.launch.Name, "reason", err)
		a.clients.mu.Lock()
		a.clients.sessionless = sessionless{none: true}
		a.clients.mu.Unlock()
		u.err = err
		close(u.ready)
		return
	}
	u.cs = cs
	close(u.ready)
	<-ended
	a.closeUpstream(u)
}

// connectSessionless starts the server (a command) and opens a session
// of SessionlessRevision (server/discover, SEP-2575). Errors: the
// server answered with an earlier revision (it does not speak this one),
// the transport's, the connection's.
func (a *Adapter) connectSessionless(ctx context.Context, u *upstream) (*mcp.ClientSession, error) {
	cs, err := a.connectAs(ctx, u, a.sessionlessClient(u.relay), SessionlessRevision)
	if err != nil {
		return nil, err
	}
	if ir := cs.InitializeResult(); ir == nil || ir.ProtocolVersion < SessionlessRevision {
		_ = cs.Close()
		return nil, errors.New("the server answered server/discover with no revision of " + SessionlessRevision + " or later")
	}
	a.listFor(ctx, cs)
	return cs, nil
}

// listFor lists the tools on cs, a session of SessionlessRevision, for
// the SDK's client: it sends a tools/call's Mcp-Param-* headers (SEP-2243,
// the x-mcp-header annotations of the tool's inputSchema) only for a tool
// it listed in the session that calls, as the server's own client would
// have listed it. A failure is logged (the calls go without the headers);
// at most maxTools are read.
func (a *Adapter) listFor(ctx context.Context, cs *mcp.ClientSession) {
	n := 0
	for _, err := range cs.Tools(ctx, nil) {
		if err != nil {
			a.log.Warn("MCP server: tools/list of the session of "+SessionlessRevision+" failed; its calls go without Mcp-Param-* headers", "server", a.launch.Name, "error", err)
			return
		}
		if n++; n == maxTools {
			return
		}
	}
}

// relistSessionless lists the tools again on the session of
// SessionlessRevision, when one is open (listFor), after the shared
// session's list changed: the SDK's client has the new definitions.
func (a *Adapter) relistSessionless(ctx context.Context) {
	a.clients.mu.Lock()
	u := a.clients.sessionless.u
	a.clients.mu.Unlock()
	if u == nil {
		return
	}
	select {
	case <-u.ready:
		if u.cs != nil {
			a.listFor(ctx, u.cs)
		}
	default: // still opening: it lists them itself
	}
}

// sessionlessClient is the MCP client of the session of
// SessionlessRevision: no capabilities of its own (each call carries its
// caller's), input_required results returned to the adapter
// (not fulfilled by the SDK), and the server's messages and any request
// it still sends during a call relayed by r.
func (a *Adapter) sessionlessClient(r *relay) *mcp.Client {
	return a.relayedClient(&mcp.Implementation{Name: "opentool-host-mcp-adapter"}, &mcp.ClientOptions{
		Capabilities:   &mcp.ClientCapabilities{},
		MultiRoundTrip: &mcp.MultiRoundTripOptions{Disabled: true},
	}, r)
}

// callerContext puts the caller's own protocol context (callerSessionMeta,
// from its request's _meta, x.Meta: the Tasks extension left out of its
// capabilities) into meta, the _meta of the call relay.begin made, with
// protocolVersion the session's revision.
func callerContext(x *core.Exchange, cs *mcp.ClientSession, meta mcp.Meta) mcp.Meta {
	if meta == nil {
		meta = mcp.Meta{}
	}
	caller := callerMeta(x)
	for _, k := range callerSessionMeta {
		if v, ok := caller[k]; ok {
			meta[k] = v
		}
	}
	if caps, ok := meta[mcptasks.MetaClientCapabilities].(map[string]any); ok {
		caps = maps.Clone(caps)
		if ext, ok := caps["extensions"].(map[string]any); ok {
			ext = maps.Clone(ext)
			delete(ext, mcptasks.Extension)
			caps["extensions"] = ext
		}
		meta[mcptasks.MetaClientCapabilities] = caps
	}
	meta[mcp.MetaKeyProtocolVersion] = cs.InitializeResult().ProtocolVersion
	return meta
}

// relayRetry sets the retry of the caller of r (inputResponses, the
// server's requestState) on params and marks r relayed.
func relayRetry(r *mcpsession.Request, params *mcp.CallToolParams) {
	params.InputResponses = r.InputResponses
	params.RequestState = r.RequestState
	r.Relay()
}

// refuseRetry fails the call of r when it is a retry with a requestState
// the host did not issue that no server of SessionlessRevision can judge
// (-32602), and reports whether it did.
func (a *Adapter) refuseRetry(r *mcpsession.Request, tool string) bool {
	if r == nil || r.RequestState == "" {
		return false
	}
	r.Fail(&jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: fmt.Sprintf(
		"invalid params: requestState was not issued by this host, and MCP server %q behind tool %q does not speak %s (no multi-round-trip request of its own to retry)", a.launch.Name, tool, SessionlessRevision)})
	return true
}

// failWith hands a JSON-RPC error of the server in err to the caller of
// r as it is (mcpsession.Request.Fail).
func failWith(r *mcpsession.Request, err error) {
	var je *jsonrpc.Error
	if r != nil && errors.As(err, &je) {
		r.Fail(je)
	}
}

// session returns u's session and relay; nil, nil for a nil u.
func (u *upstream) session() (*mcp.ClientSession, *relay) {
	if u == nil {
		return nil, nil
	}
	return u.cs, u.relay
}

// relayed reports whether the call for the caller of x was made in
// SessionlessRevision for it (callSessionless).
func relayed(x *core.Exchange) bool {
	r := x.SessionlessRequest()
	return r != nil && r.Relayed()
}
