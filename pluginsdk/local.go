package pluginsdk

import (
	"context"
	"encoding/json"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/opentool-host/opentool-host/internal/wire"
	"github.com/opentool-host/opentool-host/internal/wire/toolpb"
)

// LocalRunner is implemented by a Tool served in the host's own process
// (Local) that runs something of its own: the MCP server adapter, whose
// server program the host starts through it.
type LocalRunner interface {
	// Run runs until the tool ends and returns why; ctx's end stops it
	// gracefully (wire.Local.Run).
	Run(ctx context.Context) error
	// PID is the process id of its program, 0 when none runs.
	PID() int
	// Kill ends it at once.
	Kill()
	// Ended reports whether its program has ended (Run returns, or has
	// returned): a call that failed then failed because the program
	// exited, and the host reports it so (retryable), not as the tool's
	// own error.
	Ended() bool
}

// Local serves t in the calling process, as opentool-host serves a
// declared plugin (an MCP server, command-line tools): the host calls it
// through wire.NewLocalClient, with no process or encoding between, and
// it speaks plugin protocol 3 exactly as Serve would (MCP results,
// messages, the caller's _meta, a Cataloger's catalog, a
// DocumentWatcher's and CatalogWatcher's changes). When t implements
// LocalRunner, Run, PID and Kill are its; else Run waits for its context,
// PID is 0 and Kill does nothing.
func Local(t Tool) wire.Local {
	l := &local{s: &server{tool: t, v3: true}}
	l.runner, _ = t.(LocalRunner)
	return l
}

// local is the wire.Local of a Tool.
type local struct {
	s      *server
	runner LocalRunner // nil when the tool runs nothing of its own
}

// Load implements wire.Local.
func (l *local) Load(ctx context.Context) ([]byte, error) {
	resp, _ := l.s.Load(ctx, &toolpb.LoadRequest{})
	if e := wire.FromProto(resp.GetError()); e != nil {
		return nil, e
	}
	return resp.GetDocument(), nil
}

// Watch implements wire.Local: the tool's DocumentWatcher, CatalogWatcher,
// LogWatcher and ListWatcher events, until ctx ends.
func (l *local) Watch(ctx context.Context) (func() (wire.WatchEvent, error), error) {
	var docs <-chan struct{}
	var cats <-chan CatalogChange
	var logs <-chan json.RawMessage
	var lists <-chan string
	if w, ok := l.s.tool.(DocumentWatcher); ok {
		docs = w.DocumentChanged()
	}
	if w, ok := l.s.tool.(CatalogWatcher); ok {
		cats = w.CatalogChanged()
	}
	if w, ok := l.s.tool.(LogWatcher); ok {
		logs = w.LogMessages()
	}
	if w, ok := l.s.tool.(ListWatcher); ok {
		lists = w.ListsChanged()
	}
	return func() (wire.WatchEvent, error) {
		select {
		case <-ctx.Done():
			return wire.WatchEvent{}, ctx.Err()
		case <-docs:
			return wire.WatchEvent{}, nil
		case c := <-cats:
			return wire.WatchEvent{Catalog: c.URI == "", URI: c.URI}, nil
		case m := <-logs:
			return wire.WatchEvent{Log: m}, nil
		case k := <-lists:
			return wire.WatchEvent{List: k}, nil
		}
	}, nil
}

// Catalog implements wire.Local.
func (l *local) Catalog(ctx context.Context) ([]byte, error) {
	resp, err := l.s.Catalog(ctx, &toolpb.CatalogRequest{})
	if status.Code(err) == codes.Unimplemented {
		return nil, nil
	}
	if e := wire.FromProto(resp.GetError()); e != nil {
		return nil, e
	}
	return resp.GetCatalog(), nil
}

// Request implements wire.Local.
func (l *local) Request(ctx context.Context, method string, params []byte) ([]byte, error) {
	resp, err := l.s.Request(ctx, &toolpb.MCPRequest{Method: method, Params: params})
	if status.Code(err) == codes.Unimplemented {
		return nil, &wire.RPCError{Code: wire.CodeMethodNotFound, Message: method + ": the plugin serves no MCP catalog"}
	}
	if e := wire.FromProtoRPCError(resp.GetError()); e != nil {
		return nil, e
	}
	return resp.GetResult(), nil
}

// Call implements wire.Local: the call runs exactly as one from an
// Invoke stream or the data channel. Its error says Exited when the
// tool's program (LocalRunner.Ended) had ended by then.
func (l *local) Call(ctx context.Context, cf *wire.CallFrame, out wire.CallOut) *wire.ToolError {
	te := l.s.callFrame(ctx, cf, out)
	if te != nil && l.runner != nil && l.runner.Ended() {
		te.Exited = true
	}
	return te
}

// Run implements wire.Local.
func (l *local) Run(ctx context.Context) error {
	if l.runner == nil {
		<-ctx.Done()
		return ctx.Err()
	}
	return l.runner.Run(ctx)
}

// PID implements wire.Local.
func (l *local) PID() int {
	if l.runner == nil {
		return 0
	}
	return l.runner.PID()
}

// Kill implements wire.Local.
func (l *local) Kill() {
	if l.runner != nil {
		l.runner.Kill()
	}
}

// ClientRestarter is implemented by a LocalRunner whose clients have
// processes of their own (the MCP server adapter's per-client sessions).
type ClientRestarter interface {
	// ClientRestarts is how many of those processes ended by themselves
	// so far, each replaced at its client's next call.
	ClientRestarts() int
}

// ClientRestarts implements wire.Local: the runner's, when it is a
// ClientRestarter; else 0.
func (l *local) ClientRestarts() int {
	if r, ok := l.runner.(ClientRestarter); ok {
		return r.ClientRestarts()
	}
	return 0
}
