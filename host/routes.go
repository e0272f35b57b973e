package host

import (
	"sort"

	"github.com/opentool-host/opentool-host/argcheck"
	"github.com/opentool-host/opentool-host/opentool"
)

// routeTable maps function names to the plugins that serve them. It is
// immutable once built; the Host swaps whole tables atomically so that the
// call path reads it without locks.
type routeTable struct {
	// funcs maps a served function name to its route.
	funcs map[string]*route
	// order lists the served routes in plugin-name, then document order.
	order []*route
	// failed maps the function names of failed plugins to the plugin,
	// so calls get the plugin's reason instead of "not found".
	failed map[string]*Plugin
	// schemas holds the served plugins' named schemas keyed "PLUGIN.Name".
	schemas map[string]*opentool.Schema
}

// route is one served function.
type route struct {
	plugin *Plugin
	fn     *opentool.Function // with $refs inlined (shared with the plugin's document)
	info   opentool.Info      // info of the plugin's document
	// args validates call arguments; nil when fn's parameters did not
	// compile (logged; the function is then served without validation).
	args *argcheck.Validator
}

// buildRoutes builds the table from plugins (sorted by name). Plugins that
// are failed, draining or stopped serve nothing. A function name declared
// by two plugins goes to the first by name; conflicts reports each
// dropped duplicate as [function, winner, loser].
func buildRoutes(plugins []*Plugin) (t *routeTable, conflicts [][3]string) {
	sort.Slice(plugins, func(i, j int) bool { return plugins[i].name < plugins[j].name })
	t = &routeTable{funcs: map[string]*route{}, failed: map[string]*Plugin{}, schemas: map[string]*opentool.Schema{}}
	for _, p := range plugins {
		p.mu.Lock()
		doc, args, st := p.doc, p.args, p.v.Load().state
		p.mu.Unlock()
		if doc == nil {
			continue
		}
		if st == StateFailed {
			for _, f := range doc.Functions {
				if _, ok := t.failed[f.Name]; !ok {
					t.failed[f.Name] = p
				}
			}
			continue
		}
		if st != StateReady && st != StateRestarting && st != StateStarting {
			continue
		}
		for i := range doc.Functions {
			f := &doc.Functions[i]
			if prev, ok := t.funcs[f.Name]; ok {
				conflicts = append(conflicts, [3]string{f.Name, prev.plugin.name, p.name})
				continue
			}
			r := &route{plugin: p, fn: f, info: doc.Info, args: args[i]}
			t.funcs[f.Name] = r
			t.order = append(t.order, r)
		}
		for k, s := range doc.Schemas {
			t.schemas[p.name+"."+k] = s
		}
	}
	for name := range t.funcs {
		delete(t.failed, name)
	}
	return t, conflicts
}

// document assembles the aggregated OpenTool 1.1.0 document of every
// served function, with $refs inlined and server.url set to baseURL.
func (t *routeTable) document(title, version, baseURL string) *opentool.OpenTool {
	doc := &opentool.OpenTool{
		OpenTool: opentool.Version,
		Info: opentool.Info{
			Title:       title,
			Version:     version,
			Description: "Functions of every plugin served by this opentool-host.",
		},
		Functions: make([]opentool.Function, 0, len(t.order)),
	}
	if baseURL != "" {
		doc.Server = &opentool.Server{URL: baseURL, Description: "opentool-host"}
	}
	for _, r := range t.order {
		doc.Functions = append(doc.Functions, *r.fn)
	}
	if len(t.schemas) > 0 {
		doc.Schemas = t.schemas
	}
	return doc
}
