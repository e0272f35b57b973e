package host

// MCP catalogs (plugin protocol 3): the resources, resource templates and
// prompts plugins serve beside their functions, aggregated like functions
// (routes.go) for the MCP front end, and the MCP requests on them
// (resources/read, resources/subscribe, resources/unsubscribe,
// prompts/get, completion/complete) routed to the plugin that owns what
// they name.
//
// Ownership follows the functions' rules: the owner of a key (a resource
// URI, a URI template, a prompt name) keeps it across rebuilds while it
// offers it; free keys are claimed in plugin-name order. A duplicate
// prompt name is refused, or with Config.PrefixCollisions served as
// "PLUGIN__NAME" (its requests reach the plugin under its own name); a
// duplicate URI or URI template is refused (a URI names one thing and
// cannot be renamed). Refusals are logged once at ERROR.
//
// Access: what a plugin serves beyond its functions is for the API keys
// that may see the whole plugin (access.AllowedPlugin: "*" or
// "plugin:GLOB"); for every other key it does not exist (not found, and
// not listed by the front end).

import (
	"context"
	"encoding/json"
	"fmt"
	"regexp"

	"github.com/yosida95/uritemplate/v3"

	"github.com/opentool-host/opentool-host/host/access"
	"github.com/opentool-host/opentool-host/host/core"
	"github.com/opentool-host/opentool-host/host/supervise"
	"github.com/opentool-host/opentool-host/protocol/mcpmethod"
)

// catRoute is one served catalog item.
type catRoute struct {
	plugin *supervise.Plugin
	kind   string
	key    string             // as served: URI, URI template, prompt name (maybe "PLUGIN__NAME")
	target string             // the plugin's own key
	raw    json.RawMessage    // as served (a prefixed prompt renamed)
	re     *regexp.Regexp     // templates: what URIs it matches
	cat    *supervise.Catalog // the plugin's catalog (completions, subscribe)
}

// catalogTable is the served catalog items of every plugin. Immutable
// once built.
type catalogTable struct {
	byKey map[string]*catRoute // kind + "\x00" + served key
	order map[string][]*catRoute
	// conflicts lists the refused and prefixed duplicates, for the log.
	conflicts []catConflict
}

// catConflict is one duplicate catalog key.
type catConflict struct {
	kind, key, owner, plugin, servedAs string
}

// catKey is the claims and byKey key of kind's key.
func catKey(kind, key string) string { return kind + "\x00" + key }

// buildCatalog builds the table from offers (sorted by plugin name) and
// the claims (catKey → owner, kept across rebuilds): the owners keep
// what they still offer, free keys go to the first plugin offering them.
func buildCatalog(offers []supervise.Offer, claims map[string]*supervise.Plugin, prefix bool) *catalogTable {
	t := &catalogTable{byKey: map[string]*catRoute{}, order: map[string][]*catRoute{}}
	serving := func(o supervise.Offer) bool {
		return o.Cat != nil && (o.State == core.StateStarting || o.State == core.StateReady || o.State == core.StateRestarting)
	}
	offered := map[string]map[*supervise.Plugin]bool{}
	for _, o := range offers {
		if !serving(o) {
			continue
		}
		for _, kind := range []string{supervise.CatResource, supervise.CatTemplate, supervise.CatPrompt} {
			for _, it := range o.Cat.Items(kind) {
				k := catKey(kind, it.Key)
				if offered[k] == nil {
					offered[k] = map[*supervise.Plugin]bool{}
				}
				offered[k][o.P] = true
			}
		}
	}
	for k, owner := range claims {
		if !offered[k][owner] {
			delete(claims, k)
		}
	}
	for _, o := range offers {
		if !serving(o) {
			continue
		}
		for _, kind := range []string{supervise.CatResource, supervise.CatTemplate, supervise.CatPrompt} {
			for _, it := range o.Cat.Items(kind) {
				t.add(o, kind, it, claims, prefix)
			}
		}
	}
	return t
}

// add serves it of o unless another plugin owns its key (then, for a
// prompt with prefix, under "PLUGIN__NAME").
func (t *catalogTable) add(o supervise.Offer, kind string, it supervise.CatItem, claims map[string]*supervise.Plugin, prefix bool) {
	k := catKey(kind, it.Key)
	if claims[k] == nil {
		claims[k] = o.P
	}
	key, raw := it.Key, it.Raw
	if owner := claims[k]; owner != o.P {
		c := catConflict{kind: kind, key: it.Key, owner: owner.Name(), plugin: o.P.Name()}
		if prefix && kind == supervise.CatPrompt {
			key = o.P.Name() + prefixSep + it.Key
			if pk := catKey(kind, key); claims[pk] == nil || claims[pk] == o.P {
				claims[pk] = o.P
				c.servedAs = key
				raw = renamed(raw, "name", key)
			} else {
				key = ""
			}
		} else {
			key = ""
		}
		t.conflicts = append(t.conflicts, c)
		if key == "" {
			return
		}
	}
	if _, dup := t.byKey[catKey(kind, key)]; dup {
		return // the plugin lists the same key twice: the first counts
	}
	r := &catRoute{plugin: o.P, kind: kind, key: key, target: it.Key, raw: raw, cat: o.Cat}
	if kind == supervise.CatTemplate {
		tmpl, err := uritemplate.New(it.Key)
		if err != nil {
			return // a template no URI can match
		}
		r.re = tmpl.Regexp()
	}
	t.byKey[catKey(kind, key)] = r
	t.order[kind] = append(t.order[kind], r)
}

// renamed returns object raw with member m set to the string v.
func renamed(raw json.RawMessage, m, v string) json.RawMessage {
	var obj map[string]json.RawMessage
	if json.Unmarshal(raw, &obj) != nil {
		return raw
	}
	obj[m], _ = json.Marshal(v)
	b, err := json.Marshal(obj)
	if err != nil {
		return raw
	}
	return b
}

// resource returns the route of the resource at uri, or of the first
// template (in plugin order) that matches it; nil when none does.
func (t *catalogTable) resource(uri string) *catRoute {
	if r := t.byKey[catKey(supervise.CatResource, uri)]; r != nil {
		return r
	}
	for _, r := range t.order[supervise.CatTemplate] {
		if r.re.MatchString(uri) {
			return r
		}
	}
	return nil
}

// logCatalogConflicts logs each new catalog conflict of t once while it
// lasts. Callers hold h.routeMu.
func (h *Host) logCatalogConflicts(t *catalogTable) {
	now := map[catConflict]bool{}
	for _, c := range t.conflicts {
		now[c] = true
		if h.catLogged[c] {
			continue
		}
		if c.servedAs == "" {
			h.log.Error("MCP "+c.kind+" conflict: another plugin owns it; duplicate refused", c.kind, c.key, "owner", c.owner, "refused", c.plugin)
		} else {
			h.log.Warn("MCP "+c.kind+" conflict: another plugin owns it; duplicate served prefixed", c.kind, c.key, "owner", c.owner, "plugin", c.plugin, "served_as", c.servedAs)
		}
	}
	h.catLogged = now
}

// CatalogItem is one resource, resource template or prompt a plugin
// serves (plugin protocol 3).
type CatalogItem struct {
	// Plugin is the serving plugin's name.
	Plugin string
	// Key is what the item is served as: the resource's URI, the
	// template's URI template, or the prompt's name ("PLUGIN__NAME" for a
	// duplicate served prefixed).
	Key string
	// JSON is the item as MCP 2025-11-25 defines it (Resource,
	// ResourceTemplate, Prompt), with its name as served.
	JSON json.RawMessage
}

// CatalogSupport says what a plugin answers beyond its catalog's lists.
type CatalogSupport struct {
	// Completions: it answers completion/complete.
	Completions bool
	// Subscribe: it takes resources/subscribe and reports updates.
	Subscribe bool
}

// catalogItems lists the served items of kind, in plugin-name order.
func (h *Host) catalogItems(kind string) []CatalogItem {
	rs := h.routes.Load().cat.order[kind]
	out := make([]CatalogItem, 0, len(rs))
	for _, r := range rs {
		out = append(out, CatalogItem{Plugin: r.plugin.Name(), Key: r.key, JSON: r.raw})
	}
	return out
}

// Resources lists the resources every plugin serves (plugin protocol 3),
// in plugin-name order. Filter them per key with access.AllowedPlugin.
func (h *Host) Resources() []CatalogItem { return h.catalogItems(supervise.CatResource) }

// ResourceTemplates lists the resource templates every plugin serves.
func (h *Host) ResourceTemplates() []CatalogItem { return h.catalogItems(supervise.CatTemplate) }

// Prompts lists the prompts every plugin serves.
func (h *Host) Prompts() []CatalogItem { return h.catalogItems(supervise.CatPrompt) }

// CatalogSupport reports what the served catalogs support together: a
// plugin that completes, a plugin that takes subscriptions.
func (h *Host) CatalogSupport() CatalogSupport {
	var s CatalogSupport
	for _, rs := range h.routes.Load().cat.order {
		for _, r := range rs {
			s.Completions = s.Completions || r.cat.Completions
			s.Subscribe = s.Subscribe || r.cat.Subscribe
		}
	}
	return s
}

// OnResourceUpdated registers f, called with a resource's URI each time
// the plugin serving it reports that its content changed (after a
// resources/subscribe; MCP "Resources", Subscriptions). f must not block.
func (h *Host) OnResourceUpdated(f func(uri string)) {
	h.updMu.Lock()
	h.onUpdated = append(h.onUpdated, f)
	h.updMu.Unlock()
}

// resourceUpdated tells the registered functions that uri, which plugin
// serves, changed; updates of resources the plugin does not serve are
// dropped.
func (h *Host) resourceUpdated(plugin, uri string) {
	if r := h.routes.Load().cat.resource(uri); r == nil || r.plugin.Name() != plugin {
		return
	}
	h.updMu.Lock()
	fs := append([]func(string){}, h.onUpdated...)
	h.updMu.Unlock()
	for _, f := range fs {
		f(uri)
	}
}

// OnLogMessage registers f, called with a plugin's name and the params of
// each notifications/message it sends outside any call (a declared MCP
// server's log; MCP "Server Utilities: Logging"), for the clients that
// asked for log messages and may see the plugin. f must not block.
func (h *Host) OnLogMessage(f func(plugin string, params json.RawMessage)) {
	h.updMu.Lock()
	h.onLog = append(h.onLog, f)
	h.updMu.Unlock()
}

// logMessage hands plugin's log message to the registered functions.
func (h *Host) logMessage(plugin string, params json.RawMessage) {
	h.updMu.Lock()
	fs := append([]func(string, json.RawMessage){}, h.onLog...)
	h.updMu.Unlock()
	for _, f := range fs {
		f(plugin, params)
	}
}

// OnListChanged registers f, called with a plugin's name and a list
// ("tools", "prompts", "resources": pluginsdk.ListTools, ListPrompts,
// ListResources) each time the plugin's MCP server (a declared one's)
// sends notifications/tools/list_changed, prompts/list_changed or
// resources/list_changed, on any of its sessions, after the plugin
// listed it again: for the MCP clients that may see the plugin, as the
// server sent it, whether or not what the host serves changed. f must
// not block.
func (h *Host) OnListChanged(f func(plugin, list string)) {
	h.updMu.Lock()
	h.onList = append(h.onList, f)
	h.updMu.Unlock()
}

// listChanged hands plugin's changed list to the registered functions.
func (h *Host) listChanged(plugin, list string) {
	h.updMu.Lock()
	fs := append([]func(string, string){}, h.onList...)
	h.updMu.Unlock()
	for _, f := range fs {
		f(plugin, list)
	}
}

// Request sends MCP request method (resources/read, resources/subscribe,
// resources/unsubscribe, prompts/get, completion/complete; MCP
// 2025-11-25 "Server Features") with params (a JSON object) to the
// plugin that owns what params name, and returns its result (JSON):
// params.uri (a resource, or a URI a template matches), params.name (a
// prompt; a prefixed one reaches the plugin under its own name),
// params.ref (completion: ref/prompt by name, ref/resource by URI or URI
// template). The call is bounded by Config.CallTimeout.
//
// Errors: an *Error of KindNotFound when nothing served (to the caller's
// API key: access.AllowedPlugin) matches, or of KindTool with the
// plugin's JSON-RPC error (Code and Message; Err is the *RPCError, with
// its data); KindFailed, KindStopped, KindExited, KindTransport,
// KindTimeout, KindCanceled as for a call.
//
// x is the caller's MCP client (core.Exchange: Session, Sessionless, and
// the mark of a request served on the client's own upstream session;
// nil for none), which a declared MCP server in the host's process
// answers for.
func (h *Host) Request(ctx context.Context, x *core.Exchange, method string, params []byte) ([]byte, error) {
	t := h.routes.Load().cat
	var p struct {
		URI  string `json:"uri"`
		Name string `json:"name"`
		Ref  struct {
			Type string `json:"type"`
			Name string `json:"name"`
			URI  string `json:"uri"`
		} `json:"ref"`
	}
	if err := json.Unmarshal(params, &p); err != nil {
		return nil, &core.Error{Kind: core.KindInvalidParams, Message: method + ": params: " + err.Error(), Err: err}
	}
	var r *catRoute
	what := ""
	switch method {
	case mcpmethod.ResourcesRead, mcpmethod.ResourcesSubscribe, mcpmethod.ResourcesUnsubscribe:
		r, what = t.resource(p.URI), "resource "+p.URI
	case mcpmethod.PromptsGet:
		r, what = t.byKey[catKey(supervise.CatPrompt, p.Name)], "prompt "+p.Name
		if r != nil && r.key != r.target {
			params = renamed(params, "name", r.target)
		}
	case mcpmethod.CompletionComplete:
		switch p.Ref.Type {
		case "ref/prompt":
			r, what = t.byKey[catKey(supervise.CatPrompt, p.Ref.Name)], "prompt "+p.Ref.Name
			if r != nil && r.key != r.target {
				var obj map[string]json.RawMessage
				if json.Unmarshal(params, &obj) == nil {
					obj["ref"] = renamed(obj["ref"], "name", r.target)
					params, _ = json.Marshal(obj)
				}
			}
		case "ref/resource":
			r, what = t.byKey[catKey(supervise.CatTemplate, p.Ref.URI)], "resource "+p.Ref.URI
			if r == nil {
				r = t.byKey[catKey(supervise.CatResource, p.Ref.URI)]
			}
		}
	default:
		return nil, &core.Error{Kind: core.KindNotFound, Message: fmt.Sprintf("MCP method %q is not one the host routes to plugins", method)}
	}
	if r == nil || !access.AllowedPlugin(ctx, r.plugin.Name()) {
		return nil, &core.Error{Kind: core.KindNotFound, Message: fmt.Sprintf("%s: %s is not served", method, what)}
	}
	ctx, cancel := supervise.WithTimeout(ctx, h.cfg.CallTimeout)
	defer cancel()
	return r.plugin.Request(ctx, &request{fn: method + " " + what, x: x}, method, params)
}

// ClientTools sends tools/list to the plugin that serves function fn
// and returns its result: {"tools":[...]}, every page, each tool as the
// MCP server behind the plugin wrote it for the MCP client of x
// (core.Exchange's Session or Sessionless: the client's own upstream session, which a server may
// list other tools to, e.g. MCP Apps' UI tools to a client that declares
// io.modelcontextprotocol/ui). The call is bounded by
// Config.CallTimeout.
//
// Errors: an *Error of KindNotFound when fn is not served to ctx's API
// key; of KindTool with the plugin's JSON-RPC error, code -32601 when
// the plugin lists the same tools to every client (no client session in
// x, a server declared "sessions": "shared", not an MCP server);
// KindFailed, KindStopped, KindExited, KindTransport, KindTimeout,
// KindCanceled as for a call. The CallView on ctx (WithCallView) does
// not apply: a view is made of this list.
func (h *Host) ClientTools(ctx context.Context, x *core.Exchange, fn string) ([]byte, error) {
	r := &request{fn: fn, x: x}
	ctx = WithCallView(ctx, nil)
	rt, err := h.lookupIn(ctx, h.routes.Load(), r)
	if err != nil {
		return nil, err
	}
	ctx, cancel := supervise.WithTimeout(ctx, h.cfg.CallTimeout)
	defer cancel()
	return rt.plugin.Request(ctx, r, mcpmethod.ToolsList, nil)
}
