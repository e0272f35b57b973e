package mcpapi

import (
	"context"
	"net/http"
	"slices"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/opentool-host/opentool-host/frontend/keyview"
	"github.com/opentool-host/opentool-host/frontend/mcpapi/overlay"
	"github.com/opentool-host/opentool-host/host"
	"github.com/opentool-host/opentool-host/host/access"
	"github.com/opentool-host/opentool-host/host/core"
	"github.com/opentool-host/opentool-host/protocol/mcpmethod"
)

// Per-key access (package access) over MCP.
//
// The grant travels with each request, not with the session: Handler
// hands the grant that access.Guard.Middleware put on the HTTP request to
// the SDK as the request's auth.TokenInfo (UserID = the key's name, so
// that the SDK also refuses a session's requests made with another key:
// 403 "session user mismatch"), and the SDK gives it to every method
// handler in RequestExtra. The receiving middleware (accessMiddleware;
// for a session call the host answers itself, answerCall: withGrant)
// puts it on the handler's context, where the host's call path finds it:
// a tools/call of a tool the key may not call is answered by the host as
// an unknown function, which callError turns into the SDK's own
// `unknown tool "NAME"` error. tools/list shows per request what package
// catalog lists to the key (keyview.View.Listed: the same predicate, the
// host's tool search functions, the threshold; marked cacheScope
// "private"), so one SDK server serves every key. Over stdio there is no
// grant: everything, the threshold still applied.

// grantExtra is the auth.TokenInfo.Extra key of the request's grant.
const grantExtra = "opentool-host/grant"

// withToken returns h, which is given the grant of an authenticated
// request as its auth.TokenInfo (see above); requests without a grant
// (authentication off) go to h as they are.
func withToken(h http.Handler) http.Handler {
	verify := func(_ context.Context, _ string, r *http.Request) (*auth.TokenInfo, error) {
		g := access.GrantFrom(r.Context())
		if g == nil {
			return nil, auth.ErrInvalidToken
		}
		return tokenInfo(g), nil
	}
	// The token was checked by access.Guard.Middleware; verify only reads
	// the grant it left, which has no expiration of its own.
	tokened := auth.RequireBearerToken(verify, &auth.RequireBearerTokenOptions{AllowMissingExpiration: true})(h)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if access.GrantFrom(r.Context()) == nil {
			h.ServeHTTP(w, r)
			return
		}
		tokened.ServeHTTP(w, r)
	})
}

// tokenInfo is the SDK's token of grant g (not nil): its name the user,
// the grant itself under grantExtra; made once per grant (Grant.Memo) and
// only read after (by the SDK: the user a session is bound to).
func tokenInfo(g *access.Grant) *auth.TokenInfo {
	return g.Memo(func(g *access.Grant) any {
		return &auth.TokenInfo{UserID: g.Name(), Extra: map[string]any{grantExtra: g}}
	}).(*auth.TokenInfo)
}

// grantOf returns the grant of req (nil without one).
func grantOf(req mcp.Request) *access.Grant { return grantIn(req.GetExtra()) }

// grantIn returns the grant a request's extra carries (nil without one).
func grantIn(extra *mcp.RequestExtra) *access.Grant {
	if extra == nil || extra.TokenInfo == nil {
		return nil
	}
	g, _ := extra.TokenInfo.Extra[grantExtra].(*access.Grant)
	return g
}

// withGrant returns ctx with grant g (nil: none, ctx as it is) where the
// host's call path finds it, and the key's name in core.Caller.
func withGrant(ctx context.Context, g *access.Grant) context.Context {
	if g == nil {
		return ctx
	}
	return core.WithCaller(access.WithGrant(ctx, g), core.Caller{Key: g.Name()})
}

// accessMiddleware puts each request's grant on its context (and the
// key's name into core.Caller) and filters the listings; tools/list
// shows an MCP server's tools as the server defines them (toolList),
// the catalog's lists their items as the plugins wrote them
// (catalogList), resources/read, prompts/get and completion/complete
// the plugin's result as it wrote it (overlay.Call).
// The key's rate limit was taken by the front door for every request of the POST
// (HTTPHandler.Meter), before the SDK read it.
func (s *Server) accessMiddleware(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		g := grantOf(req)
		if method == mcpmethod.LoggingSetLevel {
			s.noteLogLevel(req, g)
			s.noteClientLevel(req)
		}
		ctx = withGrant(ctx, g)
		switch {
		case method == mcpmethod.ToolsList:
			// No keys (g nil): the threshold still applies.
			res, err := next(ctx, method, req)
			if lr, ok := res.(*mcp.ListToolsResult); ok && err == nil {
				s.filterTools(g, lr)
				s.describeRunCode(ctx, lr)
				ss, _ := req.GetSession().(*mcp.ServerSession)
				return s.toolList(ctx, s.catalogClient(ss), lr), nil
			}
			return res, err
		case method == mcpmethod.ResourcesList, method == mcpmethod.ResourcesTemplatesList, method == mcpmethod.PromptsList:
			res, err := next(ctx, method, req)
			if err != nil {
				return res, err
			}
			if g != nil {
				s.filterCatalog(g, res)
			}
			return s.catalogList(res), nil
		case method == mcpmethod.ResourcesRead, method == mcpmethod.PromptsGet, method == mcpmethod.CompletionComplete:
			return overlay.Call(ctx, next, method, req)
		case method == mcpmethod.Initialize:
			res, err := s.withListener(ctx, next, method, req, g)
			if ss, _ := req.GetSession().(*mcp.ServerSession); err == nil {
				s.own(ss, g)
			}
			return res, err
		case method == methodListen:
			return s.withListener(ctx, next, method, req, g)
		}
		return next(ctx, method, req)
	}
}

// describeRunCode gives run_code in lr (--code-mode) the description
// of the caller of ctx: with the TypeScript declarations of the tools it
// may call (keyview.CodeDescription). The list's tools are the server's,
// shared: run_code's is replaced by a copy, in a copy of the slice.
func (s *Server) describeRunCode(ctx context.Context, lr *mcp.ListToolsResult) {
	for i, t := range lr.Tools {
		if t.Name != host.RunCodeName {
			continue
		}
		desc, ok := keyview.CodeDescription(ctx, s.h, t.Name)
		if !ok {
			return
		}
		own := *t
		own.Description = desc
		lr.Tools = slices.Clone(lr.Tools)
		lr.Tools[i] = &own
		return
	}
}

// filterTools keeps in lr the tools g (nil: no keys) finds in a listing
// (keyview.View.Listed: those it may call, the host's tool search
// functions included, the threshold applied), and marks the list private
// to the key. Without keys and with nothing to hide it leaves lr as it is.
func (s *Server) filterTools(g *access.Grant, lr *mcp.ListToolsResult) {
	l := keyview.For(g, s.h).Listed()
	if g == nil && l.All() {
		return
	}
	lr.CacheScope = "private"
	if !l.All() {
		lr.Tools = keep(lr.Tools, func(t *mcp.Tool) bool { return l.Has(t.Name) })
	}
}
