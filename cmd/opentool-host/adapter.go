package main

import (
	"fmt"
	"os"

	"github.com/hashicorp/go-hclog"
	"github.com/urfave/cli/v2"

	"github.com/opentool-host/opentool-host/cmdtool"
	"github.com/opentool-host/opentool-host/internal/decl"
	"github.com/opentool-host/opentool-host/mcpadapter"
)

// adapterCommand is the hidden "adapter" command: the plugin process the
// host runs for each declared plugin (host.Config.Adapter), an MCP server
// of NAME.mcp.json or the command tools of NAME.tools.json, as the launch
// in decl.EnvLaunch says. It is started by a host, never by hand: without
// a launch it exits with status 2.
func adapterCommand() *cli.Command {
	return &cli.Command{
		Name:   "adapter",
		Usage:  "run by the host for a plugin declared in NAME.mcp.json or NAME.tools.json",
		Hidden: true,
		Action: func(*cli.Context) error {
			l, err := decl.DecodeLaunch(os.Getenv(decl.EnvLaunch))
			if err != nil {
				fmt.Fprintln(os.Stderr, "adapter: started by opentool-host for a declared plugin:", err)
				os.Exit(2)
			}
			log := hclog.New(&hclog.LoggerOptions{Level: hclog.Trace, Output: os.Stderr, JSONFormat: true})
			if l.Commands != nil {
				cmdtool.Serve(l, log)
			} else {
				mcpadapter.Serve(l, log)
			}
			return nil
		},
	}
}
