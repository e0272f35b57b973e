package mcpadapter

import (
	"context"
	"strings"
	"testing"

	"github.com/opentool-host/opentool-host/host/core"
	"github.com/opentool-host/opentool-host/internal/mcpsession"
	"github.com/opentool-host/opentool-host/protocol/decl"
)

// withSession returns a core.Exchange with the client session s, as the
// host's MCP front end hands a call or request of s's client to a
// declared MCP server.
func withSession(s *mcpsession.Session) *core.Exchange {
	return &core.Exchange{Session: s}
}

// withSessionless returns a core.Exchange with the request r of a client
// of 2026-07-28, as the host's MCP front end hands it on.
func withSessionless(r *mcpsession.Request) *core.Exchange {
	return &core.Exchange{Sessionless: r}
}

// hasOwn reports whether sess has an upstream session of its own.
func (a *Adapter) hasOwn(sess *mcpsession.Session) bool {
	a.clients.mu.Lock()
	defer a.clients.mu.Unlock()
	return a.clients.by[sess] != nil
}

// callAs is CallJSON for the caller of x: the Adapter's call as the host
// makes it (CallDirect), its result projected (resultJSON).
func callAs(a *Adapter, ctx context.Context, x *core.Exchange, name string, args []byte) ([]byte, error) {
	t, err := a.callTool(ctx, x, name, args)
	if err != nil {
		return nil, err
	}
	res, err := t.decoded()
	if err != nil {
		return nil, err
	}
	return resultJSON(res)
}

// sessionKey is a context key of the test's own: a value under it is
// what a caller could put on a context beside the Exchange.
type sessionKey struct{}

// TestClientSessionOnlyThroughExchange: a call reaches a client's own
// upstream session only when its core.Exchange carries that client's
// mcpsession.Session. The server's tool "who" answers the clientInfo
// name of the session it runs on: with the Exchange it is the client's;
// with nothing on the context, with an Exchange that carries no session,
// or with the session under any other context value, the shared
// session's (the host's clientInfo), and no session of that client is
// made.
func TestClientSessionOnlyThroughExchange(t *testing.T) {
	r := start(t, decl.Launch{Name: "places", Server: decl.MCPServer{URL: placesServer(t, nil, nil)}}, Options{})
	load(t, r.Adapter)
	ctx, cancel := context.WithTimeout(context.Background(), bound)
	defer cancel()
	s, _ := placeClient(t, "alice")
	shared := func(what string, ctx context.Context, x *core.Exchange) {
		t.Helper()
		out, err := callAs(r.Adapter, ctx, x, "who", nil)
		if err != nil {
			t.Fatalf("who %s: %v", what, err)
		}
		if strings.Contains(string(out), `"alice"`) || !strings.Contains(string(out), "opentool-host-mcp-adapter") {
			t.Fatalf("who %s = %s; want the shared session's answer", what, out)
		}
		if r.hasOwn(s) {
			t.Fatalf("who %s made the client an upstream session of its own", what)
		}
	}
	shared("with no Exchange", ctx, nil)
	shared("with an Exchange without a session", ctx, &core.Exchange{Meta: []byte(`{"client":"alice"}`)})
	shared("with the session on the context, not in the Exchange", context.WithValue(ctx, sessionKey{}, s), nil)
	out, err := callAs(r.Adapter, ctx, withSession(s), "who", nil)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(out), `"alice"`) {
		t.Fatalf("who with the session in the Exchange = %s; want the client's own session's answer", out)
	}
	if !r.hasOwn(s) {
		t.Fatal("the call with the session in its Exchange made no upstream session of the client's own")
	}
}
