package host

// The call path. One call travels:
//
//	Host.Call / Host.StreamCall   (call.go)     a unary call is a stream of one result
//	  → Host.invoke               route by name, check the call kind, validate args,
//	                              pick the timeout (the plugin's discover/policy.go or
//	                              Config.CallTimeout)
//	  → Plugin.Invoke             (supervise/request.go) apply the timeout; wait for
//	                              a ready process; resend a call that was never
//	                              sent when the process changed
//	  → instance.invoke           (supervise/send.go) concurrency slot and queue;
//	                              a call whose caller is gone is not sent
//	  → instance.send             one Invoke stream (internal/wire); results
//	                              checked (request.Accept) and handed to Emit;
//	                              cancel + grace + kill (guard); a Direct plugin's
//	                              unary call is a function call under one context
//	                              (supervise/directcall.go)
//
// The request travels as a supervise.Request. Every failure is an *Error
// (core/errors.go) built by request.Fail or request.CtxError.

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/opentool-host/opentool-host/host/access"
	"github.com/opentool-host/opentool-host/host/core"
	"github.com/opentool-host/opentool-host/internal/nearest"
	"github.com/opentool-host/opentool-host/internal/strictjson"
	"github.com/opentool-host/opentool-host/internal/wire"
	"github.com/opentool-host/opentool-host/protocol/argcheck"
)

// request is one call on its way from a front end to a plugin.
type request struct {
	fn     string // the name the caller used
	target string // the name the plugin declares (routes.go: route.target)
	plugin string // the serving plugin, once routed
	args   []byte // JSON object of arguments; nil or empty for none
	stream bool   // StreamCall (many results) rather than Call (one)
	// emit receives each result object in order; an error from it stops
	// the call (the plugin is told to cancel) and is returned as is. nil
	// keeps the one result of a unary call in result (Call, CallResult:
	// no closure per call).
	emit   func(item []byte) error
	result []byte
	// counted, when the call is observed for Config.OnCall (observe),
	// counts the results Emit hands over.
	counted *core.CallRecord
	// x is the caller's side of the call's messages and its MCP client
	// (core.Exchange); nil for a caller that takes none.
	x *core.Exchange
	// mcp is set when the plugin's unary result is an MCP CallToolResult
	// (exchange.go): result is its JSON or, from a plugin served in the
	// host's process (supervise.Direct), decoded is the result itself and
	// result nil (Result.Decoded), decodedSize the length of its
	// encoding (mcpresult.Size, counted once by supervision).
	mcp         bool
	plain       bool // with mcp: result is plain (mcpresult.Plain), as its Direct plugin checked
	decoded     *mcp.CallToolResult
	decodedSize int
	// collect is set on a unary call made through call_tool (builtin.go):
	// a streaming function's items are then collected into one result,
	// {"items":[...]}.
	collect bool
	// obs is the call's observation (observe): part of the request, not
	// an allocation of its own.
	obs observation
}

// Function returns the name the caller used (supervise.Request).
func (r *request) Function() string { return r.fn }

// Exchange returns the caller's side of the call (supervise.Request).
func (r *request) Exchange() *core.Exchange { return r.x }

// Invocation returns what goes to the plugin: the function as routed
// (r.target), the arguments, the call kind and the caller's MCP _meta
// (supervise.Request).
func (r *request) Invocation() wire.Invocation {
	inv := wire.Invocation{Name: r.target, Args: r.args, Stream: r.stream}
	if r.x != nil {
		inv.Meta = r.x.Meta
	}
	return inv
}

// Emit hands one accepted result item to r.emit, or keeps it as
// r.result when r.emit is nil (supervise.Request).
func (r *request) Emit(item []byte) error {
	if c := r.counted; c != nil {
		c.Items++
		c.ResultBytes += int64(len(item))
	}
	if r.emit == nil {
		r.result = item
		return nil
	}
	return r.emit(item)
}

// SetMCP records that the plugin's unary result is an MCP CallToolResult,
// plain or not (supervise.Request).
func (r *request) SetMCP(plain bool) { r.mcp, r.plain = true, plain }

// EmitMCP takes the unary MCP result res of a plugin served in the
// host's process, of about size bytes (supervise.Request).
func (r *request) EmitMCP(res *mcp.CallToolResult, size int) {
	if c := r.counted; c != nil {
		c.Items++
		c.ResultBytes += int64(size)
	}
	r.mcp, r.decoded, r.decodedSize, r.result = true, res, size, nil
}

// Fail returns the *Error of kind k for r.
func (r *request) Fail(k core.Kind, plugin, msg string, cause error) *core.Error {
	return &core.Error{Kind: k, Function: r.fn, Plugin: plugin, Message: msg, Err: cause}
}

// CtxError is the error of a call whose context ended: KindTimeout when
// its deadline passed, KindCanceled when its caller went away. note is
// appended to the message (" while queued", "; the plugin ... was
// killed").
func (r *request) CtxError(ctx context.Context, plugin, note string) *core.Error {
	if errors.Is(ctx.Err(), context.DeadlineExceeded) {
		return r.Fail(core.KindTimeout, plugin, "the call timed out"+note, ctx.Err())
	}
	return r.Fail(core.KindCanceled, plugin, "the call was canceled"+note, context.Cause(ctx))
}

// Accept checks the n-th result item a plugin sent at the boundary: it
// must be one JSON object, and a unary call gets exactly one. (Its size
// is capped by the connection: Config.MaxResultBytes.)
func (r *request) Accept(plugin string, item []byte, n int) error {
	if n > 1 && !r.stream {
		return r.Fail(core.KindResultRejected, plugin, "the plugin sent more than one result", nil)
	}
	if t := bytes.TrimLeft(item, " \t\r\n"); len(t) == 0 || t[0] != '{' || !strictjson.Valid(t) {
		return r.Fail(core.KindResultRejected, plugin, "the plugin's result is not one JSON object", nil)
	}
	return nil
}

// Call runs unary function fn with args, a JSON object (nil or empty for
// no arguments), and returns the function's JSON result object. It is
// StreamCall's path with exactly one result. A plugin's MCP result
// (protocol 3) is returned as its OpenTool projection
// (internal/mcpresult); CallResult returns it as it is.
//
// Errors: an *Error (core/errors.go) whose Kind says what happened; see
// StreamCall. An MCP result with isError is KindTool, code 500.
func (h *Host) Call(ctx context.Context, fn string, args []byte) ([]byte, error) {
	return h.call(ctx, nil, fn, args)
}

// call is Call with x the caller's side of the call (nil: none).
func (h *Host) call(ctx context.Context, x *core.Exchange, fn string, args []byte) ([]byte, error) {
	r := &request{fn: fn, args: args, x: x}
	err := h.invoke(ctx, r)
	result := r.result
	if err == nil && r.mcp {
		result, err = r.project()
	}
	if err != nil {
		return nil, err
	}
	if !charge(ctx, len(result)) {
		core.MemTrim.Note(len(result)) // the dropped result is garbage: give it back soon
		return nil, h.errResultMemory(fn, len(result))
	}
	return result, nil
}

// StreamCall runs streaming function fn and hands each JSON result object
// to onItem, in order; x is the caller's side of the call's messages
// (core.Exchange: the plugin's notifications and requests during the
// call; nil for none). The call goes to the plugin that serves fn over its
// existing connection; calls do not wait for each other beyond the
// plugin's MaxConcurrency. args are validated against fn's parameters
// first; invalid ones never reach the plugin.
//
// Errors: the error onItem returned (the plugin is told to cancel), or an
// *Error of kind KindNotFound, KindWrongKind (a unary function), KindInvalidParams
// (with Faults), KindTool (the tool's own code and message), KindExited,
// KindFailed, KindStopped, KindTransport, KindTimeout, KindBusy,
// KindCanceled or KindResultRejected.
func (h *Host) StreamCall(ctx context.Context, x *core.Exchange, fn string, args []byte, onItem func(item []byte) error) error {
	return h.invoke(ctx, &request{fn: fn, args: args, stream: true, emit: onItem, x: x})
}

// invoke routes r, checks its kind and arguments, bounds it by its
// timeout and hands it to the owning plugin; Config.OnCall then gets the
// finished call.
//
// A call of one of the host's own functions (builtin.go) is routed first:
// search_tools runs in the host; call_tool becomes the named function's
// call, observed, routed and checked as that function's.
func (h *Host) invoke(ctx context.Context, r *request) (err error) {
	run, err := h.builtins.route(r)
	if run != nil && r.fn == RunCodeName {
		ctx = withRun(ctx) // its inner calls' records link to its own
	}
	ctx, o := h.observe(ctx, r)
	defer func() { o.done(err) }()
	switch {
	case err != nil:
		return err
	case run != nil:
		return run(ctx, h, r)
	}
	rt, err := h.lookup(ctx, r)
	if err != nil {
		return err
	}
	collect := r.collect && rt.fn.IsStream()
	if collect {
		r.stream = true
	}
	if rt.fn.IsStream() != r.stream {
		if r.stream {
			return r.Fail(core.KindWrongKind, rt.plugin.Name(), fmt.Sprintf("wrong call kind: function %q does not stream; use call", r.fn), nil)
		}
		return r.Fail(core.KindWrongKind, rt.plugin.Name(), fmt.Sprintf("wrong call kind: function %q streams; use streamCall", r.fn), nil)
	}
	args, err := argsFor(ctx, rt, r)
	if err != nil {
		return err
	}
	if args != nil {
		if err := args.Validate(r.args); err != nil {
			return invalidParams(r, rt.plugin.Name(), err)
		}
	}
	if collect {
		return h.collect(ctx, rt, r)
	}
	return h.send(ctx, rt, r)
}

// send hands r, checked, to rt's plugin within rt's timeout.
func (h *Host) send(ctx context.Context, rt *route, r *request) error {
	r.target, r.plugin = rt.target, rt.plugin.Name()
	return rt.plugin.Invoke(ctx, r, rt.timeout)
}

// collect sends r, a call through call_tool of streaming function rt
// (checked, r.stream set), and emits its items as one result
// {"items":[...]}, at most Config.MaxResultBytes (as CollectItems),
// telling the caller's Exchange.Item of each (and dropping the plugin's
// own progress then: Exchange.collecting).
func (h *Host) collect(ctx context.Context, rt *route, r *request) error {
	var each func(n int, item []byte)
	if r.x != nil {
		each = r.x.Item
	}
	r.x = collecting(r.x)
	items := newItems(r.fn, h.cfg.MaxResultBytes, each)
	emit, counted := r.emit, r.counted
	r.emit, r.counted = items.add, nil // the items are not the call's results: their object is
	err := h.send(ctx, rt, r)
	r.emit, r.counted = emit, counted
	if err != nil {
		return err
	}
	return r.Emit(items.object())
}

// invalidParams turns argcheck's error into the call's *Error.
func invalidParams(r *request, plugin string, err error) *core.Error {
	e := r.Fail(core.KindInvalidParams, plugin, "invalid params: "+err.Error(), err)
	var ae *argcheck.Error
	if errors.As(err, &ae) {
		e.Message, e.Faults = "invalid params: "+ae.Summary(), ae.Faults
	}
	return e
}

// lookup finds the route of r's function, or the error for it. A
// function the caller's API key may not call (access.Allowed) is not
// found, exactly like an unknown one.
func (h *Host) lookup(ctx context.Context, r *request) (*route, error) {
	var until time.Time // set at the first wait
	for {
		t := h.routes.Load()
		rt, err := h.lookupIn(ctx, t, r)
		if err == nil || !errors.Is(err, core.KindNotFound) || !h.startWait(ctx, t, t.pending[r.fn], &until) {
			return rt, err
		}
	}
}

// startWait, while Start runs (the listener answers before the plugins
// are up) or while the name called is pending in t (its owner is not
// known until plugins still loading have loaded: routes.go's
// holdUncertain), waits until the routes t are replaced (a plugin came
// up) or Start has returned, and reports whether to look again. It waits
// at most Config.StartTimeout in all (until, set at the first wait), and
// not beyond ctx. A call made while the host starts thus reaches the
// function of a plugin still starting instead of failing as not_found,
// and the owner of its name, not the first plugin up that declares it.
func (h *Host) startWait(ctx context.Context, t *routeTable, pending bool, until *time.Time) bool {
	if !pending && !h.inStart.Load() {
		return false // not started at all: nothing to wait for
	}
	select {
	case <-h.started:
		if !pending {
			return false
		}
	default:
	}
	if until.IsZero() {
		*until = time.Now().Add(h.cfg.StartTimeout)
	}
	timer := time.NewTimer(time.Until(*until))
	defer timer.Stop()
	started := h.started
	if pending {
		started = nil // the table that decides the name replaces t
	}
	select {
	case <-t.replaced:
		return true
	case <-started:
		return true
	case <-timer.C:
	case <-ctx.Done():
	case <-h.closing:
	}
	return false
}

// lookupIn finds r's function in routes t.
func (h *Host) lookupIn(ctx context.Context, t *routeTable, r *request) (*route, error) {
	if rt, ok := t.funcs[r.fn]; ok && access.Allowed(ctx, rt.plugin.Name(), r.fn) {
		return rt, nil
	}
	if p, ok := t.failed[r.fn]; ok && access.Allowed(ctx, p.Name(), r.fn) {
		return nil, p.FailedError(r)
	}
	e := notServed(r)
	e.Suggestion = nearestCallable(ctx, t, r.fn)
	e.Message += e.DidYouMean()
	return nil, e
}

// nearestCallable is the function of t closest to fn (nearest.Name: case,
// a prefix, a typo or two) among those the caller of ctx may call and
// was shown (its CallView: shownBy), so that a suggestion names no
// function its key may not see nor one its own list lacks; "" when none
// is close.
func nearestCallable(ctx context.Context, t *routeTable, fn string) string {
	view := callView(ctx)
	names := make([]string, 0, len(t.funcs))
	for name, rt := range t.funcs {
		if !access.Allowed(ctx, rt.plugin.Name(), name) {
			continue
		}
		if _, ok := shownBy(ctx, view, rt); ok {
			names = append(names, name)
		}
	}
	slices.Sort(names)
	return nearest.Name(fn, slices.Values(names))
}
