// Package clientview holds a client's tools/call to the tools that
// client was shown, for the host's MCP front end: the view a call carries
// (host.CallView, on its context by Views.Middleware), a client
// session's own lists of the declared MCP servers' tools kept decoded
// until they may be stale (Lists), the validators of the input schemas
// those lists give (by served name and schema). It knows the SDK's
// sessions and what it is given of the front end (Lister) only.
//
// A client session's call is checked against what that client was
// shown. The host routes calls by the tools of a declared MCP server's
// shared session, which lists every tool a client may be shown (MCP
// Apps: UI tools only to clients that declare io.modelcontextprotocol/ui,
// which the shared session declares); a client session with an upstream
// session of its own is listed that session's tools (clientDefs). So a
// tools/call by a client session carries its view (Views.Middleware:
// host.WithCallView), which the host applies to the function the call
// is routed to, call_tool's inner call included:
//
//	the client's own list                the call
//	lacks the tool                       not served (host.ErrNotShown): the
//	                                     JSON-RPC error of an unknown tool, as
//	                                     for a name the host does not serve; the
//	                                     client is not told the tool exists
//	has it with the shared inputSchema   as it is
//	has it with another inputSchema      its arguments checked against the
//	                                     client's, not the shared one ("invalid
//	                                     params" as ever)
//	(the server lists the same tools to  as it is; for a server declared
//	every client, or its list failed)    "sessions": "shared" its list is not
//	                                     asked for at all (its catalog says
//	                                     so: host.FunctionInfo.SharedTools)
//
// The client's list is its own session's, kept by the adapter until the
// server says its tools changed, so a call asks the server once; a
// client session with an id keeps it besides, decoded, with what each
// tool is shown as (Lists), so that its later calls ask the plugin
// for no list and decode nothing, until the list may be stale:
//
//	event                                 what the session kept
//	the server's tools/list_changed on    dropped (mcpsession.Session.
//	the client's own upstream session     ToolsChanged, called by the
//	                                      adapter as it drops its own)
//	any server's tools/list_changed       dropped, every session's
//	reaching the front end (lists.go)
//	a plugin came, went, restarted, was   not used (each list is of the
//	reloaded or stopped                   route table it was asked in:
//	                                      host.Host.Changed)
//	the client session ends               freed with it (the front end)
//
// A list asked for while it is dropped is not kept (a generation), so
// the next call asks again. A
// client of 2026-07-28 has no session: its requests carry its clientInfo,
// capabilities and revision in _meta (mcpsession.Request.Init, set by
// the front end), and its tools/list and tools/call are held alike to the
// list the server gives a client with that identity (the adapter's list
// by identity, callers.go: nothing kept per caller, so any replica
// answers alike; the identity is the caller's own claim, and a view only
// narrows what its key is served). What
// the host names to the client besides (search_tools' hits, the "did you
// mean" of an unknown name) is held to the same view: a tool the
// client's own list lacks is neither found nor suggested, and a hit of
// a tool it has gives the description and inputSchema that list gives
// it (host.Shown.Definition), not the shared ones.
package clientview

import (
	"bytes"
	"context"
	"encoding/json"
	"maps"
	"sync"

	"github.com/hashicorp/go-hclog"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/opentool-host/opentool-host/host"
	"github.com/opentool-host/opentool-host/internal/mcpsession"
	"github.com/opentool-host/opentool-host/protocol/argcheck"
	"github.com/opentool-host/opentool-host/protocol/mcpmethod"
	"github.com/opentool-host/opentool-host/protocol/opentool"
)

// Lister is what Views knows of the front end.
type Lister interface {
	// Changed is host.Host.Changed: closed when the route table changes
	// (a list asked for is of the table it was asked in).
	Changed() <-chan struct{}
	// List returns the tools the server behind plugin lists to the
	// client of ss, asked for with function fn (its tools/list), each as
	// the server wrote it, by MCP name; nil for the shared list (or when
	// the list failed).
	List(ctx context.Context, ss *mcp.ServerSession, plugin, fn string) map[string]json.RawMessage
	// Kept returns the Lists ss keeps across its calls; nil for a
	// request without a session id.
	Kept(ss *mcp.ServerSession) *Lists
}

// Views makes the view of each client's tools/call. Create it with New;
// it is safe for concurrent use.
type Views struct {
	lister  Lister
	logger  hclog.Logger
	schemas clientSchemas
}

// New returns the Views over lister, logging to logger a client's own
// input schema that does not compile.
func New(lister Lister, logger hclog.Logger) *Views {
	return &Views{lister: lister, logger: logger}
}

// ownValidators bounds the compiled input schemas of clients' own lists
// kept (by served name and schema); past it they are dropped.
const ownValidators = 64

// clientSchemas keeps the validators of clients' own input schemas.
type clientSchemas struct {
	mu sync.Mutex
	by map[string]*argcheck.Validator // name + "\x00" + schema
}

// Middleware is the SDK server's receiving middleware that puts the view
// of the client of a tools/call on its context (see above): a client
// session's, a 2026-07-28 caller's. Add it after the access middleware
// (which runs first: the grant on ctx).
func (vs *Views) Middleware(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		if ss, _ := req.GetSession().(*mcp.ServerSession); method == mcpmethod.ToolsCall && ss != nil {
			ctx = vs.CallContext(ctx, ss)
		}
		return next(ctx, method, req)
	}
}

// CallContext returns ctx with the view of the client of ss for a
// tools/call (see above), as Middleware puts it on a call's context: a
// client session's (ss with an id), a 2026-07-28 caller's; any other ss
// (a stateless session of an earlier revision) has none, and ctx is
// returned as it is. For a call the front end handles without the SDK's
// middleware.
func (vs *Views) CallContext(ctx context.Context, ss *mcp.ServerSession) context.Context {
	if ss.ID() != "" || mcpsession.SpeaksSessionless(ss) {
		return host.WithCallView(ctx, vs.View(ss))
	}
	return ctx
}

// View is the host.CallView of the client of ss (a client session,
// or the session of one 2026-07-28 request): for a tool of a declared MCP
// server, what the client's own list shows of it. A tool of
// a server that lists the same tools to every client
// (host.FunctionInfo.SharedTools) is shown as served at once, without
// asking for a list. Each server's list is asked for at most once per
// view (one tools/call: its call, or search_tools' hits and an unknown
// name's suggestion, which consult it for many tools); a client session
// with an id keeps it besides for its later calls (Lists), so that
// they ask for none.
func (vs *Views) View(ss *mcp.ServerSession) host.CallView {
	v := &callView{vs: vs, ss: ss, kept: vs.lister.Kept(ss)}
	return v.shown
}

// callView is one client view's state (View): two allocations per
// tools/call with the view itself, and none more while its session keeps
// the list the call needs.
type callView struct {
	vs    *Views
	ss    *mcp.ServerSession
	kept  *Lists // the session's lists kept across its calls; nil for a request without a session id
	mu    sync.Mutex
	lists map[string]*ownList // plugin → its list for the client (nil: the shared one); nil until the first
}

// shown is the host.CallView of View: for a tool the client's own
// list has, that list's definition of it (host.Shown.Definition, as the
// server wrote it) and the validator of its inputSchema when it is not
// the shared one (host.Shown.Args).
func (v *callView) shown(ctx context.Context, fi host.FunctionInfo) (host.Shown, error) {
	if fi.Function.MCPTool == nil || fi.SharedTools {
		return host.Shown{}, nil // not an MCP server's tool, or its list is the shared one
	}
	v.mu.Lock()
	own, asked := v.lists[fi.Plugin]
	v.mu.Unlock()
	if !asked {
		own = v.list(ctx, fi)
		v.mu.Lock()
		if v.lists == nil {
			v.lists = map[string]*ownList{}
		}
		v.lists[fi.Plugin] = own
		v.mu.Unlock()
	}
	if own == nil {
		return host.Shown{}, nil
	}
	return own.shown(v.vs, fi)
}

// list returns fi's server's list for the client: the one its session
// keeps, else asked for now (Lister.List) and kept for the session's
// later calls unless it may already be stale (Lists.put); nil for the
// shared one.
func (v *callView) list(ctx context.Context, fi host.FunctionInfo) *ownList {
	table := v.vs.lister.Changed()
	l, gen := v.kept.get(fi.Plugin, table)
	if l != nil {
		return l
	}
	defs := v.vs.lister.List(ctx, v.ss, fi.Plugin, fi.Function.Name)
	if defs == nil {
		return nil
	}
	l = &ownList{table: table, defs: defs}
	v.kept.put(fi.Plugin, l, gen)
	return l
}

// Lists are one client session's own lists of the declared MCP
// servers' tools (Lister.List), decoded, kept across its tools/calls by
// plugin, so that a call asks for none and decodes none. They are
// dropped (Drop) when they may be stale: the client's own upstream
// session of a server said its tools changed
// (mcpsession.Session.ToolsChanged, from the adapter), any server's
// tools/list_changed reached the host (the lists a client
// without an upstream session of its own is given change with the
// shared session's), and when the session ends; one is not used once the
// host's route table changed since it was listed (host.Host.Changed: a
// plugin came, went, restarted, was reloaded or stopped, so the server
// behind the plugin may be another). At most one list per plugin served
// is kept per session. The zero Lists is ready; the nil *Lists keeps
// nothing. Safe for concurrent use.
type Lists struct {
	mu  sync.Mutex
	gen uint64              // drops so far: a list asked for before one is not kept
	by  map[string]*ownList // plugin → its list
}

// ownList is one server's tools as it listed them to one client, by MCP
// name, each as the server wrote it, with what each of the plugin's
// functions is shown as, worked out at its first call.
type ownList struct {
	table <-chan struct{} // host.Host.Changed when it was asked for: the route table it is of
	defs  map[string]json.RawMessage

	mu  sync.Mutex
	fns map[*opentool.Function]shownAs // by the route table's function
}

// shownAs is what a function is shown as (ownList.shown).
type shownAs struct {
	shown host.Shown
	err   error // host.ErrNotShown, or nil
}

// get returns plugin's list kept (nil when none is kept or it is of
// another route table than table) and the number of drops so far, to put
// a list asked for now with.
func (o *Lists) get(plugin string, table <-chan struct{}) (*ownList, uint64) {
	if o == nil {
		return nil, 0
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	if l := o.by[plugin]; l != nil && l.table == table {
		return l, o.gen
	}
	return nil, o.gen
}

// put keeps l as plugin's list, unless a drop came since generation gen
// was read (the list asked for may be the one dropped); lists of another
// route table than l's go.
func (o *Lists) put(plugin string, l *ownList, gen uint64) {
	if o == nil {
		return
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	if gen != o.gen {
		return
	}
	if o.by == nil {
		o.by = map[string]*ownList{}
	}
	maps.DeleteFunc(o.by, func(_ string, k *ownList) bool { return k.table != l.table })
	o.by[plugin] = l
}

// Drop forgets every list kept, and any being asked for now.
func (o *Lists) Drop() {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.by = nil
	o.gen++
}

// shown is what l shows of fi, worked out once per function: the
// definition l has of fi's tool and, when its inputSchema is not the
// shared one, its validator (ownValidator); host.ErrNotShown when l
// lacks the tool.
func (l *ownList) shown(vs *Views, fi host.FunctionInfo) (host.Shown, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if a, ok := l.fns[fi.Function]; ok {
		return a.shown, a.err
	}
	var a shownAs
	if def, ok := l.defs[Name(fi.Function)]; ok {
		a.shown = host.Shown{Args: vs.ownValidator(fi, def), Definition: def}
	} else {
		a.err = host.ErrNotShown
	}
	if l.fns == nil {
		l.fns = map[*opentool.Function]shownAs{}
	}
	l.fns[fi.Function] = a
	return a.shown, a.err
}

// ownValidator returns the validator of the inputSchema of def, fi's
// tool as the client's own list defines it, when it differs from the
// shared one (fi.Function.MCPTool's); nil when it is the same, or does not
// compile (the shared one then checks, as for every caller).
func (vs *Views) ownValidator(fi host.FunctionInfo, def json.RawMessage) *argcheck.Validator {
	own, shared := inputSchema(def), inputSchema(fi.Function.MCPTool)
	if own == nil || bytes.Equal(own, shared) {
		return nil
	}
	key := fi.Function.Name + "\x00" + string(own)
	vs.schemas.mu.Lock()
	defer vs.schemas.mu.Unlock()
	if v, ok := vs.schemas.by[key]; ok {
		return v
	}
	f := fi.Function.Clone()
	f.InputSchema = own
	v, err := argcheck.Compile(f)
	if err != nil {
		vs.logger.Warn("MCP tools/call: a client's own input schema does not compile; checking the shared one", "tool", fi.Function.Name, "error", err)
		v = nil
	}
	if vs.schemas.by == nil || len(vs.schemas.by) >= ownValidators {
		vs.schemas.by = map[string]*argcheck.Validator{}
	}
	vs.schemas.by[key] = v
	return v
}

// inputSchema is the inputSchema member of an MCP tool definition, as
// written; nil without one.
func inputSchema(def json.RawMessage) json.RawMessage {
	var t struct {
		InputSchema json.RawMessage `json:"inputSchema"`
	}
	if json.Unmarshal(def, &t) != nil {
		return nil
	}
	return t.InputSchema
}

// Name is the name f's MCP server gave it (Function.MCPTool's name), ""
// without one.
func Name(f *opentool.Function) string {
	var t struct {
		Name string `json:"name"`
	}
	_ = json.Unmarshal(f.MCPTool, &t)
	return t.Name
}
