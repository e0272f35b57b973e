package mcpapi

import (
	"context"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/opentool-host/opentool-host/host/access"
)

// What the host offers a client in initialize and server/discover (MCP
// "Lifecycle", capability negotiation) is what the plugins and servers
// behind it serve now and what the front end in use can deliver
// (advertiseMiddleware):
//
//	prompts              only while some prompt is served
//	resources            only while some resource or resource template is
//	                      served; subscribe only while some plugin takes
//	                      resources/subscribe (host.CatalogSupport)
//	completions          only while some plugin answers completion/complete
//	listChanged,         not in the initialize result of a request without a
//	resources.subscribe  session (/mcp --mcp-stateless): its client cannot be
//	                      notified; a 2026-07-28 client is notified over
//	                      subscriptions/listen, so server/discover keeps them
//
// Until the plugins of the first start are up (Sync) and while one of
// them is starting or restarting, what is served is not known yet: the
// client is offered every capability the host has (ServerOptions'),
// listChanged trimmed as above. The SDK's ServerOptions.Capabilities stay
// that union, since subscriptions/listen agrees only to what they hold.

// advertiseMiddleware trims the capabilities of an initialize or
// server/discover result to what is true for its request.
func (s *Server) advertiseMiddleware(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		res, err := next(ctx, method, req)
		if err != nil {
			return res, err
		}
		switch r := res.(type) {
		case *mcp.InitializeResult:
			s.trimCapabilities(r.Capabilities, withoutSession(req, s), grantOf(req))
		case *mcp.DiscoverResult:
			s.trimCapabilities(r.Capabilities, false, grantOf(req))
		}
		return res, err
	}
}

// trimCapabilities drops from caps (the SDK's copy for one result) what
// nothing served to g (the request's API key; nil: all) fills, once the
// plugins are settled, and, when unnotified, every listChanged and
// resources.subscribe.
func (s *Server) trimCapabilities(caps *mcp.ServerCapabilities, unnotified bool, g *access.Grant) {
	if caps == nil {
		return
	}
	if s.settled() {
		s.trimUnserved(caps, g)
	}
	if !unnotified {
		return
	}
	if caps.Tools != nil {
		caps.Tools.ListChanged = false
	}
	if caps.Prompts != nil {
		caps.Prompts.ListChanged = false
	}
	if caps.Resources != nil {
		caps.Resources.ListChanged = false
		caps.Resources.Subscribe = false
	}
}

// trimUnserved drops from caps the prompts, resources (subscribe) and
// completions that nothing served now to g fills (prompts and resources:
// of the plugins g may see whole, as the lists show them; subscribe and
// completions: of any plugin).
func (s *Server) trimUnserved(caps *mcp.ServerCapabilities, g *access.Grant) {
	prompts, resources := s.catalogKinds(g)
	support := s.h.CatalogSupport()
	if !prompts {
		caps.Prompts = nil
	}
	if !resources {
		caps.Resources = nil
	}
	if caps.Resources != nil && !support.Subscribe {
		caps.Resources.Subscribe = false
	}
	if !support.Completions {
		caps.Completions = nil
	}
}

// settled reports whether what is served is known: Sync was called (the
// plugins of the first start are up) and no plugin is starting or
// restarting.
func (s *Server) settled() bool {
	if !s.started.Load() {
		return false
	}
	for _, p := range s.h.Plugins() {
		if !p.State.Settled() {
			return false
		}
	}
	return true
}

// catalogKinds reports whether the served catalog (syncCatalog) holds
// any prompt, and any resource or resource template, of a plugin g (nil:
// all) may see whole (filterCatalog's rule).
func (s *Server) catalogKinds(g *access.Grant) (prompts, resources bool) {
	p := s.catItems.Load()
	if p == nil {
		return false, false
	}
	for k, it := range *p {
		if !g.AllowsPlugin(it.Plugin) {
			continue
		}
		kind, _, _ := strings.Cut(k, "\x00")
		switch kind {
		case kindPrompt:
			prompts = true
		case kindResource, kindTemplate:
			resources = true
		}
	}
	return prompts, resources
}
