// Command opentool-host serves the functions of every OpenTool plugin in a
// directory over one HTTP endpoint.
//
//	opentool-host run --dir plugins            # serve at 127.0.0.1:9627
//	opentool-host list --dir plugins           # what the plugins offer
//	opentool-host call --dir plugins add --params '{"a":1,"b":2}'
//	opentool-host validate doc.json            # check an OpenTool document
//	opentool-host version
//
// It only turns flags into the front door's and the host's configuration
// (run, mcp: run.go; the host's flags: internal/hostflags) and calls them;
// the commands that do not serve are internal/opscmd's, and
// internal/cliflags makes usage errors one line and a hint.
package main

import (
	"errors"
	"fmt"
	"os"

	"github.com/urfave/cli/v2"

	"github.com/opentool-host/opentool-host/cmd/opentool-host/internal/cliflags"
	"github.com/opentool-host/opentool-host/cmd/opentool-host/internal/opscmd"
	"github.com/opentool-host/opentool-host/cmd/opentool-host/internal/selfexec"
	"github.com/opentool-host/opentool-host/frontend/frontdoor"
	"github.com/opentool-host/opentool-host/internal/version"
)

func main() {
	selfexec.Main(os.Args) // the hidden commands a host runs this binary as
	app := newApp()
	// call, pull, push and auth take flags after their arguments too.
	os.Exit(cliflags.Run(app, cliflags.Interspersed(os.Args, app, "call", "pull", "push", "auth")))
}

func newApp() *cli.App {
	app := &cli.App{
		Name:    "opentool-host",
		Usage:   "serve OpenTool plugins (opentool-plugin-* executables) as one tool server",
		Version: version.Version,
		Description: "opentool-host starts every executable named opentool-plugin-NAME in a directory as an\n" +
			"isolated plugin process, runs the MCP servers (NAME.mcp.json) and command-line tools\n" +
			"(NAME.tools.json) declared there, and serves all their functions on three front ends:\n" +
			"  OpenTool HTTP      /opentool/* (POST /opentool/call: JSON-RPC 2.0)\n" +
			"  MCP                /mcp (streamable HTTP), and stdio for desktop clients (mcp)\n" +
			"  Open Tool Calling  /otc/* (GET /otc/tools, POST /otc/call)\n" +
			"run serves the three, GET /health and a status page (GET /) at 127.0.0.1:9627.",
		HideVersion: false,
		Commands: []*cli.Command{
			runCommand(),
			mcpCommand(),
			opscmd.List(),
			opscmd.Call(),
			opscmd.Validate(),
			opscmd.Lock(),
			opscmd.Export(),
			versionCommand(),
			opscmd.Push(),
			opscmd.Pull(),
			opscmd.Auth(localLogin()),
		},
	}
	cliflags.Prepare(app)
	return app
}

func versionCommand() *cli.Command {
	return &cli.Command{
		Name:  "version",
		Usage: "print the host version",
		Action: func(c *cli.Context) error {
			fmt.Fprintln(c.App.Writer, version.Version)
			return nil
		},
	}
}

// exitError is err as the command's exit: status 2 for a refused
// configuration (frontdoor.ConfigError), 1 otherwise; nil for nil.
func exitError(err error) error {
	var ce *frontdoor.ConfigError
	switch {
	case err == nil:
		return nil
	case errors.As(err, &ce):
		return cli.Exit(err.Error(), 2)
	}
	return cli.Exit(err.Error(), 1)
}
