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
//	prompts        only while some prompt is served
//	resources      only while some resource or resource template is served
//	completions    only while some prompt or resource template is served
//	                (completion/complete completes nothing else)
//	listChanged,   not in the initialize result of a request without a
//	subscribe      session (/mcp --mcp-stateless): its client cannot be
//	                notified; a 2026-07-28 client is notified over
//	                subscriptions/listen, so server/discover keeps them
//
// The SDK's ServerOptions.Capabilities stay the union, since
// subscriptions/listen agrees only to what they hold.

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
// nothing served fills and, when unnotified, every listChanged and
// resources.subscribe.
func (s *Server) trimCapabilities(caps *mcp.ServerCapabilities, unnotified bool) {
	if caps == nil {
		return
	}
	prompts, resources, templates := s.catalogKinds()
	if !prompts {
		caps.Prompts = nil
	}
	if !resources && !templates {
		caps.Resources = nil
	}
	if !prompts && !templates {
		caps.Completions = nil
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

// catalogKinds reports whether the served catalog (syncCatalog) holds
// any prompt, resource and resource template.
func (s *Server) catalogKinds() (prompts, resources, templates bool) {
	p := s.catItems.Load()
	if p == nil {
		return false, false, false
	}
	for k := range *p {
		kind, _, _ := strings.Cut(k, "\x00")
		switch kind {
		case kindPrompt:
			prompts = true
		case kindResource:
			resources = true
		case kindTemplate:
			templates = true
		}
	}
	return prompts, resources, templates
}
