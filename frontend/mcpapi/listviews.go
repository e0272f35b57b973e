package mcpapi

import (
	"context"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/opentool-host/opentool-host/frontend/keyview"
	"github.com/opentool-host/opentool-host/host"
	"github.com/opentool-host/opentool-host/host/access"
	"github.com/opentool-host/opentool-host/protocol/mcpmethod"
)

// A list_changed per API key. The SDK sends notifications/tools,
// resources and prompts/list_changed to every session that listens (a
// session's GET stream, stdio, a subscriptions/listen stream of
// 2026-07-28) a moment after a list changed (debounced), naming nothing.
// A session whose key may not see what changed must not get it: it
// would learn that a plugin it cannot see exists and changed. So every
// change the SDK is told of (sync, syncCatalog, listChanged: all under
// s.mu) is marked, under s.mu, as due to the sessions whose key may see
// its cause:
//
//	list                   a session's key may see the change when
//	tools/list_changed     it may call one of the tools added, replaced or
//	                       removed (keyview.GrantMayCall; a declared MCP
//	                       server's own: one of that server's tools)
//	resources/list_changed it may see the whole plugin of one of the items
//	prompts/list_changed   (access.Grant.AllowsPlugin, as the lists filter)
//
// sendFilter passes a list_changed to a session of a restricted key
// (access.Grant.Restricted) only when one is due to it, once (take);
// it waits for s.mu first, so that a change is marked before its
// notification is sent. Sessions of keys that see everything, and
// sessions without keys (stdio, authentication off), get every one.
// The sessions of restricted keys are noted at their initialize (a
// session with an Mcp-Session-Id, forgotten when it ends) and at a
// subscriptions/listen (forgotten when the listen ends).

// The list_changed notifications the SDK sends (MCP 2025-11-25).
const (
	methodToolsChanged     = mcpmethod.ToolsListChanged
	methodResourcesChanged = mcpmethod.ResourcesListChanged
	methodPromptsChanged   = mcpmethod.PromptsListChanged
)

// methodListen is the request of a 2026-07-28 client that opens a stream
// of the notifications it names (SEP-2575).
const methodListen = mcpmethod.SubscriptionsListen

// listViews are the sessions of restricted keys that may be sent a
// list_changed, with the notifications due to each.
type listViews struct {
	mu     sync.Mutex
	grants map[*mcp.ServerSession]*access.Grant
	due    map[*mcp.ServerSession]map[string]bool // session → list_changed methods due
}

// noteListener records, for the request of method on ss with grant g,
// the session's key when it is restricted and the request opens what
// list_changed is sent on: an initialize of a session with an id (until
// the session ends), a subscriptions/listen (until end is called).
func (v *listViews) noteListener(ss *mcp.ServerSession, method string, g *access.Grant) (end func()) {
	end = func() {}
	if ss == nil || !g.Restricted() {
		return end
	}
	switch {
	case method == methodListen:
		end = func() { v.forget(ss) }
	case method == mcpmethod.Initialize && ss.ID() != "":
		go func() { _ = ss.Wait(); v.forget(ss) }()
	default:
		return end
	}
	v.mu.Lock()
	defer v.mu.Unlock()
	if v.grants == nil {
		v.grants = map[*mcp.ServerSession]*access.Grant{}
		v.due = map[*mcp.ServerSession]map[string]bool{}
	}
	v.grants[ss] = g
	return end
}

// forget drops ss.
func (v *listViews) forget(ss *mcp.ServerSession) {
	v.mu.Lock()
	defer v.mu.Unlock()
	delete(v.grants, ss)
	delete(v.due, ss)
}

// mark makes method due to every noted session whose key sees (by
// sees) the change behind it. Callers hold s.mu (see above).
func (v *listViews) mark(method string, sees func(*access.Grant) bool) {
	v.mu.Lock()
	defer v.mu.Unlock()
	seen := map[*access.Grant]bool{}
	for ss, g := range v.grants {
		ok, known := seen[g]
		if !known {
			ok = sees(g)
			seen[g] = ok
		}
		if !ok {
			continue
		}
		if v.due[ss] == nil {
			v.due[ss] = map[string]bool{}
		}
		v.due[ss][method] = true
	}
}

// take reports whether list_changed method may be sent to ss: always
// for a session not noted (its key sees everything, or there are no
// keys), else when one is due to it, which it uses up.
func (v *listViews) take(ss *mcp.ServerSession, method string) bool {
	v.mu.Lock()
	defer v.mu.Unlock()
	if _, noted := v.grants[ss]; !noted {
		return true
	}
	if !v.due[ss][method] {
		return false
	}
	delete(v.due[ss], method)
	return true
}

// isListChanged reports whether method is a list_changed the SDK sends.
func isListChanged(method string) bool {
	return method == methodToolsChanged || method == methodResourcesChanged || method == methodPromptsChanged
}

// listChangedFor reports whether the list_changed method may go to ss
// (sendFilter): once a change under way is marked (s.mu), take.
func (s *Server) listChangedFor(ss *mcp.ServerSession, method string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.views.take(ss, method)
}

// listCauses are the causes of the list changes of one sync (or one
// listChanged), for listViews.mark. Callers hold s.mu.
type listCauses struct {
	tools   []host.FunctionInfo        // tools added, replaced or removed
	plugins map[string]map[string]bool // list_changed method → plugins of the items changed
}

// tool notes a change of fi's tool.
func (c *listCauses) tool(fi host.FunctionInfo) { c.tools = append(c.tools, fi) }

// item notes a change of an item of plugin in the catalog list of kind
// (kindResource, kindTemplate, kindPrompt).
func (c *listCauses) item(kind, plugin string) {
	method := methodResourcesChanged
	if kind == kindPrompt {
		method = methodPromptsChanged
	}
	if c.plugins == nil {
		c.plugins = map[string]map[string]bool{}
	}
	if c.plugins[method] == nil {
		c.plugins[method] = map[string]bool{}
	}
	c.plugins[method][plugin] = true
}

// markTo marks the changes noted in c as due to the sessions whose key
// sees one of their causes. Callers hold s.mu.
func (c *listCauses) markTo(v *listViews) {
	if len(c.tools) > 0 {
		tools := c.tools
		v.mark(methodToolsChanged, func(g *access.Grant) bool {
			for _, fi := range tools {
				if keyview.GrantMayCall(g, fi) {
					return true
				}
			}
			return false
		})
	}
	for method, plugins := range c.plugins {
		v.mark(method, func(g *access.Grant) bool {
			for p := range plugins {
				if g.AllowsPlugin(p) {
					return true
				}
			}
			return false
		})
	}
}

// pluginTools notes a change of every tool of plugin that s serves (a
// declared MCP server's own tools/list_changed). Callers hold s.mu.
func (s *Server) pluginTools(c *listCauses, plugin string) {
	for _, fi := range *s.served.Load() {
		if fi.Plugin == plugin {
			c.tool(fi)
		}
	}
}

// withListener is next with the session of a request that opens a
// listen stream noted (noteListener) for as long as it lasts.
func (s *Server) withListener(ctx context.Context, next mcp.MethodHandler, method string, req mcp.Request, g *access.Grant) (mcp.Result, error) {
	ss, _ := req.GetSession().(*mcp.ServerSession)
	end := s.views.noteListener(ss, method, g)
	defer end()
	return next(ctx, method, req)
}
