package oauth

import (
	"net/http"
	"net/url"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/oauthex"
)

// MetadataPath is where Protected Resource Metadata is served (RFC 9728
// §3); MetadataPath + the resource's path (/mcp) is its path-suffixed
// form (§3.1).
const MetadataPath = "/.well-known/oauth-protected-resource"

// ResourceName is the metadata's resource_name.
const ResourceName = "opentool-host"

// ResourceMetadata is what varies in this host's metadata (the rest is
// fixed: bearer_methods_supported ["header"], resource_name).
type ResourceMetadata struct {
	Resource             string
	AuthorizationServers []string
	ScopesSupported      []string
}

// MetadataURL is the URL of resource's metadata, as a 401's
// resource_metadata names it: resource's origin, MetadataPath, then
// resource's path ("http://h:1/mcp" → "http://h:1/.well-known/
// oauth-protected-resource/mcp").
func MetadataURL(resource string) string {
	u, err := url.Parse(resource)
	if err != nil {
		return resource
	}
	u.Path, u.RawPath, u.RawQuery = MetadataPath+strings.TrimSuffix(u.Path, "/"), "", ""
	return u.String()
}

// MetadataHandler serves the metadata that get returns at each request
// (the scopes follow reloads of the access rules), as RFC 9728 §3.2
// JSON by the Go SDK's auth.ProtectedResourceMetadataHandler
// (Access-Control-Allow-Origin: *, the metadata being public).
func MetadataHandler(get func() *ResourceMetadata) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		m := get()
		w.Header().Set("Cache-Control", "no-cache")
		auth.ProtectedResourceMetadataHandler(&oauthex.ProtectedResourceMetadata{
			Resource:               m.Resource,
			AuthorizationServers:   m.AuthorizationServers,
			ScopesSupported:        m.ScopesSupported,
			BearerMethodsSupported: []string{"header"},
			ResourceName:           ResourceName,
		}).ServeHTTP(w, r)
	})
}
