package host

import (
	"context"

	"github.com/opentool-host/opentool-host/protocol/argcheck"
)

// argsKey is the context key of WithArguments' validator.
type argsKey struct{}

// WithArguments returns ctx whose call of function v.Function() checks
// its arguments with v instead of the function's own parameters: for a
// front end whose caller was shown another input schema of that
// function than the one the host routes by (MCP: the tools/list of a
// client's own upstream session with a declared MCP server, which may
// differ per client). Invalid arguments are KindInvalidParams as ever;
// calls of other functions on ctx (call_tool's inner call) are checked
// as usual.
func WithArguments(ctx context.Context, v *argcheck.Validator) context.Context {
	return context.WithValue(ctx, argsKey{}, v)
}

// argsFor returns the validator of r's call on ctx: WithArguments' for
// r's function, else the route's (nil: none).
func argsFor(ctx context.Context, rt *route, r *request) *argcheck.Validator {
	if v, _ := ctx.Value(argsKey{}).(*argcheck.Validator); v != nil && v.Function() == r.fn {
		return v
	}
	return rt.args
}
