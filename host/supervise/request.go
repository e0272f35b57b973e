package supervise

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/opentool-host/opentool-host/host/core"
	"github.com/opentool-host/opentool-host/internal/wire"
)

// Request is one call as supervision needs it on its way to a plugin's
// process; the host's call path implements it (it routes, checks and
// observes the call; supervision sends it, hands its messages and results
// back and says how it failed).
type Request interface {
	// Function returns the name the caller used (for errors and logs).
	Function() string
	// Exchange returns the caller's side of the call (its messages, its
	// MCP client), nil for none: a Direct plugin takes it as it is; for
	// a plugin process the host's call path converts it (Meta in
	// Invocation, the plugin's messages through Message).
	Exchange() *core.Exchange
	// Invocation returns what goes to the plugin: Name is the function
	// as served (with its policy prefix, which Send strips), Args the
	// JSON object of arguments, Stream whether many results may come,
	// Meta the caller's MCP _meta (nil: none).
	Invocation() wire.Invocation
	// Fail returns the *core.Error of kind k for the call: plugin is
	// the serving plugin ("" when none), cause the wrapped error (nil
	// for none).
	Fail(k core.Kind, plugin, msg string, cause error) *core.Error
	// CtxError is the error of a call whose context ended:
	// KindTimeout when its deadline passed, KindCanceled when its caller
	// left; note is appended to the message.
	CtxError(ctx context.Context, plugin, note string) *core.Error
	// Accept checks the n-th result item (n from 1) plugin sent; a
	// non-nil error (an *core.Error of KindResultRejected) cuts the call.
	Accept(plugin string, item []byte, n int) error
	// Emit hands one accepted result item to the caller; an error stops
	// the call (the plugin is told to cancel) and is returned as is.
	Emit(item []byte) error
	// Message handles a notification or request m the plugin sent on
	// call c (protocol 3); it must not block on a request's answer.
	Message(ctx context.Context, c *wire.Call, m *wire.Message)
	// SetMCP records that the plugin's unary result, which Emit takes,
	// is an MCP CallToolResult (its JSON); plain, that it is one
	// mcpresult.Plain passed (a Direct plugin's DirectResult.MCPJSON), to
	// be passed on as it is.
	SetMCP(plain bool)
	// EmitMCP takes a Direct plugin's unary MCP result res, decoded, of
	// size bytes encoded (mcpresult.Size), in place of Emit.
	EmitMCP(res *mcp.CallToolResult, size int)
}

// FailedError is the error of r, a call to p while it has failed
// (KindFailed, with its last error): see failedError.
func (p *Plugin) FailedError(r Request) *core.Error { return failedError(r, p.name, p.v.Load()) }

// failedError is the error of a call to a failed plugin: the host's own
// reason (crash loop, invalid document, handshake failure), which never
// holds the plugin's output.
func failedError(r Request, plugin string, v *view) *core.Error {
	return r.Fail(core.KindFailed, plugin, "the plugin has failed and serves nothing until its file changes: "+v.lastErr, nil)
}

// unreachableError is the error of a call to a server reached by URL
// while it is unreachable (view.remote): KindTransport, retryable, with
// why the session ended or the last try failed.
func unreachableError(r Request, plugin string, v *view) *core.Error {
	return r.Fail(core.KindTransport, plugin, fmt.Sprintf("the MCP server cannot be reached (%s); the host reconnects by itself, trying at least every %v: try again later", v.lastErr, remoteBackoff*3/2), nil)
}

// Invoke runs r on the plugin's current process within timeout (when
// ctx has no earlier deadline). A call that could not be sent because the
// process was being replaced or had just died waits for the next view
// (new process, restart) and is sent there. A Direct plugin's unary call
// that finds its plugin ready and a concurrency slot free is sent at
// once with the timeout in its one context (sendDirect); any other
// waits and is sent under WithTimeout. Errors: an *core.Error
// (KindFailed, KindStopped, KindTimeout, KindCanceled, KindBusy,
// KindTool, KindExited, KindTransport, KindResultRejected), or what
// r.Emit returned.
func (p *Plugin) Invoke(ctx context.Context, r Request, timeout time.Duration) error {
	if v := p.v.Load(); v.state == core.StateReady && v.inst.direct() != nil && !r.Invocation().Stream && timeout > 0 {
		if err := v.inst.invoke(ctx, r, timeout); !errors.Is(err, errNotSent) {
			return err
		}
	}
	ctx, cancel := WithTimeout(ctx, timeout)
	defer cancel()
	for {
		v, err := p.ready(ctx, r)
		if err != nil {
			return err
		}
		if err := v.inst.invoke(ctx, r, 0); !errors.Is(err, errNotSent) {
			return err
		}
		if err := p.waitChange(ctx, r, v); err != nil {
			return err
		}
	}
}

// WithTimeout bounds ctx by timeout, a call's (its plugin's policy or
// Config.CallTimeout), when ctx has no earlier deadline.
func WithTimeout(ctx context.Context, timeout time.Duration) (context.Context, context.CancelFunc) {
	if d, ok := ctx.Deadline(); ok && time.Until(d) <= timeout {
		return ctx, func() {}
	}
	return context.WithTimeout(ctx, timeout)
}

// ready returns the current view once it is ready, waiting while the
// plugin starts or restarts, up to ctx's deadline; a server reached by
// URL that is restarting (it is unreachable) fails at once.
func (p *Plugin) ready(ctx context.Context, r Request) (*view, error) {
	for {
		v := p.v.Load()
		switch v.state {
		case core.StateReady:
			return v, nil
		case core.StateFailed:
			return nil, failedError(r, p.name, v)
		case core.StateRestarting:
			if v.remote {
				return nil, unreachableError(r, p.name, v)
			}
		case core.StateDraining, core.StateStopped:
			return nil, r.Fail(core.KindStopped, p.name, "the plugin was removed or the host is stopping", nil)
		}
		if err := p.waitChange(ctx, r, v); err != nil {
			return nil, err
		}
	}
}

// waitChange waits until v is no longer the current view.
func (p *Plugin) waitChange(ctx context.Context, r Request, v *view) error {
	select {
	case <-v.changed:
		return nil
	case <-ctx.Done():
		return r.CtxError(ctx, p.name, " while the plugin was "+string(v.state))
	}
}

// Request sends MCP request method (params: a JSON object) to the
// plugin's current process, waiting while it starts or restarts, and
// returns its result (JSON); r is the request as the call path made it
// (its Function names the method and what params name). Errors: an
// *core.Error of KindTool with the plugin's JSON-RPC error (Err is the
// *wire.RPCError), KindFailed, KindStopped, KindExited, KindTransport,
// KindTimeout, KindCanceled.
func (p *Plugin) Request(ctx context.Context, r Request, method string, params []byte) ([]byte, error) {
	v, err := p.ready(ctx, r)
	if err != nil {
		return nil, err
	}
	inst := v.inst
	var res []byte
	if d := inst.direct(); d != nil {
		res, err = d.RequestDirect(ctx, r.Exchange(), method, params)
	} else {
		res, err = inst.tool.Request(ctx, method, params)
	}
	if err == nil {
		return res, nil
	}
	if re, ok := errors.AsType[*wire.RPCError](err); ok {
		return nil, &core.Error{Kind: core.KindTool, Plugin: p.name, Code: re.Code, Message: re.Message, Err: re}
	}
	switch {
	case ctx.Err() != nil:
		return nil, r.CtxError(ctx, p.name, "")
	case inst.exitedSoon():
		return nil, &core.Error{Kind: core.KindExited, Plugin: p.name, Status: inst.exitStatus(),
			Message: fmt.Sprintf("the plugin exited during %s (%s); it is being restarted", method, inst.exitStatus()), Err: err}
	}
	return nil, &core.Error{Kind: core.KindTransport, Plugin: p.name, Message: method + ": the connection to the plugin failed", Err: err}
}
