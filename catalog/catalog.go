// Package catalog answers one question for every front end: what may the
// API key of this request see of the host? A View holds the answer for
// one request: the functions the key may call, the plugins serving one of
// them, and of each such plugin's status only what is the key's to see.
//
// A key that sees everything (a plain --api-key, "allow": ["*"], or no
// keys at all) sees every plugin whole, stderr included (the operator's
// view). A restricted key sees a plugin only when it may call one of its
// functions, only those functions, never a plugin's stderr, never the
// conflicts (which name other plugins), and only the lifecycle events of
// the plugins it sees, never a collision (which names the owner).
package catalog

import (
	"context"

	"github.com/opentool-host/opentool-host/access"
	"github.com/opentool-host/opentool-host/host"
)

// Source is what a View reads of the host. *host.Host implements it.
type Source interface {
	// Functions returns every served function with its plugin.
	Functions() []host.FunctionInfo
	// Plugins returns every plugin's status, sorted by name.
	Plugins() []host.PluginStatus
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
}

// Of returns the View of the request context ctx (its grant, put there
// by access.Guard; none means everything) over src.
func Of(ctx context.Context, src Source) View {
	v := View{grant: access.GrantFrom(ctx), src: src}
	if !v.grant.Restricted() {
		return v
	}
	v.callable = map[string][]string{}
	for _, f := range src.Functions() {
		if v.grant.Allows(f.Plugin, f.Function.Name) {
			v.callable[f.Plugin] = append(v.callable[f.Plugin], f.Function.Name)
		}
	}
	return v
}

// All reports whether the key sees everything (nothing to filter).
func (v View) All() bool { return v.callable == nil }

// Function reports whether the key may see and call function fn of
// plugin.
func (v View) Function(plugin, fn string) bool { return v.grant.Allows(plugin, fn) }

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
func (v View) Plugins() []host.PluginStatus {
	all := v.src.Plugins()
	if v.All() {
		return all
	}
	out := make([]host.PluginStatus, 0, len(v.callable))
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
func (v View) Status(p host.PluginStatus) host.PluginStatus {
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
func (v View) Event(e host.Event) bool {
	if v.All() {
		return true
	}
	return e.Type != host.EventCollision && v.Plugin(e.Plugin)
}
