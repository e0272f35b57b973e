package main

import (
	"github.com/urfave/cli/v2"

	"github.com/opentool-host/opentool-host/mcpadapter"
)

// mcpAdapterCommand is the hidden "mcp-adapter" command: the plugin process
// the host runs for each declared MCP server (host.Config.Adapter). It
// is started by a host, never by hand.
func mcpAdapterCommand() *cli.Command {
	return &cli.Command{
		Name:   "mcp-adapter",
		Usage:  "run by the host for a server declared in NAME.mcp.json",
		Hidden: true,
		Action: func(*cli.Context) error {
			mcpadapter.Main()
			return nil
		},
	}
}
