package oauthlogin

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"html"
	"net/http"
	"net/url"
	"slices"
	"sync"
	"time"
)

// LoginWindow is how long a login begun waits for its person: the
// authorization URL's code is taken at the callback until then.
const LoginWindow = 10 * time.Minute

// CallbackPath is the path of the host's route that receives the
// authorization response (RFC 6749 section 4.1.2): the redirect URI is
// the host's address followed by it.
const CallbackPath = "/oauth/callback"

// Begin starts the login of one server for principal and returns the
// authorization URL once the flow has reached the person's step; the
// rest of the flow (the code at the callback, the token request) goes
// on after it returns, for up to LoginWindow.
type Begin func(ctx context.Context, principal string) (authURL string, err error)

// Response is the authorization response the callback received.
type Response struct {
	Code, State, Iss string
}

// Registry is the host's Logins: each server declared with the
// authorization code grant registers how its login begins (Register);
// Begin starts one, Await is where the flow waits for the person, and
// Callback is the handler of CallbackPath that the browser is sent back
// to. Create it with NewRegistry.
type Registry struct {
	store    ClientStore
	redirect string

	mu      sync.Mutex
	servers map[string]Begin
	perUser map[string]bool         // servers declared "credentials": "per-user"
	pending map[string]*pending     // by state
	open    map[[2]string]openLogin // by server and principal
	onLogin func(server, principal string)
}

// pending is a login waiting for its authorization response.
type pending struct {
	server, principal string
	got               chan Response // buffer 1
	done              chan error    // the token request's end (buffer 1)
}

// NewRegistry returns a Registry keeping tokens in store, whose
// callback the browser reaches at redirectURL (the host's base URL and
// CallbackPath); onLogin, when not nil, is called (on its own
// goroutine) after a login has put a token, so the server's client
// connects with it at once.
func NewRegistry(store ClientStore, redirectURL string, onLogin func(server, principal string)) *Registry {
	return &Registry{store: store, redirect: redirectURL, servers: map[string]Begin{}, perUser: map[string]bool{}, pending: map[string]*pending{}, open: map[[2]string]openLogin{}, onLogin: onLogin}
}

// Store returns the registry's Store.
func (r *Registry) Store() ClientStore { return r.store }

// RedirectURL returns the redirect URI logins ask for.
func (r *Registry) RedirectURL() string { return r.redirect }

// Register sets how server's login begins, replacing the one before
// (a restarted server's client); perUser: the server is declared
// "credentials": "per-user", each caller logging in as itself (its
// principal), else one login ("") serves every caller.
func (r *Registry) Register(server string, perUser bool, b Begin) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.servers[server] = b
	r.perUser[server] = perUser
}

// PerUser says whether server was registered with per-user credentials.
func (r *Registry) PerUser(server string) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.perUser[server]
}

// Servers returns the names of the servers that have a login, sorted.
func (r *Registry) Servers() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	var names []string
	for n := range r.servers {
		names = append(names, n)
	}
	slices.Sort(names)
	return names
}

// ErrUnknownServer is Begin's error for a server that has no login: not
// declared, or not declared with the authorization code grant.
var ErrUnknownServer = errors.New("no server of that name logs in with a person (declared by url with \"oauth\" of the authorization code grant)")

// MaxPending bounds the logins waiting for their person at once, across
// servers and principals; Begin past it fails with ErrTooManyLogins.
const MaxPending = 256

// ReuseWindow is how long a login begun is handed out again to the same
// server and principal (while it waits): the calls of a caller that has
// not logged in get one authorization URL, not one flow (metadata,
// registration, a waiting goroutine) each.
const ReuseWindow = 2 * time.Minute

// ErrTooManyLogins is Begin's error when MaxPending logins wait.
var ErrTooManyLogins = fmt.Errorf("too many logins wait for their person (%d); try again later", MaxPending)

// Begin implements Logins: the login waiting for server and principal
// begun within ReuseWindow, else a new one. Errors: ErrUnknownServer,
// ErrTooManyLogins, the flow's.
func (r *Registry) Begin(ctx context.Context, server, principal string) (string, error) {
	key := [2]string{server, principal}
	r.mu.Lock()
	b, ok := r.servers[server]
	if o, open := r.open[key]; open && time.Now().Before(o.until) {
		r.mu.Unlock()
		return o.url, nil
	}
	full := len(r.pending) >= MaxPending
	r.mu.Unlock()
	switch {
	case !ok:
		return "", fmt.Errorf("%q: %w", server, ErrUnknownServer)
	case full:
		return "", ErrTooManyLogins
	}
	u, err := b(ctx, principal)
	if err != nil {
		return "", err
	}
	if pu, perr := url.Parse(u); perr == nil && pu.Query().Get("state") != "" {
		r.mu.Lock()
		r.open[key] = openLogin{url: u, state: pu.Query().Get("state"), until: time.Now().Add(ReuseWindow)}
		r.mu.Unlock()
	}
	return u, nil
}

// forget ends the handing out of the login of state (r.mu held).
func (r *Registry) forget(state string) {
	for k, o := range r.open {
		if o.state == state {
			delete(r.open, k)
		}
	}
}

// openLogin is a login Begin handed out, handed out again until until
// unless its response came or its window ended first (forget).
type openLogin struct {
	url, state string
	until      time.Time
}

// Await is where a login's flow waits for its person: authURL is the
// authorization URL the person is sent to (its "state" names the login);
// Await returns the authorization response the callback received for
// it, and finish, which the flow calls with the token request's outcome
// (the callback's page says it). waiting (nil: none) is called once the
// login is registered, before Await waits: the flow hands authURL out
// there, so that a response however quick finds its login. Errors: authURL has no state; ctx ends (LoginWindow)
// first.
func (r *Registry) Await(ctx context.Context, server, principal, authURL string, waiting func()) (resp Response, finish func(error), err error) {
	u, err := url.Parse(authURL)
	if err != nil {
		return Response{}, nil, err
	}
	state := u.Query().Get("state")
	if state == "" {
		return Response{}, nil, errors.New("the authorization URL has no state")
	}
	p := &pending{server: server, principal: principal, got: make(chan Response, 1), done: make(chan error, 1)}
	r.mu.Lock()
	r.pending[state] = p
	r.mu.Unlock()
	defer func() {
		r.mu.Lock()
		delete(r.pending, state)
		r.forget(state)
		r.mu.Unlock()
	}()
	if waiting != nil {
		waiting()
	}
	select {
	case resp = <-p.got:
		return resp, func(err error) {
			p.done <- err
			if err == nil && r.onLogin != nil {
				go r.onLogin(server, principal)
			}
		}, nil
	case <-ctx.Done():
		return Response{}, nil, fmt.Errorf("login to %q: no authorization response within the login window: %w", server, ctx.Err())
	}
}

// Callback serves CallbackPath: the authorization response of a login
// that Await waits for, matched by its state (an unguessable value of
// the flow's, which is all that lets the request in: the browser has no
// API key). The page says whether the login succeeded; a response with
// "error" (RFC 6749 4.1.2.1) ends the login with it.
func (r *Registry) Callback(w http.ResponseWriter, req *http.Request) {
	q := req.URL.Query()
	state := q.Get("state")
	r.mu.Lock()
	p := r.pending[state]
	if p != nil {
		delete(r.pending, state) // one response per login
		r.forget(state)
	}
	r.mu.Unlock()
	if state == "" || p == nil {
		page(w, http.StatusBadRequest, "No login waits for this response: it was used already, its login window ended, or the host restarted. Run opentool-host auth login again.")
		return
	}
	if e := q.Get("error"); e != "" {
		p.got <- Response{State: state}
		msg := "the authorization server refused: " + e
		if d := q.Get("error_description"); d != "" {
			msg += ": " + d
		}
		page(w, http.StatusBadRequest, "Login to "+p.server+" failed: "+msg)
		return
	}
	p.got <- Response{Code: q.Get("code"), State: state, Iss: q.Get("iss")}
	select {
	case err := <-p.done:
		if err != nil {
			page(w, http.StatusBadGateway, "Login to "+p.server+" failed: "+err.Error())
			return
		}
		page(w, http.StatusOK, "Logged in to "+p.server+". You may close this page.")
	case <-time.After(time.Minute):
		page(w, http.StatusGatewayTimeout, "Login to "+p.server+": the token request did not end within a minute.")
	case <-req.Context().Done():
	}
}

// page writes a small HTML page saying msg.
func page(w http.ResponseWriter, status int, msg string) {
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	fmt.Fprintf(w, "<!doctype html><title>opentool-host login</title><p>%s</p>\n", html.EscapeString(msg))
}

// Status is what the host says of one server's login (never a token).
type Status struct {
	Server    string    `json:"server"`
	Principal string    `json:"principal"`
	LoggedIn  bool      `json:"loggedIn"`
	Expiry    time.Time `json:"expiry,omitzero"`
	Refresh   bool      `json:"refresh"` // a refresh token is held
}

// Statuses returns the status of every registered server's login,
// sorted by server: the shared login (principal "") of a server with
// shared credentials, principal's own of a per-user server.
func (r *Registry) Statuses(principal string) []Status {
	var out []Status
	for _, s := range r.Servers() {
		st := Status{Server: s}
		if r.PerUser(s) {
			st.Principal = principal
		}
		if t, err := r.store.Get(s, st.Principal); err == nil {
			st.LoggedIn, st.Expiry, st.Refresh = true, t.Expiry, t.RefreshToken != ""
		}
		out = append(out, st)
	}
	return out
}

// Logout removes the token and client held for (server, principal).
// Errors: the server has no login (ErrUnknownServer); the store's.
func (r *Registry) Logout(server, principal string) error {
	r.mu.Lock()
	_, ok := r.servers[server]
	r.mu.Unlock()
	if !ok {
		return fmt.Errorf("%q: %w", server, ErrUnknownServer)
	}
	return r.store.Delete(server, principal)
}

// writeJSON writes v as a JSON body with status.
func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

// Handlers are the registry's routes for the CLI (opentool-host auth),
// behind the host's keys: POST /oauth/login/{server} begins a login and
// answers {"url": AUTHORIZATION_URL}; DELETE /oauth/login/{server} logs
// out; GET /oauth/status answers {"servers": [Status...]}. For a server
// with shared credentials the login is the shared one ("") and may(req,
// server, true) must allow it (the account every caller is served as);
// for a per-user server it is the caller's own, principal(req), and
// may(req, server, false) must allow it (the caller may use the
// server). may says whether the request's caller may see server (change
// false) or log it in or out (change true); what it may not, and a
// per-user login without a principal, is answered as no such login, 404. Errors are {"error":
// MESSAGE} with 404 (no such login), 502 (the server or its
// authorization server failed), 500 (the store).
func (r *Registry) Handlers(may func(req *http.Request, server string, change bool) bool, principal func(req *http.Request) string) map[string]http.HandlerFunc {
	// whose is the login a change of server by req acts on; ok false:
	// none it may change.
	whose := func(req *http.Request, server string) (p string, ok bool) {
		if r.PerUser(server) {
			p = principal(req)
			return p, p != "" && may(req, server, false)
		}
		return "", may(req, server, true)
	}
	unknown := func(w http.ResponseWriter, server string) {
		writeJSON(w, http.StatusNotFound, map[string]string{"error": fmt.Sprintf("%q: %v", server, ErrUnknownServer)})
	}
	return map[string]http.HandlerFunc{
		"POST /oauth/login/{server}": func(w http.ResponseWriter, req *http.Request) {
			server := req.PathValue("server")
			p, ok := whose(req, server)
			if !ok {
				unknown(w, server)
				return
			}
			u, err := r.Begin(req.Context(), server, p)
			switch {
			case errors.Is(err, ErrUnknownServer):
				unknown(w, server)
			case err != nil:
				writeJSON(w, http.StatusBadGateway, map[string]string{"error": err.Error()})
			default:
				writeJSON(w, http.StatusOK, map[string]string{"url": u})
			}
		},
		"DELETE /oauth/login/{server}": func(w http.ResponseWriter, req *http.Request) {
			server := req.PathValue("server")
			p, ok := whose(req, server)
			if !ok {
				unknown(w, server)
				return
			}
			err := r.Logout(server, p)
			switch {
			case errors.Is(err, ErrUnknownServer):
				unknown(w, server)
			case err != nil:
				writeJSON(w, http.StatusInternalServerError, map[string]string{"error": err.Error()})
			default:
				writeJSON(w, http.StatusOK, map[string]string{})
			}
		},
		"GET /oauth/status": func(w http.ResponseWriter, req *http.Request) {
			out := []Status{}
			for _, st := range r.Statuses(principal(req)) {
				if may(req, st.Server, false) {
					out = append(out, st)
				}
			}
			writeJSON(w, http.StatusOK, map[string]any{"servers": out})
		},
	}
}
