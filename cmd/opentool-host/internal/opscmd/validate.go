// Package opscmd is opentool-host's commands that do not serve: list,
// call and export (read the functions of plugins they start, or of a
// running host), validate (documents and drop-in files), lock (pin a
// plugins folder) and push and pull (plugins as OCI artifacts). Each
// function returns one *cli.Command; the commands turn flags into the
// configuration of the packages that do the work and call them.
package opscmd

import (
	"fmt"

	"github.com/urfave/cli/v2"

	"github.com/opentool-host/opentool-host/ops/validate"
)

// Validate is "opentool-host validate FILE...": every fault of each file
// as FILE: PATH: MESSAGE (package validate); exit status 1 when any file
// has one, 2 for bad usage.
func Validate() *cli.Command {
	return &cli.Command{
		Name:      "validate",
		Usage:     "check OpenTool documents and drop-in files (NAME.mcp.json, NAME.tools.json, NAME.policy.json, opentool.lock); print every fault as FILE: PATH: MESSAGE",
		UsageText: "opentool-host validate FILE...",
		Description: "Checks each document against the OpenTool specification (1.0.0/1.1.0, plus the 2.0\n" +
			"\"stream\" field): required fields, function names, types, $refs. A file named\n" +
			"NAME.mcp.json or a desktop client's config (claude_desktop_config.json, mcp.json, .mcp.json,\n" +
			"mcp_config.json: every server entry's fault is printed), NAME.tools.json (command tools) or\n" +
			"NAME.policy.json (a plugin's policy) is checked as a declaration instead, and opentool.lock as a lock\n" +
			"file. Exit status 1 when any document has a fault, 2 for bad usage.",
		ArgsUsage: "FILE...",
		Action: func(c *cli.Context) error {
			if c.NArg() == 0 {
				return cli.Exit("validate: give at least one FILE", 2)
			}
			bad := 0
			for _, file := range c.Args().Slice() {
				faults := validate.File(file)
				if len(faults) == 0 {
					fmt.Fprintf(c.App.Writer, "%s: ok\n", file)
					continue
				}
				bad++
				for _, f := range faults {
					fmt.Fprintln(c.App.Writer, validate.Line(file, f))
				}
			}
			if bad > 0 {
				return cli.Exit("", 1)
			}
			return nil
		},
	}
}
