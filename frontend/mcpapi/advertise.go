package mcpapi

import (
	"context"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"
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
			s.trimCapabilities(r.Capabilities, withoutSession(req, s))
		case *mcp.DiscoverResult:
			s.trimCapabilities(r.Capabilities, false)
		}
		return res, err
	}
}

// trimCapabilities drops from caps (the SDK's copy for one result) what
// nothing served fills, once the plugins are settled, and, when
// unnotified, every listChanged and resources.subscribe.
func (s *Server) trimCapabilities(caps *mcp.ServerCapabilities, unnotified bool) {
	if caps == nil {
		return
	}
	if s.settled() {
		s.trimUnserved(caps)
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
// completions that nothing served now fills.
func (s *Server) trimUnserved(caps *mcp.ServerCapabilities) {
	prompts, resources := s.catalogKinds()
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
// any prompt, and any resource or resource template.
func (s *Server) catalogKinds() (prompts, resources bool) {
	p := s.catItems.Load()
	if p == nil {
		return false, false
	}
	for k := range *p {
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
