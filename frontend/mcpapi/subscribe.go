package mcpapi

import (
	"context"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/opentool-host/opentool-host/host/core"
	"github.com/opentool-host/opentool-host/protocol/mcpmethod"
)

// subscriptionsFront is the subscriptions layer's view of a Server
// (subscriptions.Front).
type subscriptionsFront struct{ s *Server }

// HasClient implements subscriptions.Front.
func (f subscriptionsFront) HasClient(ss *mcp.ServerSession) bool { return f.s.client(ss) != nil }

// Subscribe implements subscriptions.Front: routed with ss's
// mcpsession.Session in the request's core.Exchange, which the adapter
// marks when its own upstream session took it.
func (f subscriptionsFront) Subscribe(ctx context.Context, ss *mcp.ServerSession, p *mcp.SubscribeParams) (bool, error) {
	x := &core.Exchange{Session: f.s.client(ss)}
	own := x.TrackOwn()
	err := f.s.route(ctx, x, mcpmethod.ResourcesSubscribe, p.URI, p, &struct{}{})
	return err == nil && own(), err
}

// Unsubscribe implements subscriptions.Front: routed with ss's client in
// the request's core.Exchange (none for the shared path's, ss nil).
func (f subscriptionsFront) Unsubscribe(ctx context.Context, ss *mcp.ServerSession, p *mcp.UnsubscribeParams) error {
	var x *core.Exchange
	if ss != nil {
		x = f.s.clientOf(ss, false).exchange()
	}
	return f.s.route(ctx, x, mcpmethod.ResourcesUnsubscribe, p.URI, p, &struct{}{})
}

// Notify implements subscriptions.Front: notify, within logSendTimeout.
func (f subscriptionsFront) Notify(ctx context.Context, ss *mcp.ServerSession, method string, p mcp.Params) error {
	ctx, cancel := context.WithTimeout(ctx, logSendTimeout)
	defer cancel()
	return f.s.notify(ctx, ss, method, p)
}

// resourceUpdated sends notifications/resources/updated for uri, which
// its plugin reported (host.Host.OnResourceUpdated), to the sessions
// subscribed to it through the shared path (the SDK's table, filtered by
// sendFilter: subscriptions.Layer.Passes).
func (s *Server) resourceUpdated(uri string) {
	_ = s.srv.ResourceUpdated(context.Background(), &mcp.ResourceUpdatedNotificationParams{URI: uri})
}

// sendFilter is the server's sending middleware: it keeps a list_changed
// from the sessions that may not see the change (listChangedFor) and the
// SDK's notifications/resources/updated from the sessions not subscribed
// to the URI through the shared path (subscriptions.Layer.Passes), and
// keeps next, the SDK's sending handler, for notify.
func (s *Server) sendFilter(next mcp.MethodHandler) mcp.MethodHandler {
	s.send = next
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		if isListChanged(method) {
			if ss, _ := req.GetSession().(*mcp.ServerSession); !s.listChangedFor(ss, method) {
				return nil, nil
			}
		}
		if method == mcpmethod.ResourcesUpdated {
			ss, _ := req.GetSession().(*mcp.ServerSession)
			p, _ := req.GetParams().(*mcp.ResourceUpdatedNotificationParams)
			if !s.subs.Passes(ss, p) {
				return nil, nil
			}
		}
		return next(ctx, method, req)
	}
}

// notify sends notification method with params p to ss alone, past
// sendFilter: the SDK sends a server's notification to one session only
// for the methods it has a ServerSession method for (Log,
// NotifyProgress).
func (s *Server) notify(ctx context.Context, ss *mcp.ServerSession, method string, p mcp.Params) error {
	_, err := s.send(ctx, method, &mcp.ServerRequest[mcp.Params]{Session: ss, Params: p})
	return err
}
