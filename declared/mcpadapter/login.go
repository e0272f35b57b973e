package mcpadapter

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/oauthex"
	"golang.org/x/oauth2"

	"github.com/opentool-host/opentool-host/declared/oauthlogin"
	"github.com/opentool-host/opentool-host/protocol/decl"
)

// maxTokenRequestBody bounds the token request body withResource reads
// to add "resource" (a form of a few fields).
const maxTokenRequestBody = 64 << 10

// withResource is an HTTP transport that adds "resource" (RFC 8707
// section 2, the server's URL) to the token requests x/oauth2 and the
// SDK's client-credentials handler send without one: a refresh
// (grant_type=refresh_token, which oauth2.Config.TokenSource sends with
// no option of the authorization) and a client-credentials grant
// (extauth sends none). An authorization code exchange carries it
// already (auth.AuthorizationCodeHandler); other requests pass as they
// are.
type withResource struct {
	base     http.RoundTripper
	resource string
}

// RoundTrip implements http.RoundTripper.
func (t withResource) RoundTrip(r *http.Request) (*http.Response, error) {
	b, isForm, err := formBody(r)
	if err != nil {
		return nil, err
	}
	if !isForm {
		return t.base.RoundTrip(r)
	}
	if len(b) <= maxTokenRequestBody {
		if f, err := url.ParseQuery(string(b)); err == nil && f.Get("resource") == "" {
			switch f.Get("grant_type") {
			case "refresh_token", "client_credentials":
				f.Set("resource", t.resource)
				b = []byte(f.Encode())
			}
		}
	}
	return t.base.RoundTrip(withBody(r, b))
}

// oauthHTTPClient is the HTTP client of server s's OAuth requests
// (metadata, registration, token): oauthTimeout each, "resource" on
// every token request (withResource).
func oauthHTTPClient(s decl.MCPServer) *http.Client {
	return &http.Client{Timeout: oauthTimeout, Transport: withResource{base: http.DefaultTransport, resource: s.URL}}
}

// loginClient is the OAuth handler of a server declared with the
// authorization code grant, when the host has logins
// (Options.Logins): its token is the one the registry's Store holds
// for (server, ""), read at every request (a login or logout takes
// effect at the next), refreshed with the kept client before it expires
// and when the server answers 401 (invalid_token), each new token put
// back in the Store; with no token, or none that refreshes, a 401 fails
// with ErrNeedsAuthorization naming the login command.
type loginClient struct {
	server string
	s      decl.MCPServer
	reg    *oauthlogin.Registry
	hc     *http.Client
	// refreshMu makes one refresh at a time: a rotated refresh token
	// (OAuth 2.1 section 4.3.1) is spent by the first.
	refreshMu sync.Mutex
	// need is the last ErrNeedsAuthorization of Authorize, until a
	// token is held again (needs): the SDK's client gives a call only a
	// JSON-RPC -32005 for it.
	need atomic.Pointer[error]
	// challenge is the server's last 401 or 403 to the host (its
	// WWW-Authenticate: the scopes a step up asks), which a login begins
	// from; nil: none yet (begin probes).
	challenge atomic.Pointer[http.Response]
	// asked are the scopes the last login asked, which a step up's login
	// asks too (the SDK's union of granted and challenged scopes, SEP-2350,
	// across logins).
	asked atomic.Pointer[[]string]
	// ended, when set, is called with the end of each login's flow (nil:
	// the token is in the Store), on the flow's goroutine.
	ended func(error)
}

// needs returns why the server needs a login: the last
// ErrNeedsAuthorization of Authorize while no token is held, else nil.
func (c *loginClient) needs() error {
	p := c.need.Load()
	if p == nil {
		return nil
	}
	if _, err := c.reg.Store().Get(c.server, ""); err == nil && !errors.Is(*p, errInsufficientScope) {
		return nil
	}
	return *p
}

// errInsufficientScope marks a need of a login for more scopes: a token
// is held, and does not do.
var errInsufficientScope = errors.New("insufficient_scope")

// needing records err as the server's need of a login and returns it.
func (c *loginClient) needing(err error) error {
	c.need.Store(&err)
	return err
}

// newLoginClient is the login client of server name (declaration s),
// its login registered with reg.
func newLoginClient(name string, s decl.MCPServer, reg *oauthlogin.Registry) *loginClient {
	c := &loginClient{server: name, s: s, reg: reg, hc: oauthHTTPClient(s)}
	reg.Register(name, s.PerUser(), c.begin)
	return c
}

// TokenSource implements auth.OAuthHandler: nil while no token is held.
func (c *loginClient) TokenSource(context.Context) (oauth2.TokenSource, error) {
	if _, err := c.reg.Store().Get(c.server, ""); err != nil {
		return nil, nil
	}
	return storedSource{c: c}, nil
}

// storedSource is the Store's token of a loginClient for principal,
// refreshed when it is no longer valid (x/oauth2's margin: 10 s before
// its expiry).
type storedSource struct {
	c         *loginClient
	principal string
}

// Token implements oauth2.TokenSource.
func (s storedSource) Token() (*oauth2.Token, error) {
	t, err := s.c.reg.Store().Get(s.c.server, s.principal)
	if err != nil {
		return nil, err
	}
	if t.Valid() {
		return t, nil
	}
	return s.c.refreshFor(s.principal, t)
}

// refresh is refreshFor of the shared principal "".
func (c *loginClient) refresh(t *oauth2.Token) (*oauth2.Token, error) { return c.refreshFor("", t) }

// refreshFor exchanges principal's token t's refresh token for a new
// token with the client principal's login kept, and puts it in the
// Store: one at a time in this host, and across the hosts sharing a
// Store that is an oauthlogin.Locker (its lock held), each taking the
// token another refreshed while it waited. Errors: no refresh token or
// no client kept (ErrNeedsAuthorization), the token endpoint's
// (*oauth2.RetrieveError).
func (c *loginClient) refreshFor(principal string, t *oauth2.Token) (*oauth2.Token, error) {
	c.refreshMu.Lock()
	defer c.refreshMu.Unlock()
	if l, ok := c.reg.Store().(oauthlogin.Locker); ok { // another host may refresh it too
		ctx, cancel := context.WithTimeout(context.Background(), oauthTimeout)
		unlock, err := l.Lock(ctx, c.server, principal)
		cancel()
		if err != nil {
			return nil, err
		}
		defer unlock()
	}
	if cur, err := c.reg.Store().Get(c.server, principal); err == nil && cur.AccessToken != t.AccessToken && cur.Valid() {
		return cur, nil // refreshed while this one waited
	}
	if t.RefreshToken == "" {
		return nil, fmt.Errorf("%w: the token of %q expired and has no refresh token: %s", ErrNeedsAuthorization, c.server, c.loginHint())
	}
	kc, err := c.reg.Store().GetClient(c.server, principal)
	if err != nil {
		return nil, fmt.Errorf("%w: no client is kept to refresh the token of %q: %s", ErrNeedsAuthorization, c.server, c.loginHint())
	}
	cfg := &oauth2.Config{ClientID: kc.ClientID, ClientSecret: kc.ClientSecret, Endpoint: oauth2.Endpoint{TokenURL: kc.TokenURL, AuthStyle: kc.AuthStyle}}
	old := *t
	old.AccessToken, old.Expiry = "", time.Unix(1, 0) // refresh now
	ctx, cancel := context.WithTimeout(context.WithValue(context.Background(), oauth2.HTTPClient, c.hc), oauthTimeout)
	defer cancel()
	nt, err := cfg.TokenSource(ctx, &old).Token()
	if err != nil {
		return nil, err
	}
	if nt.RefreshToken == "" {
		nt.RefreshToken = t.RefreshToken // RFC 6749 6: the old one stays
	}
	if err := c.reg.Store().Put(c.server, principal, nt); err != nil {
		return nil, err
	}
	return nt, nil
}

// loginOf is the login client of oc (that of its per-user token
// handler's refreshes too), nil when oc has none.
func loginOf(oc oauthClient) *loginClient {
	switch h := oc.h.(type) {
	case *loginClient:
		return h
	case *tokenHandler:
		return h.refresher
	}
	return nil
}

// loginHint says how to log in to the server.
func (c *loginClient) loginHint() string {
	return "log in with: opentool-host auth login " + c.server
}

// Authorize implements auth.OAuthHandler: on a 401 with a token held,
// one refresh (the server found the token invalid); a 403 other than
// insufficient_scope is the server's answer (nil: the SDK returns it).
// Otherwise ErrNeedsAuthorization: a person must log in (or log in
// again, for the scopes a 403 insufficient_scope asks).
func (c *loginClient) Authorize(_ context.Context, req *http.Request, resp *http.Response) error {
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 1<<16))
	_ = resp.Body.Close()
	c.challenge.Store(&http.Response{StatusCode: resp.StatusCode, Header: resp.Header.Clone(), Request: &http.Request{Method: http.MethodPost, URL: req.URL}})
	cs, _ := oauthex.ParseWWWAuthenticate(resp.Header[http.CanonicalHeaderKey("WWW-Authenticate")])
	bearerErr := ""
	for _, ch := range cs {
		if ch.Scheme == "bearer" && ch.Params["error"] != "" {
			bearerErr = ch.Params["error"]
		}
	}
	if resp.StatusCode == http.StatusForbidden {
		if bearerErr != "insufficient_scope" {
			return nil
		}
		return c.needing(fmt.Errorf("%w (HTTP 403 %w): the server asks for more scopes than the login granted; %s", ErrNeedsAuthorization, errInsufficientScope, c.loginHint()))
	}
	if t, err := c.reg.Store().Get(c.server, ""); err == nil && t.RefreshToken != "" {
		if _, err := c.refresh(t); err == nil {
			return nil
		}
	}
	return c.needing(fmt.Errorf("%w: %s", ErrNeedsAuthorization, c.loginHint()))
}

// begin is the login of the server (oauthlogin.Begin) for principal:
// the shared "" of a server with shared credentials, a caller's own of
// a per-user server (each refused for the other kind): an unauthenticated POST of initialize to the server's
// URL for its 401 and WWW-Authenticate, then the SDK's authorization
// code flow (auth.AuthorizationCodeHandler: Protected Resource Metadata,
// authorization server metadata, the declared client with its issuer
// pinned, else a Client ID Metadata Document, else Dynamic Client
// Registration; PKCE S256, resource, iss, scope selection) on its own
// goroutine for up to oauthlogin.LoginWindow. It returns the
// authorization URL once the flow reaches the person's step; the code
// comes back at the registry's callback, and the token and the client
// that refreshes it go in the Store.
func (c *loginClient) begin(ctx context.Context, principal string) (string, error) {
	if principal != "" && !c.s.PerUser() {
		return "", fmt.Errorf("%q is declared with shared credentials: one login serves every caller", c.server)
	}
	if principal == "" && c.s.PerUser() {
		return "", fmt.Errorf("%q is declared with per-user credentials: each caller logs in for itself", c.server)
	}
	var req *http.Request
	var resp *http.Response
	if ch := c.challenge.Load(); ch != nil {
		req, resp = ch.Request, &http.Response{StatusCode: ch.StatusCode, Header: ch.Header, Body: http.NoBody}
	} else {
		var err error
		if req, resp, err = c.probe(ctx); err != nil {
			return "", err
		}
	}
	urls := make(chan string, 1)
	o := c.s.OAuth
	cfg := &auth.AuthorizationCodeHandlerConfig{
		RedirectURL:         c.reg.RedirectURL(),
		Client:              c.hc,
		RequestRefreshToken: true,
		ScopeFilter: func(found []string) []string {
			if len(found) == 0 {
				found = o.Scopes
			}
			if prev := c.asked.Load(); prev != nil {
				for _, sc := range *prev {
					if !slices.Contains(found, sc) {
						found = append(slices.Clone(found), sc)
					}
				}
			}
			c.asked.Store(&found)
			return found
		},
		NewTokenSource: func(ctx context.Context, cfg *oauth2.Config, t *oauth2.Token) (oauth2.TokenSource, error) {
			kc := &oauthlogin.Client{ClientID: cfg.ClientID, ClientSecret: cfg.ClientSecret, TokenURL: cfg.Endpoint.TokenURL, AuthStyle: cfg.Endpoint.AuthStyle}
			if err := c.reg.Store().PutClient(c.server, principal, kc); err != nil {
				return nil, err
			}
			if err := c.reg.Store().Put(c.server, principal, t); err != nil {
				return nil, err
			}
			c.need.Store(nil)
			return storedSource{c: c, principal: principal}, nil
		},
	}
	if o.ClientID != "" {
		pc := &oauthex.ClientCredentials{ClientID: o.ClientID, Issuer: o.Issuer}
		if o.ClientSecret != "" {
			pc.ClientSecretAuth = &oauthex.ClientSecretAuth{ClientSecret: o.ClientSecret}
		}
		cfg.PreregisteredClient = pc
	} else {
		cfg.DynamicClientRegistrationConfig = &auth.DynamicClientRegistrationConfig{Metadata: &oauthex.ClientRegistrationMetadata{
			ClientName:    "opentool-host",
			RedirectURIs:  []string{c.reg.RedirectURL()},
			GrantTypes:    []string{"authorization_code", "refresh_token"},
			ResponseTypes: []string{"code"},
		}}
	}
	var finish func(error)
	cfg.AuthorizationCodeFetcher = func(ctx context.Context, args *auth.AuthorizationArgs) (*auth.AuthorizationResult, error) {
		u := withConsent(args.URL)
		r, fin, err := c.reg.Await(ctx, c.server, principal, u, func() { urls <- u }) // u handed out once its login is registered
		if err != nil {
			return nil, err
		}
		finish = fin
		if r.Code == "" {
			return nil, errors.New("the authorization server sent no code")
		}
		return &auth.AuthorizationResult{Code: r.Code, State: r.State, Iss: r.Iss}, nil
	}
	h, err := auth.NewAuthorizationCodeHandler(cfg)
	if err != nil {
		_ = resp.Body.Close()
		return "", fmt.Errorf("oauth: %w", err)
	}
	ended := make(chan error, 1)
	go func() {
		fctx, cancel := context.WithTimeout(context.Background(), oauthlogin.LoginWindow)
		defer cancel()
		err := h.Authorize(fctx, req, resp)
		if finish != nil {
			finish(err)
		}
		if c.ended != nil {
			c.ended(err)
		}
		ended <- err
	}()
	select {
	case u := <-urls:
		return u, nil
	case err := <-ended:
		if err == nil {
			err = errors.New("the flow ended without asking for a login")
		}
		return "", fmt.Errorf("login to %q: %w", c.server, err)
	case <-ctx.Done():
		return "", ctx.Err()
	}
}

// probe POSTs an initialize to the server without a token and returns
// the request and its 401 (or 403) response, whose body the caller
// closes. Errors: the server unreachable, or answering otherwise (it
// asks for no login).
func (c *loginClient) probe(ctx context.Context) (*http.Request, *http.Response, error) {
	body := `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"opentool-host","version":"login"}}}`
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.s.URL, strings.NewReader(body))
	if err != nil {
		return nil, nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	resp, err := (&http.Client{Timeout: oauthTimeout}).Do(req)
	if err != nil {
		return nil, nil, fmt.Errorf("login to %q: %w", c.server, err)
	}
	if !refusedAuth(int32(resp.StatusCode)) {
		_ = resp.Body.Close()
		return nil, nil, fmt.Errorf("login to %q: the server answered HTTP %d without a token: it asks for no login", c.server, resp.StatusCode)
	}
	return req, resp, nil
}

// withConsent is authorization URL u with prompt=consent added when its
// scope asks offline_access and it has no prompt: OpenID Connect Core
// section 11 has an authorization server ignore offline_access without
// it (oidc-provider drops it, and so the refresh token), and RFC 6749
// section 3.1 has one that does not know the parameter ignore it.
func withConsent(u string) string {
	p, err := url.Parse(u)
	if err != nil {
		return u
	}
	q := p.Query()
	if q.Get("prompt") != "" || !slices.Contains(strings.Fields(q.Get("scope")), "offline_access") {
		return u
	}
	q.Set("prompt", "consent")
	p.RawQuery = q.Encode()
	return p.String()
}
