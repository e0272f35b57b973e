package frontdoor

import (
	"net"

	"github.com/opentool-host/opentool-host/frontend/mcpapi"
	"github.com/opentool-host/opentool-host/host/access/oauth"
)

// OAuthConfig is the host as an OAuth 2.1 resource server (MCP
// authorization; docs/security.md, "Log in with OAuth"): the flags
// --oauth-issuer, --oauth-resource, --oauth-introspection,
// --oauth-introspection-client and the introspection secret.
type OAuthConfig struct {
	// Issuers are the trusted authorization servers (none: OAuth off).
	Issuers []string
	// Resource is this host's MCP endpoint URI that tokens must name in
	// "aud"; "" for http://ADDR/mcp of the listen address.
	Resource string
	// Introspection, IntrospectionClient and IntrospectionSecret are the
	// RFC 7662 endpoint and its client credentials ("": no introspection).
	Introspection, IntrospectionClient, IntrospectionSecret string
}

// verifier returns the verifier of c for a host listening on listen, nil
// when c has no issuer. Errors: oauth.New's.
func (c OAuthConfig) verifier(listen net.Addr) (*oauth.Verifier, error) {
	if len(c.Issuers) == 0 {
		return nil, nil
	}
	res := c.Resource
	if res == "" {
		res = mcpapi.DefaultResource(listen)
	}
	return oauth.New(oauth.Config{Issuers: c.Issuers, Resource: res, Introspection: c.Introspection,
		IntrospectionClient: c.IntrospectionClient, IntrospectionSecret: c.IntrospectionSecret})
}
