package mcpadapter

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"golang.org/x/oauth2"

	"github.com/opentool-host/opentool-host/declared/oauthlogin"
	"github.com/opentool-host/opentool-host/host/core"
	"github.com/opentool-host/opentool-host/pluginsdk"
)

// Per-user credentials ("credentials": "per-user", decl.MCPServer.PerUser).
// Each caller's principal (core.Caller.Key: the API key's name, or the
// OAuth principal host/access names; for an MCP client session its
// mcpsession.Session.Key, the same name) is served by an Adapter of its
// own (a user), made at its first call and run beside this one: its
// sessions, shared and per client, its tasks and their polls, its
// resources/read, prompts/get and completion, and its 2026-07-28 session
// carry that principal's token from Options.Tokens and no other
// (tokenHandler). This Adapter's own session (the listing session) lists
// the tools, resources and prompts, as the first principal holding a
// token (oauthlogin.Lister, in its order) and serves no call: the
// document and catalog are that principal's view, each caller's call its
// own. Nothing a caller sends chooses the principal. A caller without a
// principal (keys off) is refused; one without a token gets
// needsLoginError (pluginsdk.Error.Login: the link of Options.Logins, or
// the command to run); so does one whose token is deleted, at its next
// call (its user is ended), and one whose token the server refuses and
// that cannot be refreshed (tokenHandler). resources/subscribe
// is refused (its updates would reach the listing session's subscribers,
// not the principal's alone), and the catalog says so (no Subscribe).
// At most Options.MaxSessions users run at once; past it the least
// recently used one with no call in flight is ended, else the call is
// refused as busy.

// users are the per-user Adapters of a per-user server, by principal.
type users struct {
	mu     sync.Mutex
	ctx    context.Context // the listing Adapter's Run: users run within it
	m      map[string]*user
	closed bool
}

// user is one principal's Adapter and its life.
type user struct {
	a        *Adapter
	stop     context.CancelFunc
	inFlight int
	used     time.Time
}

// errNoPrincipal is the refusal of a call to a per-user server by a
// caller the host knows no name for.
var errNoPrincipal = errors.New("its credentials are per-user, and this caller has no principal: serve with API keys (--api-key, --api-keys-file) or OAuth (--oauth-issuer)")

// principalOf is the caller's principal: core.Caller.Key on ctx, else
// the key of x's MCP client session; "" when neither is set.
func principalOf(ctx context.Context, x *core.Exchange) string {
	if k := core.CallerFrom(ctx).Key; k != "" {
		return k
	}
	if s := x.ClientSession(); s != nil {
		return s.Key
	}
	return ""
}

// perUser reports whether a serves its calls as each caller's user.
func (a *Adapter) perUser() bool { return a.users != nil }

// userFor returns the Adapter serving the principal of ctx and x
// (principalOf), connected, and the
// function that releases it when the call is done. Errors: errNoPrincipal
// (a tool failure); needsLoginError when the principal holds no token;
// busy when every user has a call in flight; the user's connection's.
func (a *Adapter) userFor(ctx context.Context, x *core.Exchange) (*Adapter, func(), error) {
	p := principalOf(ctx, x)
	if p == "" {
		return nil, nil, pluginsdk.ToolFailure("MCP server %q: %v", a.launch.Name, errNoPrincipal)
	}
	if _, err := a.opts.Tokens.Get(a.launch.Name, p); err != nil {
		a.endUser(p) // logged out: its sessions end with its token
		return nil, nil, a.needsLoginError(ctx, p, err)
	}
	u, err := a.takeUser(p)
	if err != nil {
		return nil, nil, err
	}
	release := func() {
		a.users.mu.Lock()
		u.inFlight--
		u.used = time.Now()
		a.users.mu.Unlock()
	}
	if err := u.a.connected(ctx); err != nil {
		release()
		if errors.Is(err, ErrNeedsAuthorization) {
			a.endUser(p)
			return nil, nil, a.needsLoginError(ctx, p, err)
		}
		return nil, nil, err
	}
	return u.a, release, nil
}

// takeUser returns p's user with one more call in flight, made and
// started now when p has none (past MaxSessions, the least recently
// used idle user ended first). Errors: the adapter stopped; busy.
func (a *Adapter) takeUser(p string) (*user, error) {
	us := a.users
	us.mu.Lock()
	defer us.mu.Unlock()
	if us.closed || us.ctx == nil {
		return nil, pluginsdk.ToolFailure("MCP server %q: stopped", a.launch.Name)
	}
	if u, ok := us.m[p]; ok {
		u.inFlight++
		return u, nil
	}
	delete(us.m, p)
	if len(us.m) >= a.opts.MaxSessions {
		var lru string
		for k, u := range us.m {
			if u.inFlight == 0 && (lru == "" || u.used.Before(us.m[lru].used)) {
				lru = k
			}
		}
		if lru == "" {
			return nil, &pluginsdk.Error{Code: pluginsdk.CodeToolFailure, Message: fmt.Sprintf("MCP server %q: busy: its %d per-user sessions each have a call in flight (maxSessions)", a.launch.Name, a.opts.MaxSessions)}
		}
		us.m[lru].stop()
		delete(us.m, lru)
	}
	opts := a.opts
	opts.Shared, opts.Sole = true, nil
	ua := New(a.launch, a.log.With("principal", p), opts)
	ua.users = nil
	ua.oauth = oauthClient{h: &tokenHandler{store: a.opts.Tokens, refresher: loginOf(ua.oauth), server: a.launch.Name, principal: func() string { return p }}}
	ctx, stop := context.WithCancel(us.ctx)
	u := &user{a: ua, stop: stop, inFlight: 1, used: time.Now()}
	us.m[p] = u
	go func() {
		err := ua.Run(ctx)
		a.log.Debug("MCP server: a principal's session ended", "server", a.launch.Name, "principal", p, "error", err)
		us.mu.Lock()
		if us.m[p] == u {
			delete(us.m, p)
		}
		us.mu.Unlock()
		stop()
	}()
	return u, nil
}

// endUser ends p's user, if any.
func (a *Adapter) endUser(p string) {
	a.users.mu.Lock()
	defer a.users.mu.Unlock()
	if u, ok := a.users.m[p]; ok {
		u.stop()
		delete(a.users.m, p)
	}
}

// runUsers lets users run within ctx (the listing Adapter's Run) and
// returns the function that ends them all.
func (a *Adapter) runUsers(ctx context.Context) func() {
	us := a.users
	us.mu.Lock()
	us.ctx, us.closed = ctx, false
	us.mu.Unlock()
	return func() {
		us.mu.Lock()
		defer us.mu.Unlock()
		us.closed = true
		for p, u := range us.m {
			u.stop()
			delete(us.m, p)
		}
	}
}

// needsLoginError is the error of a call by principal p, who holds no
// token the server accepts (why): a *pluginsdk.Error with Login, the
// authorization URL Options.Logins begins for p, or, without Logins or
// when it fails, the command that logs in. It names p's server and
// nothing of any other principal; its Message leaves the link out, so
// that the error's text logged anywhere holds no login state.
func (a *Adapter) needsLoginError(ctx context.Context, p string, why error) error {
	login := "opentool-host auth login " + a.launch.Name
	if a.opts.Logins != nil {
		if u, err := a.opts.Logins.Begin(ctx, a.launch.Name, p); err == nil && u != "" {
			login = u
		} else if err != nil {
			a.log.Warn("MCP server: could not begin a login", "server", a.launch.Name, "principal", p, "error", err)
		}
	}
	reason := "no token"
	if !errors.Is(why, oauthlogin.ErrNoToken) {
		reason = "its token was refused"
	}
	return &pluginsdk.Error{Code: pluginsdk.CodeToolFailure, Login: login,
		Message: fmt.Sprintf("MCP server %q needs your login (credentials per user; %s)", a.launch.Name, reason)}
}

// tokenHandler is the auth.OAuthHandler of one principal's sessions to a
// per-user server (the listing session's: principal is the first with a
// token): every request carries the principal's token as the Store holds
// it now, refreshed before it expires, and once when the server answers
// 401, by the login step's client when there is one (the new token put
// back).
// Without a token, or one that cannot be refreshed, the request fails
// with ErrNeedsAuthorization. Tokens go in the Authorization header only:
// never logged, never in an error.
type tokenHandler struct {
	store oauthlogin.Store
	// refresher, when not nil, is the login step's client of the server
	// (login.go), which refreshes a principal's token with the client
	// its login kept (and puts the new one back); nil: none refreshes.
	refresher *loginClient
	server    string
	principal func() string // "" when none holds a token
	mu        sync.Mutex    // one refresh at a time
}

// TokenSource implements auth.OAuthHandler.
func (h *tokenHandler) TokenSource(context.Context) (oauth2.TokenSource, error) {
	return tokenSourceFunc(func() (*oauth2.Token, error) { return h.token(context.Background(), false) }), nil
}

// Authorize implements auth.OAuthHandler: the server refused the token
// (401, 403); refresh it once, else fail with ErrNeedsAuthorization.
func (h *tokenHandler) Authorize(ctx context.Context, _ *http.Request, resp *http.Response) error {
	_ = resp.Body.Close()
	_, err := h.token(ctx, true)
	return err
}

// token returns the principal's token, refreshed first when it expired
// (or, refused, when the server refused it). Errors: ErrNeedsAuthorization
// wrapping why.
func (h *tokenHandler) token(ctx context.Context, refused bool) (*oauth2.Token, error) {
	p := h.principal()
	if p == "" {
		return nil, fmt.Errorf("%w: credentials per user, and no principal has logged in", ErrNeedsAuthorization)
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	t, err := h.store.Get(h.server, p)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrNeedsAuthorization, err)
	}
	if t.Valid() && !refused {
		return t, nil
	}
	if h.refresher != nil && t.RefreshToken != "" {
		nt, err := h.refresher.refreshFor(p, t)
		if err != nil {
			return nil, fmt.Errorf("%w: refresh: %w", ErrNeedsAuthorization, err)
		}
		return nt, nil
	}
	return nil, fmt.Errorf("%w: the token expired or was refused, and cannot be refreshed", ErrNeedsAuthorization)
}

// tokenSourceFunc is an oauth2.TokenSource of a function.
type tokenSourceFunc func() (*oauth2.Token, error)

// Token implements oauth2.TokenSource.
func (f tokenSourceFunc) Token() (*oauth2.Token, error) { return f() }

// listingPrincipal is the principal whose token the listing session of a
// per-user server carries: the first holding a valid one (or one that a
// refresh may renew), in the Lister's order; "" when none does, or the
// Store is no Lister.
func (a *Adapter) listingPrincipal() string {
	l, ok := a.opts.Tokens.(oauthlogin.Lister)
	if !ok {
		return ""
	}
	ps, err := l.Principals(a.launch.Name)
	if err != nil {
		return ""
	}
	for _, p := range ps {
		if t, err := a.opts.Tokens.Get(a.launch.Name, p); err == nil && (t.Valid() || t.RefreshToken != "") {
			return p
		}
	}
	return ""
}

// loginRPCError is err, userFor's, as a catalog request's error: a
// needs-login error whose link is a URL as the JSON-RPC error -32042
// (URLElicitationRequiredError, MCP 2025-11-25 "Elicitation", URL mode)
// with the link as its one URL elicitation; else -32603 with the
// message.
func loginRPCError(server, method string, err error) error {
	var pe *pluginsdk.Error
	if errors.As(err, &pe) && strings.HasPrefix(pe.Login, "http") {
		sum := sha256.Sum256([]byte(pe.Login))
		return rpcErrorOf(server, method, mcp.URLElicitationRequiredError([]*mcp.ElicitParams{{
			Mode: "url", URL: pe.Login, Message: pe.Message, ElicitationID: "login-" + hex.EncodeToString(sum[:8])}}))
	}
	return rpcErrorOf(server, method, err)
}
