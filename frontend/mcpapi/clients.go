package mcpapi

import (
	"context"
	"encoding/json"
	"github.com/opentool-host/opentool-host/frontend/mcpapi/clientview"
	"maps"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/opentool-host/opentool-host/host/access"
	"github.com/opentool-host/opentool-host/host/core"
	"github.com/opentool-host/opentool-host/internal/mcpsession"
)

// Each MCP session with an Mcp-Session-Id has one mcpsession.Session,
// made at its first tools/call, logging/setLevel, resources/subscribe,
// read, prompt or completion, and put on the context of each of those
// (clientOf, catalogClient): a declared MCP server gives
// that client an upstream session of its own (mcpadapter, sessions.go).
// The identity is the SDK's *mcp.ServerSession the request came on,
// never anything in the request. Stateless requests and sessions of
// 2026-07-28 clients without an id carry none (the shared session); a
// 2026-07-28 request carries its _meta identity instead
// (mcpsession.Request.Init), which chooses only the view of tools it is
// held to (package clientview).

// clientSessions maps each live SDK session to its clientSession.
type clientSessions struct {
	mu sync.Mutex
	by map[*mcp.ServerSession]*clientSession
}

// clientSession is what the front end keeps of one SDK session with an
// id while it lasts: its mcpsession.Session and its own lists of the MCP
// servers' tools (package clientview).
type clientSession struct {
	sess  *mcpsession.Session
	lists clientview.Lists
	// ending ends the requests to the client on its session outside
	// calls (mcpsession.Session.Ask) before the SDK closes the session,
	// which waits for them: end is called at DELETE and when its key is
	// revoked (endAsks).
	ending context.Context
	end    context.CancelFunc
}

// endAsks ends the requests to the client of session id outside calls
// (clientSession.ending) when grant g (nil: keys off) is the one that
// opened it, so that the SDK's close of it does not wait for them.
func (s *Server) endAsks(id string, g *access.Grant) {
	ss := s.session(id)
	s.clients.mu.Lock()
	defer s.clients.mu.Unlock()
	if cs := s.clients.by[ss]; cs != nil && cs.sess.Key == g.Name() {
		cs.end()
	}
}

// own makes ss's clientSession, opened by the caller of grant g (nil:
// keys off: mcpsession.Session.Key), once its initialize succeeded and
// before the client has its session id (accessMiddleware), so that every
// later request of ss finds it with its key.
func (s *Server) own(ss *mcp.ServerSession, g *access.Grant) {
	s.clientStateOf(ss, g)
}

// toolsChanged drops every session's own lists (clientview.Lists.Drop): an MCP
// server's tools/list_changed (lists.go) may change what a client was
// listed before it had an upstream session of its own.
func (c *clientSessions) toolsChanged() {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, cs := range c.by {
		cs.lists.Drop()
	}
}

// clientID is who the client of a request is to a declared MCP server
// served in the host's process, as the request's core.Exchange carries
// it (clientID.exchange): its session (nil: a request without a session
// id) and, for a client of 2026-07-28 or later, its request (nil for
// others).
type clientID struct {
	sess *mcpsession.Session
	req  *mcpsession.Request
}

// clientOf returns the clientID of a request on ss: its
// mcpsession.Session, and with sessionless its mcpsession.Request when
// its client speaks 2026-07-28 or later (sessionlessRequest).
func (s *Server) clientOf(ss *mcp.ServerSession, sessionless bool) clientID {
	id := clientID{sess: s.client(ss)}
	if sessionless {
		id.req = sessionlessRequest(ss)
	}
	return id
}

// exchange returns a new core.Exchange carrying id.
func (id clientID) exchange() *core.Exchange {
	return &core.Exchange{Session: id.sess, Sessionless: id.req}
}

// noteClientLevel records logging/setLevel req's level on its session's
// mcpsession.Session.
func (s *Server) noteClientLevel(req mcp.Request) {
	ss, _ := req.GetSession().(*mcp.ServerSession)
	p, _ := req.GetParams().(*mcp.SetLoggingLevelParams)
	if c := s.client(ss); c != nil && p != nil {
		c.SetLevel(p.Level)
	}
}

// client returns ss's mcpsession.Session, made on first use and
// forgotten when ss ends; nil for no session or one without an id.
func (s *Server) client(ss *mcp.ServerSession) *mcpsession.Session {
	if cs := s.clientState(ss); cs != nil {
		return cs.sess
	}
	return nil
}

// clientState returns ss's clientSession, made on first use (own makes
// it at initialize, with its key) and forgotten when ss ends; nil for no
// session or one without an id.
func (s *Server) clientState(ss *mcp.ServerSession) *clientSession {
	return s.clientStateOf(ss, nil)
}

// clientStateOf is clientState, a clientSession it makes being the one
// of key g's caller (nil: keys off).
func (s *Server) clientStateOf(ss *mcp.ServerSession, g *access.Grant) *clientSession {
	if ss == nil || ss.ID() == "" || ss.InitializeParams() == nil {
		return nil
	}
	s.clients.mu.Lock()
	defer s.clients.mu.Unlock()
	if cs := s.clients.by[ss]; cs != nil {
		return cs
	}
	if s.clients.by == nil {
		s.clients.by = map[*mcp.ServerSession]*clientSession{}
	}
	done := make(chan struct{})
	cs := &clientSession{}
	cs.ending, cs.end = context.WithCancel(context.Background())
	cs.sess = s.sessionFor(ss, g.Name(), done, cs.ending)
	cs.sess.ToolsChanged = cs.lists.Drop
	s.clients.by[ss] = cs
	go func() {
		_ = ss.Wait()
		s.clients.mu.Lock()
		delete(s.clients.by, ss)
		s.clients.mu.Unlock()
		cs.end()
		cs.lists.Drop()
		close(done)
	}()
	return cs
}

// sessionFor returns the mcpsession.Session of ss, opened by API key
// key ("" with keys off): Done is done, and its requests to the client
// outside calls (Ask) end when ending does.
func (s *Server) sessionFor(ss *mcp.ServerSession, key string, done <-chan struct{}, ending context.Context) *mcpsession.Session {
	keys := 0
	if s.cfg.KeyCount != nil {
		keys = s.cfg.KeyCount()
	}
	return &mcpsession.Session{
		ID:   ss.ID(),
		Init: ss.InitializeParams(),
		Key:  key,
		Keys: keys,
		Done: done,
		Ask: func(ctx context.Context, method string, params json.RawMessage) (json.RawMessage, error) {
			if err := canAsk(ss, method, false); err != nil {
				return nil, err
			}
			ctx, cancel := context.WithCancel(ctx)
			defer cancel()
			defer context.AfterFunc(ending, cancel)()
			res, err := s.ask(ctx, ss, method, params)
			if err != nil {
				return nil, rpcError(err)
			}
			return json.Marshal(res)
		},
		Log:     func(ctx context.Context, p *mcp.LoggingMessageParams) { _ = ss.Log(ctx, p) },
		Updated: func(ctx context.Context, uri string) { s.subs.OwnUpdated(ctx, ss, uri) },
	}
}

// clientDefs returns the definitions tools/list shows the client of
// ctx (mcpsession: a client session, a 2026-07-28 request) of the MCP servers' tools in lr, by served name, and
// removes from lr those its server does not list to it: for each
// declared MCP server behind a tool of lr, the tools its server lists
// to the client's own upstream session (host.Host.ClientTools; a
// server may list other tools to each client, e.g. MCP Apps' UI tools
// only to clients that declare io.modelcontextprotocol/ui), each named
// as the host serves it (verbatim). A tool such a list lacks is not
// listed; a tool it has that the shared session did not list is not
// served (the host routes calls by the shared session's tools). A client
// of 2026-07-28 (an mcpsession.Request in x: catalogClient) is listed
// alike what the server lists to a client with its request's identity.
// Without either, or where the server lists the same tools to every
// client or its list fails, the shared session's definitions (defs). A
// server whose catalog says it lists the same tools to every client
// (host.Host.SharedTools, read at each listing: "sessions": "shared") is
// not asked for a list at all, as clientview.Views.View does not ask it.
func (s *Server) clientDefs(ctx context.Context, x *core.Exchange, lr *mcp.ListToolsResult) map[string]json.RawMessage {
	defs := *s.defs.Load()
	if x.ClientSession() == nil && x.SessionlessRequest() == nil {
		return defs
	}
	served := *s.served.Load()
	lists := map[string]map[string]json.RawMessage{} // plugin → its list for the client (nil: the shared one)
	out := maps.Clone(defs)
	hidden := map[string]bool{}
	for _, t := range lr.Tools {
		fi, ok := served[t.Name]
		if !ok || defs[t.Name] == nil {
			continue
		}
		own, asked := lists[fi.Plugin]
		if !asked {
			if !s.h.SharedTools(fi.Function.Name) {
				own = s.clientList(ctx, x, fi.Plugin, t.Name)
			}
			lists[fi.Plugin] = own
		}
		if own == nil {
			continue
		}
		f := *fi.Function
		if f.MCPTool = own[clientview.Name(fi.Function)]; f.MCPTool == nil {
			hidden[t.Name] = true
			continue
		}
		if def, err := verbatim(&f, s.cfg.Tasks != nil); err == nil {
			out[t.Name] = def
		}
	}
	if len(hidden) > 0 {
		lr.Tools = keep(lr.Tools, func(t *mcp.Tool) bool { return !hidden[t.Name] })
	}
	return out
}

// clientList returns the tools plugin's MCP server lists to the client
// of x (host.Host.ClientTools, asked by fn, one of its functions), by
// MCP name, each as the server wrote it; nil when the server lists the
// same tools to every client, or its list failed (logged).
func (s *Server) clientList(ctx context.Context, x *core.Exchange, plugin, fn string) map[string]json.RawMessage {
	raw, err := s.h.ClientTools(ctx, x, fn)
	if err != nil {
		if e := core.AsError(err); e == nil || e.Kind != core.KindTool || e.Code != jsonrpc.CodeMethodNotFound {
			s.cfg.Logger.Warn("MCP tools/list: the client's own list of the server failed; listing the shared one", "plugin", plugin, "error", err)
		}
		return nil
	}
	var res struct {
		Tools []json.RawMessage `json:"tools"`
	}
	if json.Unmarshal(raw, &res) != nil {
		return nil
	}
	own := map[string]json.RawMessage{}
	for _, def := range res.Tools {
		var t struct {
			Name string `json:"name"`
		}
		if json.Unmarshal(def, &t) == nil && t.Name != "" {
			own[t.Name] = def
		}
	}
	return own
}

// viewsLister is the client views' view of a Server (clientview.Lister).
type viewsLister struct{ s *Server }

// Changed implements clientview.Lister: host.Host.Changed.
func (l viewsLister) Changed() <-chan struct{} { return l.s.h.Changed() }

// List implements clientview.Lister: clientList, asked with the client's
// identity (catalogClient).
func (l viewsLister) List(ctx context.Context, ss *mcp.ServerSession, plugin, fn string) map[string]json.RawMessage {
	return l.s.clientList(ctx, l.s.catalogClient(ss), plugin, fn)
}

// Kept implements clientview.Lister: the lists of ss's clientSession.
func (l viewsLister) Kept(ss *mcp.ServerSession) *clientview.Lists {
	if cs := l.s.clientState(ss); cs != nil {
		return &cs.lists
	}
	return nil
}
