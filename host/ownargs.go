package host

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/opentool-host/opentool-host/host/core"
	"github.com/opentool-host/opentool-host/protocol/argcheck"
)

// CallView is what the caller of a call was shown of fi, the function
// the call is routed to (call_tool's inner call included), for a front
// end whose caller may be shown another list than the one the host routes
// by (MCP: the tools/list of a client's own upstream session with a
// declared MCP server, which may differ per client). It returns the zero
// Shown, nil when the caller was shown fi as the host serves it (fi's
// own parameters check the arguments, search_tools gives fi's own
// description and input schema); a Shown with what the caller's own list
// defines instead (see Shown); or ErrNotShown when the caller was not
// shown fi at all, which the call answers exactly as a function not
// served (KindNotFound). Any other error ends the call as it is.
type CallView func(ctx context.Context, fi FunctionInfo) (Shown, error)

// Shown is what a CallView's caller was shown of a function it shows;
// the zero Shown: the function as the host serves it. It is returned by
// value: a call's view costs no allocation for it.
type Shown struct {
	// Args checks the call's arguments instead of the function's own
	// parameters: the validator of the input schema the caller was
	// shown; nil when that is the shared one.
	Args *argcheck.Validator
	// Definition is the function's definition in the caller's own list,
	// as its server wrote it for that caller (for a declared MCP
	// server's function, Function.MCPTool: the MCP tool object, with its
	// "description" and "inputSchema"); nil when the caller's list is
	// the shared one. search_tools' hit of the function gives its
	// description and inputSchema.
	Definition json.RawMessage
}

// ErrNotShown is CallView's error for a function its caller was not
// shown.
var ErrNotShown = errors.New("the function was not shown to its caller")

// viewKey is the context key of WithCallView's CallView.
type viewKey struct{}

// WithCallView returns ctx whose calls are held to what their caller was
// shown by view (see CallView).
func WithCallView(ctx context.Context, view CallView) context.Context {
	return context.WithValue(ctx, viewKey{}, view)
}

// callView returns the CallView on ctx (WithCallView), nil without one.
func callView(ctx context.Context) CallView {
	view, _ := ctx.Value(viewKey{}).(CallView)
	return view
}

// functionInfo is the FunctionInfo of rt's function (Functions, and
// what a CallView is given).
func (rt *route) functionInfo() FunctionInfo {
	return FunctionInfo{Plugin: rt.plugin.Name(), Function: rt.fn, Info: rt.info,
		SharedTools: rt.fn.MCPTool != nil && rt.plugin.SharedTools()}
}

// argsFor returns the validator of r's call to rt on ctx: the CallView's
// when it has one (Shown.Args), else the route's (nil: none). Errors:
// the not-served *Error of r when the caller was not shown rt's
// function, the CallView's other errors.
func argsFor(ctx context.Context, rt *route, r *request) (*argcheck.Validator, error) {
	view := callView(ctx)
	if view == nil {
		return rt.args, nil
	}
	shown, err := view(ctx, rt.functionInfo())
	switch {
	case errors.Is(err, ErrNotShown):
		return nil, notServed(r)
	case err != nil:
		return nil, err
	case shown.Args != nil:
		return shown.Args, nil
	}
	return rt.args, nil
}

// shownBy reports whether view (nil: none) shows rt's function to its
// caller, so that what the host names to a caller (search_tools' hits,
// an unknown name's suggestion) is only what it may call, and what it
// shows of it (Shown; the zero Shown: the function as served): ok is
// false only when view says ErrNotShown (its other errors: shown as
// served). It consults view only for a declared MCP server's function
// (Function.MCPTool), the only ones a caller's view may leave out or
// define otherwise.
func shownBy(ctx context.Context, view CallView, rt *route) (shown Shown, ok bool) {
	if view == nil || rt.fn.MCPTool == nil {
		return Shown{}, true
	}
	shown, err := view(ctx, rt.functionInfo())
	switch {
	case errors.Is(err, ErrNotShown):
		return Shown{}, false
	case err != nil:
		return Shown{}, true
	}
	return shown, true
}

// notServed is the error of r, a call of a function not served to its
// caller.
func notServed(r *request) *core.Error {
	return r.Fail(core.KindNotFound, "", fmt.Sprintf("function %q is not served", r.fn), nil)
}
