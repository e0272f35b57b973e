package main

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"net"
	"os"
	"path/filepath"
	"sync/atomic"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/opentool-host/opentool-host/declared/oauthlogin"
	"github.com/opentool-host/opentool-host/frontend/frontdoor"
	"github.com/opentool-host/opentool-host/host/core"
	"github.com/opentool-host/opentool-host/host/tasks"
)

// logins is run's login step of the servers declared by URL with the
// authorization code grant: the registry (oauthlogin.Registry) whose
// callback is http://ADDR/oauth/callback of --addr, its tokens in
// STATE_DIR/oauth-tokens-HASH.sealed (HASH: the plugins folder's
// absolute path; sealed with the key of --oauth-token-key, tokenKey),
// in the Redis of --task-store when it names one (oauthlogin.RedisStore,
// sealed with the same key: every replica uses one login),
// or in memory without that flag (a login then lasts until the host
// stops, and no server may be declared "credentials": "per-user"). A
// login rescans the plugins (its server connects at once) once srv is
// set; sealed is whether the tokens are kept sealed on disk. Errors
// (exit 2): tokenKey's, or a token file that does not open with the key.
func logins(c *cli.Context, cfg core.Config, srv *atomic.Pointer[frontdoor.Server]) (reg *oauthlogin.Registry, sealed bool, err error) {
	var store oauthlogin.ClientStore = &oauthlogin.MemoryStore{}
	v, err := tokenKey(c, cfg.Secrets)
	if err != nil {
		return nil, false, err
	}
	if v != "" {
		if store, _, err = sealedStore(c, cfg, v); err != nil {
			return nil, false, cli.Exit(err.Error(), 2)
		}
		sealed = true
	}
	host, port, err := net.SplitHostPort(c.String("addr"))
	if err != nil {
		return nil, false, cli.Exit("--addr: "+err.Error(), 2)
	}
	if host == "" || host == "0.0.0.0" || host == "::" {
		host = "127.0.0.1" // the person's browser is on this machine, as the CLI that prints the URL
	}
	redirect := "http://" + net.JoinHostPort(host, port) + oauthlogin.CallbackPath
	return oauthlogin.NewRegistry(store, redirect, func(string, string) {
		if s := srv.Load(); s != nil {
			_ = s.Rescan(context.Background())
		}
	}), sealed, nil
}

// sealedStore opens the sealed token store of a host of cfg with key (the
// value of --oauth-token-key's secret): the Redis of --task-store when it
// names one (oauthlogin.RedisStore: every replica, and a running host,
// sees a token put there at once), else the file tokenFile
// (oauthlogin.FileStore). where names it for a person: the file's path,
// or "the Redis of --task-store". Errors: the store's (Redis not
// answering within 10 s, a file that does not open with key).
func sealedStore(c *cli.Context, cfg core.Config, key string) (store oauthlogin.ClientStore, where string, err error) {
	if ts := c.String("task-store"); ts != "" && ts != tasks.StoreMemory {
		// The replicas' Redis (tasks.CheckStore checked the URL): one
		// login for them all.
		ctx, cancel := context.WithTimeout(c.Context, 10*time.Second)
		defer cancel()
		rs, err := oauthlogin.NewRedisStore(ctx, ts, []byte(key))
		if err != nil {
			return nil, "", err
		}
		return rs, "the Redis of --task-store", nil
	}
	path := tokenFile(cfg)
	fs, err := oauthlogin.OpenFileStore(path, []byte(key))
	if err != nil {
		return nil, "", err
	}
	return fs, path, nil
}

// tokenFile is where a host of cfg keeps its sealed tokens:
// STATE_DIR/oauth-tokens-HASH.sealed (STATE_DIR: cfg.StateDir, default
// $TMPDIR/opentool-host; HASH: the first 8 bytes of the sha256 of the
// plugins folder's absolute path, in hex), which run and a login
// without a running host (auth login --local) share.
func tokenFile(cfg core.Config) string {
	parent := cfg.StateDir
	if parent == "" {
		parent = filepath.Join(os.TempDir(), "opentool-host")
	}
	abs, err := filepath.Abs(cfg.Dir)
	if err != nil {
		abs = cfg.Dir
	}
	sum := sha256.Sum256([]byte(abs))
	return filepath.Join(parent, "oauth-tokens-"+hex.EncodeToString(sum[:8])+".sealed")
}
