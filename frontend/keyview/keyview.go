// Package keyview answers one question for every front end: what may the
// API key of this request see of the host? A View holds the answer for
// one request: the functions the key may call, the plugins serving one of
// them, and of each such plugin's status only what is the key's to see;
// View.Listed, what every front end's function listing shows it (GET
// /opentool/load and /opentool/export, GET /otc/tools, MCP tools/list).
//
// The host's own functions (tool search's search_tools and call_tool,
// host.FunctionInfo.Builtin) are every key's to see and call: they reach
// only what the key may call. With a tool search threshold
// (core.Config.ToolSearchThreshold), a key that may call more of the
// plugins' functions than that finds only the host's own in a listing.
//
// A key that sees everything (a plain --api-key, "allow": ["*"], or no
// keys at all) sees every plugin whole, stderr included (the operator's
// view). A restricted key sees a plugin only when it may call one of its
// functions, only those functions, never a plugin's stderr, never the
// conflicts (which name other plugins), and only the lifecycle events of
// the plugins it sees, never a collision (which names the owner).
package keyview

import (
	"context"

	"github.com/opentool-host/opentool-host/host"
	"github.com/opentool-host/opentool-host/host/access"
	"github.com/opentool-host/opentool-host/host/core"
	"github.com/opentool-host/opentool-host/host/supervise"
)

// Source is what a View reads of the host. *host.Host implements it.
type Source interface {
	// Functions returns every served function with its plugin, the
	// host's own (host.FunctionInfo.Builtin) included.
	Functions() []host.FunctionInfo
	// Plugins returns every plugin's status, sorted by name.
	Plugins() []supervise.PluginStatus
	// ToolSearchThreshold is the number of the plugins' functions a key
	// may call beyond which its listings show only the host's own
	// functions (tool search, core.Config.ToolSearchThreshold); 0: no
	// threshold.
	ToolSearchThreshold() int
}

var _ Source = (*host.Host)(nil)

// View is what the key of one request may see. The zero View sees
// nothing; make one with Of.
type View struct {
	grant *access.Grant
	src   Source
	// callable maps each plugin to the functions the key may call of it;
	// nil when the key sees everything.
	callable map[string][]string
	// calls holds the names of the functions the key may call, the
	// host's own included; nil when the key sees everything.
	calls map[string]bool
}

// Of returns the View of the request context ctx (its grant, put there
// by access.Guard; none means everything) over src.
func Of(ctx context.Context, src Source) View { return For(access.GrantFrom(ctx), src) }

// For returns the View of grant g (nil: everything) over src, for a
// front end that holds the grant rather than a context carrying it.
func For(g *access.Grant, src Source) View {
	v := View{grant: g, src: src}
	if !v.grant.Restricted() {
		return v
	}
	v.callable, v.calls = map[string][]string{}, map[string]bool{}
	for _, f := range src.Functions() {
		switch {
		case f.Builtin:
			v.calls[f.Function.Name] = true
		case v.grant.Allows(f.Plugin, f.Function.Name):
			v.callable[f.Plugin] = append(v.callable[f.Plugin], f.Function.Name)
			v.calls[f.Function.Name] = true
		}
	}
	return v
}

// All reports whether the key sees everything (nothing to filter).
func (v View) All() bool { return v.callable == nil }

// Function reports whether the key may see and call function fn of
// plugin.
func (v View) Function(plugin, fn string) bool { return v.grant.Allows(plugin, fn) }

// Calls reports whether the key may call fn, a served function's name:
// one of the host's own (tool search's), or a plugin's that it may call.
// A key that sees everything may call any name.
func (v View) Calls(fn string) bool { return v.All() || v.calls[fn] }

// MayCall reports whether the caller of ctx may call fi: any caller the
// host's own functions (host.FunctionInfo.Builtin, which reach only what
// the caller may call), a plugin's function as access.Allowed says. It
// reads no Source: for call paths that hold fi.
func MayCall(ctx context.Context, fi host.FunctionInfo) bool {
	return GrantMayCall(access.GrantFrom(ctx), fi)
}

// GrantMayCall is MayCall for a caller of grant g (nil: no keys, every
// function), for a front end that holds the grant rather than a context
// carrying it (MCP: a session's key, to which a change of fi's tool is
// told only when it may call fi).
func GrantMayCall(g *access.Grant, fi host.FunctionInfo) bool {
	return fi.Builtin || g.Allows(fi.Plugin, fi.Function.Name)
}

// Listed is which served functions a key finds in the function listings
// of every front end (GET /opentool/load and /opentool/export, GET
// /otc/tools, MCP tools/list). Make it with View.Listed; the zero Listed
// lists every served function.
type Listed struct {
	names   map[string]bool // the listed functions; nil: every served function
	plugins map[string]bool // the plugins of which a function is listed
}

// Listed returns what the key finds in a function listing: the functions
// it may call, the host's own (tool search's) included; when the
// plugins' functions it may call number more than the Source's
// ToolSearchThreshold (> 0), the host's own alone.
func (v View) Listed() Listed {
	threshold := v.src.ToolSearchThreshold()
	if v.All() && threshold == 0 {
		return Listed{}
	}
	all := v.src.Functions()
	var own []string
	l := Listed{names: map[string]bool{}, plugins: map[string]bool{}}
	n := 0 // the plugins' functions the key may call
	for _, f := range all {
		switch {
		case f.Builtin:
			own = append(own, f.Function.Name)
		case v.All() || v.Function(f.Plugin, f.Function.Name):
			n++
			l.names[f.Function.Name] = true
			l.plugins[f.Plugin] = true
		}
	}
	switch {
	case threshold > 0 && n > threshold:
		l = Listed{names: map[string]bool{}, plugins: map[string]bool{}}
	case v.All():
		return Listed{}
	}
	for _, name := range own {
		l.names[name] = true
	}
	return l
}

// All reports whether every served function is listed (nothing to
// filter).
func (l Listed) All() bool { return l.names == nil }

// Has reports whether function fn is listed.
func (l Listed) Has(fn string) bool { return l.names == nil || l.names[fn] }

// Plugin reports whether a function of plugin name is listed (whose
// named schemas a listing then carries).
func (l Listed) Plugin(name string) bool { return l.names == nil || l.plugins[name] }

// Plugin reports whether the key sees plugin: it may call one of its
// functions.
func (v View) Plugin(name string) bool {
	if v.All() {
		return true
	}
	return len(v.callable[name]) > 0
}

// Plugins returns the statuses of the plugins the key sees, each as
// Status redacts it.
func (v View) Plugins() []supervise.PluginStatus {
	all := v.src.Plugins()
	if v.All() {
		return all
	}
	out := make([]supervise.PluginStatus, 0, len(v.callable))
	for _, p := range all {
		if v.Plugin(p.Name) {
			out = append(out, v.Status(p))
		}
	}
	return out
}

// Status returns p as the key may see it: whole for a key that sees
// everything; else with only the functions the key may call, no
// conflicts, no refusals (which name what the plugin declares; its state
// still says degraded) and no stderr.
func (v View) Status(p supervise.PluginStatus) supervise.PluginStatus {
	if v.All() {
		return p
	}
	p.Functions = append([]string{}, v.callable[p.Name]...)
	p.Conflicts = nil
	p.Refused = nil
	p.Stderr = nil
	return p
}

// Event reports whether the key may see e: the plugin's events for a key
// that sees the plugin, but no collision (its reason names the owner, a
// plugin the key may not see).
func (v View) Event(e core.Event) bool {
	if v.All() {
		return true
	}
	return e.Type != core.EventCollision && v.Plugin(e.Plugin)
}

// Describer is what gives run_code (host.RunCodeName, --code-mode) the
// description its caller is shown: its own, then TypeScript declarations
// of the tools that caller may call. *host.Host implements it.
type Describer interface {
	// CodeDescription is run_code's description for the caller of ctx
	// (its grant and view); see host.Host.CodeDescription.
	CodeDescription(ctx context.Context) string
}

var _ Describer = (*host.Host)(nil)

// CodeDescription is the description every front end's listing shows
// the caller of ctx for function fn: for run_code, src's
// CodeDescription when src is a Describer (ok true); else ok false, and
// the listing keeps the function's own.
func CodeDescription(ctx context.Context, src any, fn string) (desc string, ok bool) {
	d, is := src.(Describer)
	if !is || fn != host.RunCodeName {
		return "", false
	}
	if desc = d.CodeDescription(ctx); desc == "" {
		return "", false
	}
	return desc, true
}
