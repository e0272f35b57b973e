package host

// The call path: Host.Call and Host.StreamCall look the function up in the
// routing table, validate its arguments and hand the call to the owning
// plugin, which sends it to its current process (instance.go).

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// lookup finds the route of function fn, or the error for it.
func (h *Host) lookup(fn string) (*route, error) {
	t := h.routes.Load()
	if r, ok := t.funcs[fn]; ok {
		return r, nil
	}
	if p, ok := t.failed[fn]; ok {
		v := p.v.Load()
		return nil, &PluginError{Plugin: p.name, Err: fmt.Errorf("%w: %s", ErrPluginFailed, v.lastErr)}
	}
	return nil, fmt.Errorf("%w: %q", ErrFunctionNotFound, fn)
}

// withTimeout applies Config.CallTimeout when ctx has no earlier deadline.
func (h *Host) withTimeout(ctx context.Context) (context.Context, context.CancelFunc) {
	if d, ok := ctx.Deadline(); ok && time.Until(d) <= h.cfg.CallTimeout {
		return ctx, func() {}
	}
	return context.WithTimeout(ctx, h.cfg.CallTimeout)
}

// Call runs function fn with args, a JSON object (nil or empty for no
// arguments), and returns the function's JSON result object. The call
// goes to the plugin that serves fn over its existing gRPC connection;
// calls do not wait for each other beyond the plugin's MaxConcurrency.
//
// args are validated against fn's parameters first (see package
// argcheck); invalid ones never reach the plugin.
//
// Errors: ErrFunctionNotFound; ErrWrongKind for a streaming function;
// *argcheck.Error (matching argcheck.ErrInvalidArguments) listing every
// fault of args; *pluginsdk.Error when the tool itself failed (its code kept); else a
// *PluginError or *ExitError naming the plugin and matching ErrPluginFailed,
// ErrPluginStopped, ErrPluginExited, ErrBusy or ErrTimeout; ErrCanceled
// when ctx was cancelled.
func (h *Host) Call(ctx context.Context, fn string, args []byte) ([]byte, error) {
	r, err := h.lookup(fn)
	if err != nil {
		return nil, err
	}
	if r.fn.IsStream() {
		return nil, fmt.Errorf("%w: function %q streams; use streamCall", ErrWrongKind, fn)
	}
	if r.args != nil {
		if err := r.args.Validate(args); err != nil {
			return nil, err
		}
	}
	ctx, cancel := h.withTimeout(ctx)
	defer cancel()
	return r.plugin.call(ctx, fn, args)
}

// StreamCall runs streaming function fn and hands each JSON item to
// onItem, in order. Errors are as for Call; ErrWrongKind for a function
// that does not stream.
func (h *Host) StreamCall(ctx context.Context, fn string, args []byte, onItem func(item []byte) error) error {
	r, err := h.lookup(fn)
	if err != nil {
		return err
	}
	if !r.fn.IsStream() {
		return fmt.Errorf("%w: function %q does not stream; use call", ErrWrongKind, fn)
	}
	if r.args != nil {
		if err := r.args.Validate(args); err != nil {
			return err
		}
	}
	ctx, cancel := h.withTimeout(ctx)
	defer cancel()
	return r.plugin.streamCall(ctx, fn, args, onItem)
}

// call runs one call on the current process. A call that could not be
// sent because the process was being replaced or had just died waits for
// the next view (new process, restart) and is sent there.
func (p *Plugin) call(ctx context.Context, fn string, args []byte) ([]byte, error) {
	for {
		v, err := p.ready(ctx)
		if err != nil {
			return nil, err
		}
		res, err := v.inst.call(ctx, fn, args)
		if !errors.Is(err, errNotSent) {
			return res, err
		}
		if err := p.waitChange(ctx, v); err != nil {
			return nil, err
		}
	}
}

// streamCall is call for streaming functions.
func (p *Plugin) streamCall(ctx context.Context, fn string, args []byte, onItem func([]byte) error) error {
	for {
		v, err := p.ready(ctx)
		if err != nil {
			return err
		}
		err = v.inst.streamCall(ctx, fn, args, onItem)
		if !errors.Is(err, errNotSent) {
			return err
		}
		if err := p.waitChange(ctx, v); err != nil {
			return err
		}
	}
}

// waitChange waits until v is no longer the current view.
func (p *Plugin) waitChange(ctx context.Context, v *view) error {
	select {
	case <-v.changed:
		return nil
	case <-ctx.Done():
		return p.waitError(ctx, v)
	}
}

func (p *Plugin) waitError(ctx context.Context, v *view) error {
	err := ctxError(ctx, ctx.Err())
	if errors.Is(err, ErrTimeout) {
		return &PluginError{Plugin: p.name, Err: fmt.Errorf("%w while the plugin was %s (last error: %s)", ErrTimeout, v.state, v.lastErr)}
	}
	return err
}

// ready returns the current view once it is ready, waiting while the
// plugin starts or restarts, up to ctx's deadline.
func (p *Plugin) ready(ctx context.Context) (*view, error) {
	for {
		v := p.v.Load()
		switch v.state {
		case StateReady:
			return v, nil
		case StateFailed:
			return nil, &PluginError{Plugin: p.name, Err: fmt.Errorf("%w: %s", ErrPluginFailed, v.lastErr)}
		case StateDraining, StateStopped:
			return nil, &PluginError{Plugin: p.name, Err: ErrPluginStopped}
		}
		if err := p.waitChange(ctx, v); err != nil {
			return nil, err
		}
	}
}
