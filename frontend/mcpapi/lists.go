package mcpapi

import (
	"github.com/opentool-host/opentool-host/host"
	"github.com/opentool-host/opentool-host/internal/wire"
)

// A declared MCP server's own list_changed (host.Host.OnListChanged: on
// any of its sessions, after its plugin listed it again) is passed on as
// the server sent it, besides the host's own (Follow: what it serves
// changed):
//
//	the server sends                    the sessions of /mcp receive
//	notifications/tools/list_changed,   the same, once the host's lists are in
//	prompts/list_changed,               line (sync): every session of
//	resources/list_changed              2025-11-25 and older (GET stream, stdio),
//	                                    every subscriptions/listen stream of
//	                                    2026-07-28 that asked for that list
//
// The SDK sends a list's list_changed only when an item of it is added or
// removed, to every session that listens, debounced (10 ms: a change of
// sync and the re-served item are one notification); the host serves one
// of the server's items of that list again, as it is. A server that
// serves nothing of that list has nothing a client could list again.
// Like the host's own, the notification goes to every session whose key
// may see the server (listviews.go): it names no item, and each key's
// lists are filtered when listed (access.go).

// listChanged passes plugin's MCP server's list_changed of list
// (wire.ListTools, ListPrompts, ListResources) on to the sessions.
func (s *Server) listChanged(plugin, list string) {
	s.sync()
	s.mu.Lock()
	defer s.mu.Unlock()
	var causes listCauses // due to the sessions that see plugin (listviews.go)
	switch list {
	case wire.ListTools:
		s.clients.toolsChanged()
		if s.serveOneTool(plugin) {
			s.pluginTools(&causes, plugin)
		}
	case wire.ListPrompts:
		if s.serveOne(plugin, kindPrompt, s.h.Prompts(), s.servePrompt) {
			causes.item(kindPrompt, plugin)
		}
	case wire.ListResources:
		if s.serveOne(plugin, kindResource, s.h.Resources(), s.serveResource) ||
			s.serveOne(plugin, kindTemplate, s.h.ResourceTemplates(), s.serveTemplate) {
			causes.item(kindResource, plugin)
		}
	}
	causes.markTo(&s.views)
}

// serveOneTool serves one of plugin's served tools again; false when it
// serves none. Callers hold s.mu.
func (s *Server) serveOneTool(plugin string) bool {
	for _, fi := range s.h.Functions() {
		if fi.Plugin != plugin {
			continue
		}
		if _, served := s.tools[fi.Function.Name]; !served {
			continue
		}
		if t := s.tool(fi); t != nil && s.add(t) == nil {
			return true
		}
	}
	return false
}

// serveOne serves one of plugin's served items of kind (of items) again
// with serve; false when it serves none. Callers hold s.mu.
func (s *Server) serveOne(plugin, kind string, items []host.CatalogItem, serve func(host.CatalogItem) bool) bool {
	for _, it := range items {
		if it.Plugin == plugin && s.cat.served[kind+"\x00"+it.Key] == string(it.JSON) && serve(it) {
			return true
		}
	}
	return false
}
