package mcpadapter

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/opentool-host/opentool-host/declared/oauthlogin"
	"github.com/opentool-host/opentool-host/protocol/decl"
)

// LoopbackCallbackPath is the path of the redirect URI of a login made
// without a running host (LoginLoopback):
// http://127.0.0.1:PORT/callback.
const LoopbackCallbackPath = "/callback"

// LoginLoopback logs server name (declaration s, declared by URL with
// "oauth" of the authorization code grant) in for principal ("" for a
// server with shared credentials, a caller's principal as host/access
// names it for a per-user one) without a running host, as a native
// application does (RFC 8252 section 7.3): it listens on 127.0.0.1 at a
// port the system picks, for the redirect URI
// http://127.0.0.1:PORT/callback (which Dynamic Client Registration
// registers; a pre-registered client's authorization server must allow
// any port of a loopback redirect URI, RFC 8252 section 7.3), and runs
// the host's own login flow (loginClient.begin: PKCE S256, resource,
// iss, scope selection) with it. show is given the authorization URL
// once the flow reaches the person's step; LoginLoopback returns when
// the token and the client that refreshes it are in store, the flow
// failed, ctx ended, or oauthlogin.LoginWindow passed. Errors: s is not
// such a server (oauthlogin.ErrUnknownServer), the listener, the flow's
// (the server unreachable, its metadata, registration, the token
// request, an authorization response with "error").
func LoginLoopback(ctx context.Context, name string, s decl.MCPServer, principal string, store oauthlogin.ClientStore, show func(authURL string)) error {
	if s.URL == "" || s.OAuth == nil || s.OAuth.Grant == decl.GrantClientCredentials {
		return fmt.Errorf("%q: %w", name, oauthlogin.ErrUnknownServer)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return fmt.Errorf("login to %q: the loopback listener: %w", name, err)
	}
	redirect := "http://127.0.0.1:" + strconv.Itoa(ln.Addr().(*net.TCPAddr).Port) + LoopbackCallbackPath
	reg := oauthlogin.NewRegistry(store, redirect, nil)
	mux := http.NewServeMux()
	mux.HandleFunc("GET "+LoopbackCallbackPath, reg.Callback)
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = srv.Serve(ln) }()
	defer func() {
		// The callback's page is written before the flow ends; let it go
		// out, then close.
		sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = srv.Shutdown(sctx)
	}()

	ended := make(chan error, 1)
	var once sync.Once
	c := newLoginClient(name, s, reg)
	c.ended = func(err error) { once.Do(func() { ended <- err }) }
	u, err := reg.Begin(ctx, name, principal)
	if err != nil {
		return err
	}
	show(u)
	wctx, cancel := context.WithTimeout(ctx, oauthlogin.LoginWindow)
	defer cancel()
	select {
	case err := <-ended:
		if err != nil {
			return fmt.Errorf("login to %q: %w", name, err)
		}
		return nil
	case <-wctx.Done():
		if errors.Is(wctx.Err(), context.DeadlineExceeded) && ctx.Err() == nil {
			return fmt.Errorf("login to %q: no authorization response within the login window (%v)", name, oauthlogin.LoginWindow)
		}
		return wctx.Err()
	}
}
