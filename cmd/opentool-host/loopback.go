package main

import (
	"encoding/json"
	"fmt"
	"slices"

	"github.com/urfave/cli/v2"

	"github.com/opentool-host/opentool-host/cmd/opentool-host/internal/cliflags"
	"github.com/opentool-host/opentool-host/cmd/opentool-host/internal/hostflags"
	"github.com/opentool-host/opentool-host/cmd/opentool-host/internal/opscmd"
	"github.com/opentool-host/opentool-host/declared/mcpadapter"
	"github.com/opentool-host/opentool-host/declared/oauthlogin"
	"github.com/opentool-host/opentool-host/host/discover"
	"github.com/opentool-host/opentool-host/protocol/decl"
)

// localFlags are the flags of run that a login without a running host
// reads (where the declarations are, the secrets, where and with which
// key the tokens are sealed), and --principal; auth takes run's other
// host flags too, hidden, so that run's command line serves as it is.
var localFlags = []string{"dir", "mcp-config", "state-dir", "secret", "secret-for", "secrets-file", "oauth-token-key", "principal"}

// localLogin is auth login's login without a running host
// (opscmd.LocalLogin): loginLocal, with the flags it reads.
func localLogin() opscmd.LocalLogin {
	var key cli.Flag
	for _, f := range oauthFlags() {
		if f.Names()[0] == "oauth-token-key" {
			key = f
		}
	}
	flags := hostflags.LocalFlags("warn", false, hostflags.DirFlag(false), key,
		&cli.StringFlag{Name: "principal", Usage: "login without a running host, to a server declared \"credentials\": \"per-user\": the `PRINCIPAL` the token serves (an API key's name, or an OAuth principal)"})
	var hidden []string
	for _, f := range flags {
		if n := f.Names()[0]; !slices.Contains(localFlags, n) {
			hidden = append(hidden, n)
		}
	}
	return opscmd.LocalLogin{Flags: cliflags.Hide(flags, hidden...), Run: loginLocal}
}

// loginLocal logs server name in without a running host: its
// declaration read from --dir and --mcp-config as run reads them
// (discover.ScanDir), the login on a loopback listener
// (mcpadapter.LoginLoopback), the token and its client written into
// the sealed store run opens (tokenFile, the key of --oauth-token-key).
// Errors (exit 2): no --oauth-token-key (a token in memory would die
// with this process), no --dir, --principal missing for a per-user
// server or given for a shared one; (exit 1) no such server, its
// declaration's fault, the store, the login's.
func loginLocal(c *cli.Context, name string, show func(string)) error {
	cfg, err := hostflags.Config(c)
	if err != nil {
		return err
	}
	if cfg.Dir == "" {
		return cli.Exit("auth login without a running host: give --dir (the plugins folder run serves), or start the host and log in through it (--url)", 2)
	}
	key, err := tokenKey(c, cfg.Secrets)
	if err != nil {
		return err
	}
	if key == "" {
		return cli.Exit("auth login without a running host: give --oauth-token-key NAME with --secret NAME=env:VAR|file:PATH, as run's: "+
			"the token goes into the sealed store the next run opens with that key (without one, run keeps tokens in memory only and would not see it)", 2)
	}
	scan, err := discover.ScanDir(cfg.Dir, cfg.MCPConfigs, nil)
	if err != nil {
		return cli.Exit("auth login: "+err.Error(), 1)
	}
	i := slices.IndexFunc(scan.Found, func(f discover.Candidate) bool { return f.Name == name })
	if i < 0 {
		return cli.Exit(fmt.Sprintf("auth login: %q: %v", name, oauthlogin.ErrUnknownServer), 1)
	}
	f := scan.Found[i]
	if f.Fault != "" {
		return cli.Exit(fmt.Sprintf("auth login: %q: %s", name, f.Fault), 1)
	}
	var l decl.Launch
	if f.Launch == "" || json.Unmarshal([]byte(f.Launch), &l) != nil {
		return cli.Exit(fmt.Sprintf("auth login: %q: %v", name, oauthlogin.ErrUnknownServer), 1)
	}
	principal := c.String("principal")
	switch {
	case l.Server.PerUser() && principal == "":
		return cli.Exit(fmt.Sprintf("auth login: %q is declared \"credentials\": \"per-user\": give --principal, whose calls the token serves", name), 2)
	case !l.Server.PerUser() && principal != "":
		return cli.Exit(fmt.Sprintf("auth login: %q is declared with shared credentials (one login for every caller): leave out --principal", name), 2)
	}
	store, where, err := sealedStore(c, cfg, key)
	if err != nil {
		return cli.Exit("auth login: "+err.Error(), 1)
	}
	if err := mcpadapter.LoginLoopback(c.Context, name, l.Server, principal, store, show); err != nil {
		return cli.Exit("auth login: "+err.Error(), 1)
	}
	fmt.Fprintf(c.App.Writer, "logged in to %s; the token is sealed in %s: the next opentool-host run with this --dir, --state-dir, --task-store and --oauth-token-key uses it (in a file, a host already running sees it only after it restarts)\n", name, where)
	return nil
}
