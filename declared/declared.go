// Package declared serves the plugins a file in the plugins folder
// declares (package protocol/decl): the MCP server of a NAME.mcp.json,
// for which the host is the MCP client (package mcpadapter), and the
// command-line tools of a NAME.tools.json (package cmdtool). Both run in
// the host's own process: no process stands between the host and the
// server or a command, which the host starts itself through the
// plugin's launcher.Starter. Serve is what host.Config.Declared is set
// to.
package declared

import (
	"github.com/hashicorp/go-hclog"

	"github.com/opentool-host/opentool-host/declared/cmdtool"
	"github.com/opentool-host/opentool-host/declared/mcpadapter"
	"github.com/opentool-host/opentool-host/internal/wire"
	"github.com/opentool-host/opentool-host/pluginsdk"
	"github.com/opentool-host/opentool-host/process/launcher"
	"github.com/opentool-host/opentool-host/protocol/decl"
)

// Serve returns the plugin that launch l declares, served in the
// calling process (wire.Local; not yet started: the host calls its Run):
// command tools when l.Commands is set, else the MCP server l.Server.
// s starts its programs; log receives what the MCP client reports (the
// conversion's warnings, a failed relist). An MCP server's unary calls
// run on the caller's goroutine (wire.Inline); command tools' in a
// goroutine each, as a plugin's.
func Serve(l decl.Launch, s *launcher.Starter, log hclog.Logger) wire.Local {
	if l.Commands != nil {
		return pluginsdk.Local(cmdtool.New(l, s))
	}
	return inline{pluginsdk.Local(mcpadapter.New(l, log, mcpadapter.Options{Starter: s, Shared: l.Server.Sessions == decl.SessionsShared, MaxSessions: l.Server.MaxSessions}))}
}

// inline is a declared MCP server's plugin: the host's own MCP client,
// every wait of whose calls ends with the call's context (the server's
// answer, a session, the relay's fence, a task's polls), so the host runs
// its unary calls on the caller's goroutine (wire.Inline).
type inline struct{ wire.Local }

// CallsInline implements wire.Inline.
func (inline) CallsInline() bool { return true }
