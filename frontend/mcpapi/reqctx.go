package mcpapi

import (
	"context"
	"net/http"
)

// Without sessions every POST is answered on its own connection, so a
// call whose POST has ended can no longer be answered and should stop.
// The SDK ties a tool handler's context to its POST only for protocol
// 2026-07-28 and later (StreamableHTTPOptions.PropagateRequestCancellation);
// for older clients it gives the handler a context that is never
// cancelled, and their notifications/cancelled arrives on another POST,
// where no session knows the call. So a stateless Handler puts the POST's
// context into the request (bindRequest), and the tool handler, which
// sees the request's values through the SDK's connection context, ends
// the call with it (withRequestCancel). With sessions the handler's
// context comes from the session, and notifications/cancelled reaches it.

// requestKey is the context key of the POST's context.
type requestKey struct{}

// bindRequest returns r with its own context stored under requestKey.
func bindRequest(r *http.Request) *http.Request {
	return r.WithContext(context.WithValue(r.Context(), requestKey{}, r.Context()))
}

// withRequestCancel returns ctx, cancelled also when the POST stored in
// it by bindRequest ends, and the function that releases it. Without a
// stored POST (stdio, sessions) it returns ctx as is.
func withRequestCancel(ctx context.Context) (context.Context, func()) {
	post, ok := ctx.Value(requestKey{}).(context.Context)
	if !ok {
		return ctx, func() {}
	}
	ctx, cancel := context.WithCancelCause(ctx)
	stop := context.AfterFunc(post, func() { cancel(context.Cause(post)) })
	return ctx, func() {
		stop()
		cancel(nil)
	}
}
