package e2e_test

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"os/exec"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/auth/extauth"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/modelcontextprotocol/go-sdk/oauthex"

	"github.com/opentool-host/opentool-host/testkit"
	"github.com/opentool-host/opentool-host/testkit/oidcprovider"
)

// The redirect URI of the SDK clients' authorization code flow: nothing
// listens there, the test (the browser) takes the redirect and hands it to
// the client. A loopback URI of a native client (RFC 8252 section 7.3).
const sdkRedirect = "http://127.0.0.1:22010/callback"

// TestOIDCProviderSDKClients: the MCP SDKs' own OAuth clients, given only the
// host's /mcp URL, discover the host from its 401 and RFC 9728 metadata,
// then oidc-provider, and call add: the Go SDK's AuthorizationCodeHandler
// (dynamic registration, PKCE, the test as the browser logging alice in)
// and extauth.ClientCredentialsHandler (unattended), the Go handler's
// step-up on the host's 403 insufficient_scope, the TypeScript SDK's
// StreamableHTTPClientTransport with an OAuthClientProvider (the same
// code flow) and its ClientCredentialsProvider. Each sees exactly the
// calculator's functions (scope calc, the only one scopes_supported names).
func TestOIDCProviderSDKClients(t *testing.T) {
	p := oidcprovider.Start(t)
	h := startOAuthHost(t, p)
	// The Go SDK's client credentials handler sends no resource (RFC 8707)
	// parameter; the provider's default audience is then the host.
	p.SetDefaultResource(t, h.resource)

	t.Run("go-authorization-code", func(t *testing.T) {
		handler, err := auth.NewAuthorizationCodeHandler(&auth.AuthorizationCodeHandlerConfig{
			DynamicClientRegistrationConfig: &auth.DynamicClientRegistrationConfig{Metadata: &oauthex.ClientRegistrationMetadata{
				ClientName:              "opentool-host e2e (Go SDK)",
				RedirectURIs:            []string{sdkRedirect},
				GrantTypes:              []string{"authorization_code", "refresh_token"},
				ResponseTypes:           []string{"code"},
				TokenEndpointAuthMethod: "none",
			}},
			RedirectURL:              sdkRedirect,
			AuthorizationCodeFetcher: browserFor(p, "alice", nil),
		})
		if err != nil {
			t.Fatal(err)
		}
		goSDKCall(t, &mcp.StreamableClientTransport{Endpoint: h.resource, OAuthHandler: handler, MaxRetries: -1})
	})

	// Step-up (MCP authorization, "Step-Up Authorization Flow"): the first
	// login asks only for notes, which no rule grants; the host's 403
	// insufficient_scope names calc, and the handler logs in again for
	// notes and calc.
	t.Run("go-step-up", func(t *testing.T) {
		logins := 0
		first := true
		handler, err := auth.NewAuthorizationCodeHandler(&auth.AuthorizationCodeHandlerConfig{
			DynamicClientRegistrationConfig: &auth.DynamicClientRegistrationConfig{Metadata: &oauthex.ClientRegistrationMetadata{
				ClientName: "opentool-host e2e step-up (Go SDK)", RedirectURIs: []string{sdkRedirect},
				GrantTypes: []string{"authorization_code"}, ResponseTypes: []string{"code"}, TokenEndpointAuthMethod: "none",
			}},
			RedirectURL: sdkRedirect,
			ScopeFilter: func(discovered []string) []string {
				if first {
					first = false
					return []string{"notes"}
				}
				return discovered
			},
			AuthorizationCodeFetcher: browserFor(p, "bob", &logins),
		})
		if err != nil {
			t.Fatal(err)
		}
		// The SDK authorizes once per request: the initialize that got the
		// 401 is retried with the notes token and gets the 403, which the
		// connect returns; the next connect's 403 makes it step up.
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		defer cancel()
		_, err = mcp.NewClient(&mcp.Implementation{Name: "e2e-oauth", Version: "1"}, nil).Connect(ctx,
			&mcp.StreamableClientTransport{Endpoint: h.resource, OAuthHandler: handler, MaxRetries: -1}, &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
		if err == nil || !strings.Contains(err.Error(), "Forbidden") || logins != 1 {
			t.Fatalf("first connect (scope notes): %v after %d logins, want Forbidden after 1", err, logins)
		}
		goSDKCall(t, &mcp.StreamableClientTransport{Endpoint: h.resource, OAuthHandler: handler, MaxRetries: -1})
		if logins != 2 {
			t.Errorf("%d logins, want 2 (notes, then notes and calc after the 403)", logins)
		}
	})

	t.Run("go-client-credentials", func(t *testing.T) {
		handler, err := extauth.NewClientCredentialsHandler(&extauth.ClientCredentialsHandlerConfig{Credentials: &oauthex.ClientCredentials{
			ClientID:         oidcprovider.ClientBasic.ID,
			ClientSecretAuth: &oauthex.ClientSecretAuth{ClientSecret: oidcprovider.ClientBasic.Secret},
			Issuer:           p.Issuer,
		}})
		if err != nil {
			t.Fatal(err)
		}
		goSDKCall(t, &mcp.StreamableClientTransport{Endpoint: h.resource, OAuthHandler: handler, MaxRetries: -1})
	})

	t.Run("ts-authorization-code", func(t *testing.T) {
		tsOAuthClient(t, p, "code", h.resource, sdkRedirect)
	})
	t.Run("ts-client-credentials", func(t *testing.T) {
		tsOAuthClient(t, p, "client_credentials", h.resource, p.Issuer, oidcprovider.ClientPost.ID, oidcprovider.ClientPost.Secret)
	})
}

// browserFor is an AuthorizationCodeFetcher that logs user in at p as a
// browser would, counting the logins in *logins (when not nil).
func browserFor(p *oidcprovider.Provider, user string, logins *int) auth.AuthorizationCodeFetcher {
	return func(ctx context.Context, args *auth.AuthorizationArgs) (*auth.AuthorizationResult, error) {
		if logins != nil {
			*logins++
		}
		back, err := p.Login(ctx, args.URL, user)
		if err != nil {
			return nil, err
		}
		q := back.Query()
		return &auth.AuthorizationResult{Code: q.Get("code"), State: q.Get("state"), Iss: q.Get("iss")}, nil
	}
}

// goSDKCall connects the Go SDK's client over tr, and checks that it lists
// the calculator's functions and that add works.
func goSDKCall(t *testing.T, tr *mcp.StreamableClientTransport) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "e2e-oauth", Version: "1"}, nil).Connect(ctx, tr, &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
	if err != nil {
		t.Fatalf("connect: %v", err)
	}
	defer cs.Close()
	if got := toolNames(t, cs); !slices.Equal(got, calcTools) {
		t.Errorf("tools/list %v, want %v", got, calcTools)
	}
	res, err := mcpCall(t, cs, "add", map[string]any{"a": 20, "b": 22})
	if b, _ := json.Marshal(res); err != nil || res.IsError || !strings.Contains(string(b), `"result":42`) {
		t.Errorf("add: %s %v", b, err)
	}
}

// tsOAuthClient runs e2e/desktop/oauthclient.mjs (the TypeScript SDK) in
// mode against url, playing the browser (as alice) when it prints
// AUTHORIZE, and checks what it listed and add's result.
func tsOAuthClient(t *testing.T, p *oidcprovider.Provider, mode, url string, args ...string) {
	t.Helper()
	node := dcSDKNode(t)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	argv := append(append([]string{"oauthclient.mjs", mode, url}, args...), "add", `{"a":20,"b":22}`)
	cmd := exec.CommandContext(ctx, node, argv...)
	cmd.Dir = dcFolder(t)
	stderr := &testkit.SyncBuffer{}
	cmd.Stderr = stderr
	stdin, stdout := testkit.StartPiped(t, cmd)
	defer func() { _ = cmd.Wait() }()
	var last string
	sc := bufio.NewScanner(stdout)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		last = sc.Text()
		if u, ok := strings.CutPrefix(last, "AUTHORIZE "); ok {
			back, err := p.Login(ctx, u, "alice")
			if err != nil {
				t.Fatalf("login: %v\nclient stderr:\n%s", err, stderr.String())
			}
			_, _ = io.WriteString(stdin, back.String()+"\n")
		}
	}
	_ = stdin.Close()
	var out struct {
		Tools  []string
		Result struct {
			IsError           bool           `json:"isError"`
			StructuredContent map[string]any `json:"structuredContent"`
		}
	}
	if err := json.Unmarshal([]byte(last), &out); err != nil {
		t.Fatalf("client printed %q (%v)\nstderr:\n%s", last, err, stderr.String())
	}
	if !slices.Equal(out.Tools, calcTools) {
		t.Errorf("tools/list %v, want %v", out.Tools, calcTools)
	}
	if out.Result.IsError || out.Result.StructuredContent["result"] != float64(42) {
		t.Errorf("add: %+v", out.Result)
	}
}
