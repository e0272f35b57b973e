package host

// Function ownership. A function name is served by one plugin, its owner,
// and a plugin that arrives later declaring the same name cannot take it
// over (a dropped-in binary cannot hijack a served function):
//
//   - The owner of a name is remembered across rebuilds (Host.claims).
//     It keeps the name while it exists (also while restarting or failed)
//     and its last good document declares the name; the name is released
//     only when the owner is removed or its new document no longer
//     declares it. Then the remaining plugins that declare it claim it
//     anew, in plugin-name order.
//   - The owners of plain names are remembered across restarts
//     (owners.go): a name nobody owns goes first to its remembered owner
//     when that plugin declares it, so the plugin that owned a name
//     before a restart owns it after, whatever order plugins arrive in.
//   - Other names nobody owns are claimed in plugin-name order by the
//     plugins whose documents declare them at each rebuild. At the first
//     Start every plugin has loaded (or failed) before the first rebuild,
//     so ownership there is by plugin name, deterministically.
//   - With Config.PrefixCollisions (the CLI's default) the duplicate is
//     served as "PLUGIN__NAME" (its plugin's name, two underscores, the
//     function's name: the characters every front end allows, OpenAI's
//     and Anthropic's ^[a-zA-Z0-9_-]{1,64}$ included), logged at WARN
//     once with the name it is served under; that name is claimed like
//     any other, and refused when another plugin owns it or it is longer
//     than 64 characters. Without it the duplicate is refused, logged at
//     ERROR once (function, owner, refused plugin). Either way the
//     conflict is listed in the plugin's PluginStatus.Conflicts (GET
//     /health, list).

import (
	"slices"
	"sort"
	"time"

	"github.com/opentool-host/opentool-host/host/core"
	"github.com/opentool-host/opentool-host/host/supervise"
	"github.com/opentool-host/opentool-host/protocol/argcheck"
	"github.com/opentool-host/opentool-host/protocol/opentool"
)

// routeTable maps function names to the plugins that serve them. It is
// immutable once built; the Host swaps whole tables atomically so that the
// call path reads it without locks.
type routeTable struct {
	// funcs maps a served function name to its route.
	funcs map[string]*route
	// order lists the served routes in plugin-name, then document order.
	order []*route
	// failed maps the function names owned by failed plugins to the
	// plugin, so calls get the plugin's reason instead of "not found".
	failed map[string]*supervise.Plugin
	// schemas holds the served plugins' named schemas keyed "PLUGIN.Name".
	schemas map[string]*opentool.Schema
	// conflicts lists, by plugin name, the declared functions another
	// plugin owns.
	conflicts map[string][]supervise.Conflict
	// pending holds, in a provisional table (built while plugins still
	// load their documents), the plain names whose owner is not known
	// yet (holdUncertain): they are not routed, and a call of one waits
	// for a newer table (call.go's lookup).
	pending map[string]bool
	// cat is the served MCP catalog items (catalog.go), rebuilt with
	// the functions.
	cat *catalogTable
	// replaced is closed when a newer table takes this one's place.
	replaced chan struct{}
}

// route is one served function.
type route struct {
	plugin *supervise.Plugin
	// fn is the function as served (with $refs inlined; shared with the
	// plugin's document, or a copy: renamed "PLUGIN__NAME", or without
	// the MCPTool of a plugin process, served).
	fn   *opentool.Function
	info opentool.Info // info of the plugin's document
	// args validates call arguments; nil when fn's parameters did not
	// compile (logged; the function is then served without validation).
	args *argcheck.Validator
	// target is the name the plugin declares, which a call must send:
	// fn.Name unless the function is served prefixed.
	target string
	// timeout bounds one call (the plugin's policy or
	// Config.CallTimeout).
	timeout time.Duration
}

// claim is the ownership of one function name.
type claim struct {
	owner *supervise.Plugin
	// fn is the function the owner declares: the name itself, or NAME
	// for a prefixed name "PLUGIN__NAME".
	fn string
}

// prefixSep joins a plugin's name and a function's name in a prefixed
// name.
const prefixSep = "__"

// newRouteTable returns an empty table.
func newRouteTable() *routeTable {
	return &routeTable{funcs: map[string]*route{}, pending: map[string]bool{}, failed: map[string]*supervise.Plugin{}, schemas: map[string]*opentool.Schema{}, conflicts: map[string][]supervise.Conflict{},
		cat: &catalogTable{byKey: map[string]*catRoute{}, order: map[string][]*catRoute{}}, replaced: make(chan struct{})}
}

// buildRoutes builds the table from offers (sorted by plugin name),
// updating claims (function name → owner) by the rules above. A plugin
// serves the names it owns while starting, ready or restarting; a failed
// owner's names go to failed. reserve, when not nil, claims the names
// no plugin may take (the host's own functions, builtin.go) first; known
// (may be nil) gives a free name to its remembered owner first.
func buildRoutes(offers []supervise.Offer, claims map[string]claim, prefix bool, reserve func(map[string]claim), known *nameOwners) *routeTable {
	t := newRouteTable()
	releaseClaims(offers, claims)
	if reserve != nil {
		reserve(claims)
	}
	claimFree(offers, claims, known)
	if releasePrefixed(claims) {
		claimFree(offers, claims, known)
	}
	for _, o := range offers {
		t.add(o, claims, prefix)
	}
	return t
}

// releaseClaims drops the claims whose owner is gone (not offered) or
// whose owner's document no longer declares the function.
func releaseClaims(offers []supervise.Offer, claims map[string]claim) {
	declared := map[*supervise.Plugin]map[string]bool{}
	for _, o := range offers {
		names := map[string]bool{}
		for _, f := range functions(o.Doc) {
			names[f.Name] = true
		}
		declared[o.P] = names
	}
	for name, c := range claims {
		if !declared[c.owner][c.fn] {
			delete(claims, name)
		}
	}
}

// claimFree gives each declared name nobody owns to its remembered owner
// in known when that plugin declares it, else to the first plugin by name
// that declares it.
func claimFree(offers []supervise.Offer, claims map[string]claim, known *nameOwners) {
	for _, o := range offers {
		for _, f := range functions(o.Doc) {
			if _, ok := claims[f.Name]; !ok && known.remembered(f.Name) == o.P.Name() {
				claims[f.Name] = claim{owner: o.P, fn: f.Name}
			}
		}
	}
	for _, o := range offers {
		for _, f := range functions(o.Doc) {
			if _, ok := claims[f.Name]; !ok {
				claims[f.Name] = claim{owner: o.P, fn: f.Name}
			}
		}
	}
}

// releasePrefixed drops the prefixed names whose owner now owns the plain
// name, and reports whether it dropped any.
func releasePrefixed(claims map[string]claim) bool {
	dropped := false
	for name, c := range claims {
		if name != c.fn && claims[c.fn].owner == c.owner {
			delete(claims, name)
			dropped = true
		}
	}
	return dropped
}

// add routes the functions of o that it owns (or, with prefix, serves
// prefixed) and records its conflicts.
func (t *routeTable) add(o supervise.Offer, claims map[string]claim, prefix bool) {
	serving := o.State == core.StateStarting || o.State == core.StateReady || o.State == core.StateRestarting
	for i, f := range functions(o.Doc) {
		name := f.Name
		if owner := claims[name].owner; owner != o.P {
			c := supervise.Conflict{Function: f.Name, Owner: owner.Name()}
			name = ""
			if prefix {
				name = claimPrefixed(o.P, f.Name, claims)
				c.ServedAs = name
			}
			t.conflicts[o.P.Name()] = append(t.conflicts[o.P.Name()], c)
			if name == "" {
				continue
			}
		}
		switch {
		case serving:
			fn := servedFunction(&o.Doc.Functions[i], name, o.Declared)
			r := &route{plugin: o.P, fn: fn, info: o.Doc.Info, args: o.Args[i], target: f.Name, timeout: o.Timeout}
			t.funcs[name] = r
			t.order = append(t.order, r)
		case o.State == core.StateFailed:
			t.failed[name] = o.P
		}
	}
	if serving && o.Doc != nil {
		for k, s := range o.Doc.Schemas {
			t.schemas[o.P.Name()+"."+k] = s
		}
	}
}

// holdUncertain takes out of t, a provisional table, each plain name
// whose owner cannot be known until the plugins still loading their
// documents have loaded them, so that no call reaches a plugin that
// will not own the name (the rules at the top of this file): a name that
// no plugin owned before this build (kept, the claims before it) and
// that t gives to a plugin other than its remembered owner, when that
// remembered owner is still loading or a plugin still loading sorts
// before t's owner (it may declare the name too). Such a name is
// pending: not listed, not routed. A prefixed name stays: its plugin
// owns the plain name in no outcome.
func (t *routeTable) holdUncertain(offers []supervise.Offer, kept map[string]claim, known *nameOwners) {
	loading := map[string]bool{}
	first := "" // the first plugin by name still loading (offers are sorted)
	for _, o := range offers {
		// Restarting without a document: a server reached by URL never
		// reached yet, which may stay down; it holds no name meanwhile.
		if o.Doc == nil && o.State == core.StateStarting {
			loading[o.P.Name()] = true
			if first == "" {
				first = o.P.Name()
			}
		}
	}
	if first == "" {
		return
	}
	for name, r := range t.funcs {
		if _, owned := kept[name]; owned || name != r.target {
			continue
		}
		owner, remembered := r.plugin.Name(), known.remembered(name)
		if remembered != owner && (loading[remembered] || first < owner) {
			t.pending[name] = true
			delete(t.funcs, name)
		}
	}
	t.order = slices.DeleteFunc(t.order, func(r *route) bool { return t.pending[r.fn.Name] })
}

// servedFunction is fn as served under name: fn itself, or a copy renamed; a
// plugin process's MCP tool definition (Function.MCPTool: only the host's
// own MCP client of a declared server, declared, may give one) is left
// out, so that no plugin process can show MCP clients a definition other
// than the one built from its function.
func servedFunction(fn *opentool.Function, name string, declared bool) *opentool.Function {
	if name == fn.Name && (declared || fn.MCPTool == nil) {
		return fn
	}
	c := *fn
	c.Name = name
	if !declared {
		c.MCPTool = nil
	}
	return &c
}

// claimPrefixed claims "PLUGIN__NAME" for p's duplicate fn and returns
// it, or "" when another plugin owns it or it is too long.
func claimPrefixed(p *supervise.Plugin, fn string, claims map[string]claim) string {
	name := p.Name() + prefixSep + fn
	if len(name) > supervise.MaxFunctionName {
		return ""
	}
	if c, ok := claims[name]; ok && (c.owner != p || c.fn != fn) {
		return ""
	}
	claims[name] = claim{owner: p, fn: fn}
	return name
}

// functions returns doc's functions (none for a nil doc).
func functions(doc *opentool.OpenTool) []opentool.Function {
	if doc == nil {
		return nil
	}
	return doc.Functions
}

// sortOffers sorts offers by plugin name.
func sortOffers(offers []supervise.Offer) {
	sort.Slice(offers, func(i, j int) bool { return offers[i].P.Name() < offers[j].P.Name() })
}

// document assembles the aggregated OpenTool 1.1.0 document of the
// host's own functions own and every served function, with $refs inlined
// and server.url set to baseURL.
func (t *routeTable) document(title, version, baseURL string, own []*opentool.Function) *opentool.OpenTool {
	doc := &opentool.OpenTool{
		OpenTool: opentool.Version,
		Info: opentool.Info{
			Title:       title,
			Version:     version,
			Description: "Functions of every plugin served by this opentool-host.",
		},
		Functions: make([]opentool.Function, 0, len(own)+len(t.order)),
	}
	if baseURL != "" {
		doc.Server = &opentool.Server{URL: baseURL, Description: "opentool-host"}
	}
	for _, f := range own {
		doc.Functions = append(doc.Functions, *f)
	}
	for _, r := range t.order {
		doc.Functions = append(doc.Functions, *r.fn)
	}
	if len(t.schemas) > 0 {
		doc.Schemas = t.schemas
	}
	return doc
}
