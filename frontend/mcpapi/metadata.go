package mcpapi

import (
	"net"
	"net/http"

	"github.com/opentool-host/opentool-host/frontend/route"
	"github.com/opentool-host/opentool-host/host/access"
	"github.com/opentool-host/opentool-host/host/access/oauth"
)

// MetadataRoutes are the public routes of the Protected Resource
// Metadata of /mcp (MCP authorization; RFC 9728 §3: oauth.MetadataPath,
// and its form suffixed by Path, §3.1) when guard takes OAuth access
// tokens; none otherwise. The metadata names the issuers, the resource
// and the scopes of the token rules in force at each request.
func MetadataRoutes(guard *access.Guard) []route.Route {
	if guard.Metadata() == nil {
		return nil
	}
	h := oauth.MetadataHandler(guard.Metadata)
	return []route.Route{
		{Pattern: http.MethodGet + " " + oauth.MetadataPath, Handler: h, Public: true},
		{Pattern: http.MethodGet + " " + oauth.MetadataPath + Path, Handler: h, Public: true},
	}
}

// DefaultResource is the resource URI of /mcp on the listen address,
// "http://ADDR/mcp": the default of --oauth-resource.
func DefaultResource(listen net.Addr) string { return "http://" + listen.String() + Path }
