package main

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"net"
	"os"
	"path/filepath"
	"sync/atomic"

	"github.com/urfave/cli/v2"

	"github.com/opentool-host/opentool-host/declared/oauthlogin"
	"github.com/opentool-host/opentool-host/frontend/frontdoor"
	"github.com/opentool-host/opentool-host/host/core"
)

// tokensSecret is the name of the --secret whose value seals the OAuth
// tokens the host keeps as the client of servers declared by URL.
const tokensSecret = "oauth-tokens"

// logins is run's login step of the servers declared by URL with the
// authorization code grant: the registry (oauthlogin.Registry) whose
// callback is http://ADDR/oauth/callback of --addr, its tokens in
// STATE_DIR/oauth-tokens-HASH.sealed (HASH: the plugins folder's
// absolute path; sealed with --secret oauth-tokens=...), or in memory
// without that secret (a login then lasts until the host stops). A
// login rescans the plugins (its server connects at once) once srv is
// set. Errors (exit 2): the secret unreadable, or a token file that
// does not open with it.
func logins(c *cli.Context, cfg core.Config, srv *atomic.Pointer[frontdoor.Server]) (*oauthlogin.Registry, error) {
	var store oauthlogin.ClientStore = &oauthlogin.MemoryStore{}
	if s, ok := cfg.Secrets[tokensSecret]; ok {
		v, err := secretValue(s)
		if err != nil {
			return nil, cli.Exit("--secret "+tokensSecret+": "+err.Error(), 2)
		}
		parent := cfg.StateDir
		if parent == "" {
			parent = filepath.Join(os.TempDir(), "opentool-host")
		}
		abs, err := filepath.Abs(cfg.Dir)
		if err != nil {
			abs = cfg.Dir
		}
		sum := sha256.Sum256([]byte(abs))
		fs, err := oauthlogin.OpenFileStore(filepath.Join(parent, "oauth-tokens-"+hex.EncodeToString(sum[:8])+".sealed"), []byte(v))
		if err != nil {
			return nil, cli.Exit(err.Error(), 2)
		}
		store = fs
	}
	host, port, err := net.SplitHostPort(c.String("addr"))
	if err != nil {
		return nil, cli.Exit("--addr: "+err.Error(), 2)
	}
	if host == "" || host == "0.0.0.0" || host == "::" {
		host = "127.0.0.1" // the person's browser is on this machine, as the CLI that prints the URL
	}
	redirect := "http://" + net.JoinHostPort(host, port) + oauthlogin.CallbackPath
	return oauthlogin.NewRegistry(store, redirect, func(string, string) {
		if s := srv.Load(); s != nil {
			_ = s.Rescan(context.Background())
		}
	}), nil
}
