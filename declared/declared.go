// Package declared serves the plugins a file in the plugins folder
// declares (package protocol/decl): the MCP server of a NAME.mcp.json,
// for which the host is the MCP client (package mcpadapter), and the
// command-line tools of a NAME.tools.json (package cmdtool). Both run in
// the host's own process: no process stands between the host and the
// server or a command, which the host starts itself through the
// plugin's launcher.Starter. Serve is what core.Config.Declared is set
// to.
package declared

import (
	"context"
	"errors"
	"fmt"

	"github.com/hashicorp/go-hclog"

	"github.com/opentool-host/opentool-host/declared/cmdtool"
	"github.com/opentool-host/opentool-host/declared/mcpadapter"
	"github.com/opentool-host/opentool-host/declared/oauthlogin"
	"github.com/opentool-host/opentool-host/host/supervise"
	"github.com/opentool-host/opentool-host/internal/mcpsession"
	"github.com/opentool-host/opentool-host/internal/wire"
	"github.com/opentool-host/opentool-host/pluginsdk"
	"github.com/opentool-host/opentool-host/process/launcher"
	"github.com/opentool-host/opentool-host/protocol/decl"
	"github.com/opentool-host/opentool-host/protocol/opentool"
)

// Serve returns the plugin that launch l declares, served in the
// calling process (wire.Local; not yet started: the host calls its Run):
// command tools when l.Commands is set, else the MCP server l.Server.
// s starts its programs; log receives what the MCP client reports (the
// conversion's warnings, a failed relist). An MCP server's unary calls
// and command tools' calls are function calls on the caller's goroutine
// (supervise.Direct).
//
// A program l declares that cannot run (decl.Launch.CheckPrograms, with
// the plugin's PATH) fails the plugin at its start, not at its first
// call: its Load fails naming the program (what its status and /health
// show), and log gets where it was looked for (the folders of the
// plugin's PATH), which no caller is shown.
func Serve(l decl.Launch, s *launcher.Starter, log hclog.Logger) wire.Local {
	return ServeFor(nil)(l, s, log)
}

// ServeFor returns Serve for a host whose only MCP client is sole (stdio:
// opentool-host mcp; nil: Serve's many clients): each MCP server's
// requests outside calls go to that client, and its
// notifications/roots/list_changed reach the server
// (mcpadapter.Options.Sole). Give it as core.Config.Declared.
func ServeFor(sole *mcpsession.Sole) func(decl.Launch, *launcher.Starter, hclog.Logger) wire.Local {
	return ServeWith(Options{Sole: sole})
}

// Options are what ServeWith's declared MCP servers share beyond their
// declarations.
type Options struct {
	// Sole is the host's only MCP client (stdio), as ServeFor's.
	Sole *mcpsession.Sole
	// Tokens holds the tokens of servers declared "credentials":
	// "per-user", by server and principal, and Logins begins a
	// principal's login (mcpadapter.Options.Tokens, Logins). A per-user
	// server without Tokens fails at its start, saying it needs
	// --oauth-token-key.
	Tokens oauthlogin.Store
	Logins oauthlogin.Logins
	// Registry is the host's login step (mcpadapter.Options.Registry):
	// servers declared with the authorization code grant register their
	// login there; nil: they fail saying they need authorization.
	Registry *oauthlogin.Registry
}

// ServeWith returns Serve for a host with o: give it as
// core.Config.Declared.
func ServeWith(o Options) func(decl.Launch, *launcher.Starter, hclog.Logger) wire.Local {
	sole := o.Sole
	return func(l decl.Launch, s *launcher.Starter, log hclog.Logger) wire.Local {
		if l.Commands == nil && l.Server.PerUser() && o.Tokens == nil {
			return pluginsdk.Local(unrunnable{fmt.Errorf("MCP server %q: its credentials are per-user, and this host keeps no tokens: start it with --oauth-token-key", l.Name)})
		}
		if err := checkPrograms(l, s, log); err != nil {
			return pluginsdk.Local(unrunnable{err})
		}
		if l.Commands != nil {
			t := cmdtool.New(l, s)
			return direct{pluginsdk.Local(t), t}
		}
		a := mcpadapter.New(l, log, mcpadapter.Options{Starter: s, Shared: l.Server.Sessions == decl.SessionsShared, MaxSessions: l.Server.MaxSessions, MaxSessionsPerKey: l.Server.MaxSessionsPerKey, NoLending: l.Server.LendReads != nil && !*l.Server.LendReads, SharedIdle: l.Server.SharedIdle, ReclaimIdle: l.Server.ReclaimIdle, Sole: sole, Tokens: o.Tokens, Logins: o.Logins, Registry: o.Registry})
		return direct{pluginsdk.Local(a), a}
	}
}

// direct is a declared plugin whose document, changes, catalog and run
// are served through pluginsdk.Local, and whose calls and catalog
// requests the host makes on the plugin itself, with the caller's
// core.Exchange (supervise.Direct): the host's own MCP client of a
// server, every wait of whose calls ends with the call's context (the
// server's answer, a session, the relay's fence, a task's polls), or
// command tools, whose command a call's end kills; so they run on the
// caller's goroutine.
type direct struct {
	wire.Local
	supervise.Direct
}

// checkPrograms checks that every program l declares can run, looked up
// in the PATH of s's environment (the plugin's); a *decl.ProgramError is
// logged with its detail. Errors: decl.Launch.CheckPrograms'.
func checkPrograms(l decl.Launch, s *launcher.Starter, log hclog.Logger) error {
	var env []string
	if s != nil {
		env = s.Env
	}
	err := l.CheckPrograms(launcher.Lookup(env, "PATH"))
	var pe *decl.ProgramError
	if errors.As(err, &pe) && log != nil {
		log.Error("declared plugin's program cannot run", "plugin", l.Name, "error", pe.Detail())
	}
	return err
}

// unrunnable is a declared plugin whose program cannot run: its Load
// fails with err, so that the host fails the plugin at its start.
type unrunnable struct{ err error }

// Load implements pluginsdk.Tool: err.
func (u unrunnable) Load(context.Context) (*opentool.OpenTool, error) { return nil, u.err }

// Call implements pluginsdk.Tool: err (never called: Load failed).
func (u unrunnable) Call(context.Context, string, map[string]any) (map[string]any, error) {
	return nil, u.err
}
