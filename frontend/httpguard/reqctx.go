package httpguard

import (
	"context"
	"net/http"
)

// Without sessions every POST is answered on its own connection, so a
// call whose POST has ended can no longer be answered and should stop.
// The MCP SDK ties a tool handler's context to its POST only for protocol
// 2026-07-28 and later (StreamableHTTPOptions.PropagateRequestCancellation);
// for older clients it gives the handler a context that is never
// cancelled, and their notifications/cancelled arrives on another POST,
// where no session knows the call. So a stateless MCP handler puts the
// POST's context into the request (BindRequest), and the tool handler,
// which sees the request's values through the SDK's connection context,
// ends the call with it (WithRequestCancel); a call that goes on past its
// POST (a task, a held round) is let go of it (Unbind). With sessions the
// handler's context comes from the session, and notifications/cancelled
// reaches it.

// requestKey is the context key of the POST's context.
type requestKey struct{}

// BindRequest returns r with its own context stored in it, for
// WithRequestCancel.
func BindRequest(r *http.Request) *http.Request {
	return r.WithContext(context.WithValue(r.Context(), requestKey{}, r.Context()))
}

// WithRequestCancel returns ctx, cancelled also when the POST stored in
// it by BindRequest ends, and the function that releases it. Without a
// stored POST (stdio, sessions, Unbind) it returns ctx as is.
func WithRequestCancel(ctx context.Context) (context.Context, func()) {
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

// Unbind returns ctx without the POST BindRequest stored in it: a
// WithRequestCancel under it is not ended by the POST's end.
func Unbind(ctx context.Context) context.Context {
	return context.WithValue(ctx, requestKey{}, nil)
}
