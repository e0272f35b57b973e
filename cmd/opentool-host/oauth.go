package main

import (
	"fmt"
	"os"
	"strings"

	"github.com/urfave/cli/v2"

	"github.com/opentool-host/opentool-host/frontend/frontdoor"
	"github.com/opentool-host/opentool-host/protocol/decl"
)

// introspectionSecret is the name of the --secret holding the
// introspection client's secret.
const introspectionSecret = "oauth-introspection"

// oauthFlags are run's flags of the host as an OAuth resource server
// (frontdoor.OAuthConfig).
func oauthFlags() []cli.Flag {
	return []cli.Flag{
		&cli.StringSliceFlag{Name: "oauth-issuer", Usage: "also accept OAuth access tokens (JWT, RFC 9068) of the authorization server `URL` (repeatable; https, http only on loopback), found by RFC 8414 or OpenID discovery, checked against its JWKS; " +
			"the keys file's \"tokens\" rules say what each token may call by scope and claim. /.well-known/oauth-protected-resource[/mcp] then serves RFC 9728 metadata", EnvVars: []string{"OPENTOOL_OAUTH_ISSUER"}},
		&cli.StringFlag{Name: "oauth-resource", Usage: "this host's MCP endpoint `URL` as clients reach it, which tokens must name in aud (RFC 8707); default http://ADDR/mcp of --addr", EnvVars: []string{"OPENTOOL_OAUTH_RESOURCE"}},
		&cli.StringFlag{Name: "oauth-introspection", Usage: "send opaque (non-JWT) tokens to the RFC 7662 introspection endpoint `URL` (answers cached up to 60 s)", EnvVars: []string{"OPENTOOL_OAUTH_INTROSPECTION"}},
		&cli.StringFlag{Name: "oauth-introspection-client", Usage: "the client `ID` the host introspects as; its secret is --secret " + introspectionSecret + "=... or --oauth-introspection-secret-file", EnvVars: []string{"OPENTOOL_OAUTH_INTROSPECTION_CLIENT"}},
		&cli.StringFlag{Name: "oauth-token-key", Usage: "the --secret `NAME` holding the key (at least 32 bytes) of the tokens the host keeps as the OAuth client of servers declared by URL, sealed in STATE_DIR/oauth-tokens-HASH.sealed, or in the Redis of a Redis --task-store, shared by the replicas (without it they are kept in memory only); " +
			"servers declared \"credentials\": \"per-user\" fail at their start without it", EnvVars: []string{"OPENTOOL_OAUTH_TOKEN_KEY"}},
		&cli.StringFlag{Name: "oauth-introspection-secret-file", Usage: "`FILE` holding the introspection client's secret (trailing newlines removed)", EnvVars: []string{"OPENTOOL_OAUTH_INTROSPECTION_SECRET_FILE"}},
	}
}

// oauthConfig is the OAuthConfig of run's flags; secrets are the
// operator's (--secret). Errors (exit 2): OAuth flags without
// --oauth-issuer, a secret that cannot be read.
func oauthConfig(c *cli.Context, secrets map[string]decl.Secret) (frontdoor.OAuthConfig, error) {
	cfg := frontdoor.OAuthConfig{Issuers: c.StringSlice("oauth-issuer"), Resource: c.String("oauth-resource"),
		Introspection: c.String("oauth-introspection"), IntrospectionClient: c.String("oauth-introspection-client")}
	if len(cfg.Issuers) == 0 && (cfg.Resource != "" || cfg.Introspection != "") {
		return cfg, cli.Exit("--oauth-resource and --oauth-introspection need --oauth-issuer", 2)
	}
	if cfg.Introspection == "" {
		return cfg, nil
	}
	s, ok := secrets[introspectionSecret]
	if f := c.String("oauth-introspection-secret-file"); f != "" {
		s, ok = decl.Secret{File: f}, true
	}
	if !ok {
		return cfg, cli.Exit("--oauth-introspection needs the client's secret: --secret "+introspectionSecret+"=env:VAR|file:PATH or --oauth-introspection-secret-file", 2)
	}
	v, err := secretValue(s)
	if err != nil {
		return cfg, cli.Exit("the introspection secret: "+err.Error(), 2)
	}
	cfg.IntrospectionSecret = v
	return cfg, nil
}

// secretValue reads a secret's value: the file's, trailing newlines
// removed, or the variable's.
func secretValue(s decl.Secret) (string, error) {
	if s.File != "" {
		b, err := os.ReadFile(s.File)
		if err != nil {
			return "", err
		}
		return strings.TrimRight(string(b), "\r\n"), nil
	}
	v, ok := os.LookupEnv(s.Env)
	if !ok {
		return "", fmt.Errorf("variable %s is not set", s.Env)
	}
	return v, nil
}

// minTokenKey is the shortest --oauth-token-key, bytes.
const minTokenKey = 32

// tokenKey is the value of --oauth-token-key (a --secret's name, its
// value at least minTokenKey bytes), the key the OAuth tokens the host
// keeps are sealed with; "" without the flag. Errors (exit 2): the
// secret is not declared, cannot be read, or is too short.
func tokenKey(c *cli.Context, secrets map[string]decl.Secret) (string, error) {
	name := c.String("oauth-token-key")
	if name == "" {
		return "", nil
	}
	s, ok := secrets[name]
	if !ok {
		return "", cli.Exit("--oauth-token-key "+name+": no such --secret (declare it: --secret "+name+"=env:VAR|file:PATH)", 2)
	}
	v, err := secretValue(s)
	if err != nil {
		return "", cli.Exit("--oauth-token-key "+name+": "+err.Error(), 2)
	}
	if len(v) < minTokenKey {
		return "", cli.Exit(fmt.Sprintf("--oauth-token-key %s: the key is %d bytes, at least %d are needed", name, len(v), minTokenKey), 2)
	}
	return v, nil
}
