package mcpadapter

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/auth/extauth"
	"github.com/modelcontextprotocol/go-sdk/oauthex"
	"golang.org/x/oauth2"

	"github.com/opentool-host/opentool-host/declared/oauthlogin"
	"github.com/opentool-host/opentool-host/protocol/decl"
)

// ErrNeedsAuthorization is the reason of a server declared by URL that
// answered 401 Unauthorized (or 403 Forbidden) and that the host cannot
// log in to: no "oauth" is declared, or its grant needs a person
// (decl.GrantAuthorizationCode) and no person has logged in (login.go),
// or the host has no login step (Options.Logins). The error Load and /health give wraps it and names the
// status; it is never retried as an HTTP+SSE server (sseFallback).
var ErrNeedsAuthorization = errors.New("needs authorization")

// oauthTimeout bounds each request of the OAuth client (metadata,
// registration, token), and the whole of one Authorize.
const oauthTimeout = 30 * time.Second

// oauthClient is the OAuth client of the adapter's server (its "oauth",
// shared credentials: one for every session to the server, so that one
// token serves every caller), or why it could not be made. Zero: none
// declared.
type oauthClient struct {
	h   auth.OAuthHandler
	err error
}

// newOAuthClient is the OAuth client of server name (declaration s):
// for decl.GrantClientCredentials the client-credentials extension
// (extauth.ClientCredentialsHandler: Protected Resource Metadata
// discovery, RFC 9728, from WWW-Authenticate then the well-known paths;
// authorization server metadata, RFC 8414 / OpenID discovery, with the
// 2025-03-26 fallbacks; an authorization server whose issuer is not the
// declared "issuer" refused before the secret is sent; the token request
// with the declared client's secret, basic or post as the server
// supports, or with a client assertion signed by its "privateKeyJwt"
// key (withAssertion, jwtauth.go), and "resource", withResource); for the authorization code
// grant the login client of logins (login.go), or needsLogin when the
// host has none. Zero when s declares no "oauth".
func newOAuthClient(name string, s decl.MCPServer, logins *oauthlogin.Registry) oauthClient {
	o := s.OAuth
	switch {
	case o == nil:
		return oauthClient{}
	case o.Grant == decl.GrantClientCredentials:
		secret, hc := o.ClientSecret, oauthHTTPClient(s)
		if o.PrivateKeyJWT != nil {
			signer, err := signingKey(o.PrivateKeyJWT)
			if err != nil {
				return oauthClient{err: fmt.Errorf("oauth: %w", err)}
			}
			secret = unsentSecret
			hc.Transport = withAssertion{base: hc.Transport, clientID: o.ClientID, issuer: o.Issuer, signer: signer, now: time.Now}
		}
		h, err := extauth.NewClientCredentialsHandler(&extauth.ClientCredentialsHandlerConfig{
			Credentials: &oauthex.ClientCredentials{ClientID: o.ClientID, Issuer: o.Issuer, ClientSecretAuth: &oauthex.ClientSecretAuth{ClientSecret: secret}},
			HTTPClient:  hc,
		})
		if err != nil {
			return oauthClient{err: fmt.Errorf("oauth: %w", err)}
		}
		return oauthClient{h: detached{h}}
	case logins != nil:
		return oauthClient{h: newLoginClient(name, s, logins)}
	}
	return oauthClient{h: needsLogin{}}
}

// detached is an OAuth handler whose Authorize runs on a context that
// outlives the request that needed it: the client-credentials handler
// keeps Authorize's context in its token source and fetches every later
// token with it, which would fail once the connection attempt that first
// asked has ended. The caller's context still bounds the wait, and
// oauthTimeout the flow.
type detached struct{ auth.OAuthHandler }

// Authorize implements auth.OAuthHandler.
func (d detached) Authorize(ctx context.Context, req *http.Request, resp *http.Response) error {
	done := make(chan error, 1)
	go func() { done <- d.OAuthHandler.Authorize(context.WithoutCancel(ctx), req, resp) }()
	select {
	case err := <-done:
		return err
	case <-ctx.Done():
		return ctx.Err()
	}
}

// needsLogin is the OAuth handler of a server whose login needs a
// person (the authorization code grant): it has no token, and each 401
// fails with ErrNeedsAuthorization.
type needsLogin struct{}

// TokenSource implements auth.OAuthHandler: none.
func (needsLogin) TokenSource(context.Context) (oauth2.TokenSource, error) { return nil, nil }

// Authorize implements auth.OAuthHandler.
func (needsLogin) Authorize(_ context.Context, _ *http.Request, resp *http.Response) error {
	_ = resp.Body.Close()
	return fmt.Errorf("%w: the server asks for an OAuth login by a person (the authorization code grant), which this host cannot take (no login: opentool-host run has it); declare \"grant\": \"client_credentials\" for a machine account", ErrNeedsAuthorization)
}

// authError is err, a connection attempt's over t, saying
// ErrNeedsAuthorization when t is a URL server's streamable transport
// whose first POST was answered 401 or 403 and err does not say it yet.
func authError(t any, err error) error {
	r, ok := t.(*remote)
	if !ok || err == nil || errors.Is(err, ErrNeedsAuthorization) {
		return err
	}
	if code := r.probe.code.Load(); refusedAuth(code) {
		return fmt.Errorf("%w (HTTP %d): %w", ErrNeedsAuthorization, code, err)
	}
	return err
}

// refusedAuth reports whether HTTP status code is the refusal of a
// request without the authorization it needs (401, 403).
func refusedAuth(code int32) bool {
	return code == http.StatusUnauthorized || code == http.StatusForbidden
}
