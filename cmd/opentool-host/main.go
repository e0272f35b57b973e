// Command opentool-host serves the functions of every OpenTool plugin in a
// directory over one HTTP endpoint.
//
//	opentool-host run --dir plugins            # serve at 127.0.0.1:9627
//	opentool-host list --dir plugins           # what the plugins offer
//	opentool-host call --dir plugins add --params '{"a":1,"b":2}'
//	opentool-host validate doc.json            # check an OpenTool document
//	opentool-host version
package main

import (
	"errors"
	"fmt"
	"os"

	"github.com/urfave/cli/v2"

	"github.com/opentool-host/opentool-host/internal/version"
)

func main() {
	if err := newApp().Run(os.Args); err != nil {
		var ec cli.ExitCoder
		if errors.As(err, &ec) {
			if msg := err.Error(); msg != "" {
				fmt.Fprintln(os.Stderr, "opentool-host:", msg)
			}
			os.Exit(ec.ExitCode())
		}
		fmt.Fprintln(os.Stderr, "opentool-host:", err)
		os.Exit(1)
	}
}

func newApp() *cli.App {
	return &cli.App{
		Name:    "opentool-host",
		Usage:   "serve OpenTool plugins (opentool-plugin-* executables) as one tool server",
		Version: version.Version,
		Description: "opentool-host starts every executable named opentool-plugin-NAME in a directory as an\n" +
			"isolated plugin process, loads its OpenTool document and serves all functions over HTTP:\n" +
			"GET /opentool/version, POST /opentool/call (JSON-RPC 2.0), GET /opentool/load, GET /health.",
		HideVersion: false,
		Commands: []*cli.Command{
			runCommand(),
			listCommand(),
			callCommand(),
			validateCommand(),
			versionCommand(),
		},
	}
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
