package mcpapi

import (
	"context"
	"encoding/json"
	"errors"
	"net/url"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/opentool-host/opentool-host/frontend/mcpapi/overlay"
	"github.com/opentool-host/opentool-host/host"
	"github.com/opentool-host/opentool-host/host/access"
	"github.com/opentool-host/opentool-host/host/core"
	"github.com/opentool-host/opentool-host/protocol/mcpmethod"
)

// The MCP catalogs of the plugins (plugin protocol 3: an MCP server
// behind the host, or a plugin that serves resources and prompts) are
// served beside the tools, as the host aggregates them
// (host.Host.Resources, ResourceTemplates, Prompts):
//
//	MCP (2025-11-25 "Server Features")   opentool-host
//	resources/list,                      every plugin's, kept in step with the
//	resources/templates/list,            host like the tools (sync): the SDK
//	prompts/list                         sends notifications/resources/
//	                                     list_changed and prompts/list_changed
//	                                     when they change; per API key, the items
//	                                     of the plugins the key may see whole
//	                                     (access.AllowedPlugin: "*" or
//	                                     "plugin:GLOB")
//	resources/read, prompts/get,         host.Host.Request, routed to the plugin
//	completion/complete                  that serves the URI (or a template
//	                                     matching it), the prompt, the ref; its
//	                                     result or JSON-RPC error as it is
//	resources/subscribe,                 per client session (package subscriptions):
//	resources/unsubscribe                to the client's own session with a
//	                                     declared MCP server, else to the serving
//	                                     plugin, whose notifications/resources/
//	                                     updated go to the sessions subscribed
//	                                     through it; a session's end unsubscribes
//
// An unknown (or not allowed) resource is MCP's "Resource not found"
// (mcp.ResourceNotFoundError: code mcp.CodeResourceNotFound, data
// {"uri"}), as the SDK's own servers answer; an unknown prompt or
// completion ref -32602.

// catalogState is what sync keeps of the served catalog items.
type catalogState struct {
	served map[string]string // kind + "\x00" + key → fingerprint
}

// Catalog kinds, as keys of catalogState.
const (
	kindResource = "r"
	kindTemplate = "t"
	kindPrompt   = "p"
)

// syncCatalog brings the SDK server's resources, templates and prompts
// in line with the host's and returns how many it added, replaced or
// removed, each noted in causes. Callers hold s.mu.
func (s *Server) syncCatalog(causes *listCauses) int {
	n := 0
	prev := map[string]host.CatalogItem{}
	if p := s.catItems.Load(); p != nil {
		prev = *p
	}
	seen := map[string]bool{}
	items := map[string]host.CatalogItem{}
	add := func(kind string, it host.CatalogItem, register func(host.CatalogItem) bool) {
		k := kind + "\x00" + it.Key
		seen[k] = true
		items[k] = it
		if s.cat.served[k] == string(it.JSON) {
			return
		}
		if !register(it) {
			delete(seen, k)
			delete(items, k)
			return
		}
		s.cat.served[k] = string(it.JSON)
		causes.item(kind, it.Plugin)
		n++
	}
	for _, it := range s.h.Resources() {
		add(kindResource, it, s.serveResource)
	}
	for _, it := range s.h.ResourceTemplates() {
		add(kindTemplate, it, s.serveTemplate)
	}
	for _, it := range s.h.Prompts() {
		add(kindPrompt, it, s.servePrompt)
	}
	gone := map[string][]string{}
	for k := range s.cat.served {
		if !seen[k] {
			kind, key := k[:1], k[2:]
			gone[kind] = append(gone[kind], key)
			causes.item(kind, prev[k].Plugin)
			delete(s.cat.served, k)
			n++
		}
	}
	if len(gone[kindResource]) > 0 {
		s.srv.RemoveResources(gone[kindResource]...)
	}
	if len(gone[kindTemplate]) > 0 {
		s.srv.RemoveResourceTemplates(gone[kindTemplate]...)
	}
	if len(gone[kindPrompt]) > 0 {
		s.srv.RemovePrompts(gone[kindPrompt]...)
	}
	s.catItems.Store(&items)
	return n
}

// serveResource serves it, a resource, with the SDK (which then sends
// notifications/resources/list_changed); false (logged) when it does not
// decode or its URI is not absolute. Callers hold s.mu.
func (s *Server) serveResource(it host.CatalogItem) bool {
	r, ok := decodeItem(s, it, "resource", func(r *mcp.Resource) string { return r.URI })
	if !ok {
		return false
	}
	if u, err := url.Parse(r.URI); err != nil || u.Scheme == "" {
		s.catalogFault(it, "its URI is not an absolute URI", err)
		return false
	}
	s.srv.AddResource(r, s.readResource)
	return true
}

// serveTemplate serves it, a resource template, as serveResource.
func (s *Server) serveTemplate(it host.CatalogItem) bool {
	t, ok := decodeItem(s, it, "resource template", func(t *mcp.ResourceTemplate) string { return t.URITemplate })
	if ok {
		s.srv.AddResourceTemplate(t, s.readResource) // host.buildCatalog keeps only valid templates
	}
	return ok
}

// servePrompt serves it, a prompt, as serveResource (the SDK then sends
// notifications/prompts/list_changed).
func (s *Server) servePrompt(it host.CatalogItem) bool {
	p, ok := decodeItem(s, it, "prompt", func(p *mcp.Prompt) string { return p.Name })
	if ok {
		s.srv.AddPrompt(p, s.getPrompt)
	}
	return ok
}

// decodeItem decodes it, a catalog item of kind what, whose key (key of
// the decoded item) must be it.Key; false (logged) when it is not.
func decodeItem[T any](s *Server, it host.CatalogItem, what string, key func(*T) string) (*T, bool) {
	v := new(T)
	if err := json.Unmarshal(it.JSON, v); err != nil || key(v) != it.Key {
		s.catalogFault(it, "the "+what+" does not decode", err)
		return nil, false
	}
	return v, true
}

// catalogFault logs, once per item, why it is not served.
func (s *Server) catalogFault(it host.CatalogItem, why string, err error) {
	k := "catalog\x00" + it.Key
	msg := why
	if err != nil {
		msg += ": " + err.Error()
	}
	if s.bad[k] != msg {
		s.bad[k] = msg
		s.cfg.Logger.Error("MCP catalog item not served: "+why, "plugin", it.Plugin, "key", it.Key, "error", err)
	}
}

// readResource is the resources/read handler of every served resource
// and template: the host routes it to the serving plugin.
func (s *Server) readResource(ctx context.Context, req *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
	var res mcp.ReadResourceResult
	if err := s.route(ctx, s.catalogClient(req.Session), mcpmethod.ResourcesRead, req.Params.URI, req.Params, &res); err != nil {
		return nil, err
	}
	return &res, nil
}

// getPrompt is the prompts/get handler of every served prompt.
// A plugin's round is served as a tool's (rounds.Layer.Prompt).
func (s *Server) getPrompt(ctx context.Context, req *mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
	return s.rounds.Prompt(ctx, req, func(p *mcp.GetPromptParams) (*mcp.GetPromptResult, error) {
		var res mcp.GetPromptResult
		if err := s.route(ctx, s.catalogClient(req.Session), mcpmethod.PromptsGet, "", p, &res); err != nil {
			return nil, err
		}
		return &res, nil
	})
}

// complete is the completion/complete handler (MCP "Utilities:
// Completion"): the plugin that serves the ref completes.
func (s *Server) complete(ctx context.Context, req *mcp.CompleteRequest) (*mcp.CompleteResult, error) {
	var res mcp.CompleteResult
	if err := s.route(ctx, s.catalogClient(req.Session), mcpmethod.CompletionComplete, "", req.Params, &res); err != nil {
		return nil, err
	}
	return &res, nil
}

// catalogClient is the core.Exchange of a catalog request on session ss
// (host.Host.Request's x): it carries its client's mcpsession.Session and, for a client
// of 2026-07-28, its mcpsession.Request (clientOf), so that a declared MCP server with a session of that
// client's own answers it there (mcpadapter, catalogSession). The
// client's own tools/list (clientDefs, clientview.Views.View) is asked with it too:
// a client session's, or for a client of 2026-07-28 that of a client with
// its request's identity.
func (s *Server) catalogClient(ss *mcp.ServerSession) *core.Exchange {
	return s.clientOf(ss, true).exchange()
}

// route sends method with params (naming resource uri, or "") for the
// client of x (nil: none) through host.Host.Request and decodes the result into out; errors are the
// JSON-RPC errors the client gets (catalogError).
func (s *Server) route(ctx context.Context, x *core.Exchange, method, uri string, params any, out any) error {
	b, err := json.Marshal(params)
	if err != nil {
		return &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: err.Error()}
	}
	res, err := s.h.Request(ctx, x, method, b)
	if err != nil {
		return s.catalogError(method, uri, err)
	}
	if err := json.Unmarshal(res, out); err != nil {
		return &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: method + ": the plugin's result does not decode: " + err.Error()}
	}
	overlay.Note(ctx, res)
	return nil
}

// catalogError translates the host's error of a catalog request: not
// found is MCP's "Resource not found" for resources (MCP "Resources",
// Error Handling; mcp.ResourceNotFoundError) and -32602 otherwise; the plugin's own
// JSON-RPC error as it is; any other failure -32603 with the host's
// message.
func (s *Server) catalogError(method, uri string, err error) error {
	e := core.AsError(err)
	switch {
	case e == nil:
		return &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: err.Error()}
	case e.Kind == core.KindNotFound:
		if uri != "" {
			return mcp.ResourceNotFoundError(uri)
		}
		return &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: e.Message}
	case e.Kind == core.KindTool:
		je := &jsonrpc.Error{Code: int64(e.Code), Message: e.Message}
		var re *host.RPCError
		if errors.As(e.Err, &re) {
			je.Data = re.Data
		}
		return je
	case e.Kind == core.KindInvalidParams:
		return &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: e.Message}
	}
	s.cfg.Logger.Warn("MCP catalog request failed", "method", method, "kind", e.Kind, "error", e, "cause", e.Err)
	return &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: e.Error()}
}

// filterCatalog keeps in a list result the items of the plugins g may
// see whole, and marks the list private to the key.
func (s *Server) filterCatalog(g *access.Grant, res mcp.Result) {
	items := *s.catItems.Load()
	allowed := func(kind, key string) bool { return g.AllowsPlugin(items[kind+"\x00"+key].Plugin) }
	switch lr := res.(type) {
	case *mcp.ListResourcesResult:
		lr.CacheScope = "private"
		if g.Restricted() {
			lr.Resources = keep(lr.Resources, func(r *mcp.Resource) bool { return allowed(kindResource, r.URI) })
		}
	case *mcp.ListResourceTemplatesResult:
		lr.CacheScope = "private"
		if g.Restricted() {
			lr.ResourceTemplates = keep(lr.ResourceTemplates, func(t *mcp.ResourceTemplate) bool { return allowed(kindTemplate, t.URITemplate) })
		}
	case *mcp.ListPromptsResult:
		lr.CacheScope = "private"
		if g.Restricted() {
			lr.Prompts = keep(lr.Prompts, func(p *mcp.Prompt) bool { return allowed(kindPrompt, p.Name) })
		}
	}
}

// catalogList returns res, a page of resources/list,
// resources/templates/list or prompts/list already filtered for the
// caller, with its items as their plugins wrote them (host.CatalogItem:
// an MCP server's own, members no SDK type holds included; a prompt
// renamed when served prefixed), every other member as the SDK writes
// it; as the SDK has it when an item is no longer the host's.
func (s *Server) catalogList(res mcp.Result) mcp.Result {
	items := *s.catItems.Load()
	var member, kind string
	var keys []string
	switch lr := res.(type) {
	case *mcp.ListResourcesResult:
		member, kind = "resources", kindResource
		for _, r := range lr.Resources {
			keys = append(keys, r.URI)
		}
	case *mcp.ListResourceTemplatesResult:
		member, kind = "resourceTemplates", kindTemplate
		for _, t := range lr.ResourceTemplates {
			keys = append(keys, t.URITemplate)
		}
	case *mcp.ListPromptsResult:
		member, kind = "prompts", kindPrompt
		for _, p := range lr.Prompts {
			keys = append(keys, p.Name)
		}
	default:
		return res
	}
	out := make([]json.RawMessage, len(keys))
	for i, k := range keys {
		it, ok := items[kind+"\x00"+k]
		if !ok {
			return res // changed under the SDK: its own listing
		}
		out[i] = it.JSON
	}
	list, _ := json.Marshal(out) // raw JSON: encodes
	return overlay.With(res, overlay.Members{member: list})
}

// keep returns the items of xs for which ok holds.
func keep[T any](xs []T, ok func(T) bool) []T {
	out := make([]T, 0, len(xs))
	for _, x := range xs {
		if ok(x) {
			out = append(out, x)
		}
	}
	return out
}
