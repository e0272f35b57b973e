package main

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/urfave/cli/v2"

	"github.com/opentool-host/opentool-host/docs/schema"
	"github.com/opentool-host/opentool-host/internal/decl"
	"github.com/opentool-host/opentool-host/lockfile"
	"github.com/opentool-host/opentool-host/opentool"
)

func validateCommand() *cli.Command {
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
				data, err := os.ReadFile(file)
				if err != nil {
					fmt.Fprintf(c.App.Writer, "%s: %v\n", file, err)
					bad++
					continue
				}
				switch {
				case isExecutable(data):
					err = fmt.Errorf("an executable, not a document: validate reads OpenTool documents and declaration files; a plugin prints its document with --document (%s --document > doc.json, then validate doc.json)", file)
				case isMCPConfig(file):
					faults := mcpFaults(data)
					if len(faults) == 0 {
						break
					}
					bad++
					for _, f := range faults {
						fmt.Fprintf(c.App.Writer, "%s: %v\n", file, f)
					}
					continue
				case strings.HasSuffix(file, decl.ToolsSuffix), strings.HasSuffix(file, decl.PolicySuffix):
					// The parser's fault (in the house style), then every
					// other fault the published schema finds.
					kind, parse := "tools", func(b []byte) error { _, err := decl.ParseCommands(b); return err }
					if strings.HasSuffix(file, decl.PolicySuffix) {
						kind, parse = "policy", func(b []byte) error { _, err := decl.ParsePolicy(b); return err }
					}
					err = parse(data)
					faults, _ := schema.Check(kind, data)
					if err == nil && len(faults) == 0 {
						break
					}
					bad++
					var df *decl.Fault
					first := ""
					if err != nil {
						fmt.Fprintf(c.App.Writer, "%s: %v\n", file, err)
						if errors.As(err, &df) {
							first = df.Path
						}
					}
					for _, f := range faults {
						if f.Path != first {
							fmt.Fprintf(c.App.Writer, "%s: %s\n", file, f)
						}
					}
					continue
				case filepath.Base(file) == lockfile.Name:
					_, err = lockfile.Parse(data)
				default:
					err = opentool.ValidateJSON(data)
				}
				var ve *opentool.ValidationError
				switch {
				case err == nil:
					fmt.Fprintf(c.App.Writer, "%s: ok\n", file)
				case errors.As(err, &ve):
					bad++
					for _, f := range ve.Faults {
						fmt.Fprintf(c.App.Writer, "%s: %s\n", file, f.String())
					}
				default:
					bad++
					fmt.Fprintf(c.App.Writer, "%s: %v\n", file, err)
				}
			}
			if bad > 0 {
				return cli.Exit("", 1)
			}
			return nil
		},
	}
}

// isMCPConfig reports whether file is read as MCP servers: NAME.mcp.json,
// or a desktop client's config by its usual name.
func isMCPConfig(file string) bool {
	switch filepath.Base(file) {
	case "claude_desktop_config.json", "mcp.json", ".mcp.json", "mcp_config.json":
		return true
	}
	return strings.HasSuffix(file, decl.MCPSuffix)
}

// mcpFaults are the faults of an MCP server declaration: the file's, or
// each entry's (disabled entries aside). Variables are checked for their
// syntax only: what they may read depends on where the file is used
// (a drop-in or --mcp-config).
func mcpFaults(data []byte) []error {
	cfg, err := decl.ParseDesktop(data)
	if err != nil {
		return []error{err}
	}
	var out []error
	for _, e := range cfg.Entries {
		if e.Fault != nil && !e.Disabled {
			out = append(out, e.Fault)
		}
	}
	return out
}

// isExecutable reports whether data starts like a program: an ELF,
// Mach-O or PE header, or a "#!" line.
func isExecutable(data []byte) bool {
	for _, magic := range [][]byte{{0x7f, 'E', 'L', 'F'}, {0xcf, 0xfa, 0xed, 0xfe}, {0xfe, 0xed, 0xfa, 0xcf}, []byte("MZ"), []byte("#!")} {
		if bytes.HasPrefix(data, magic) {
			return true
		}
	}
	return false
}
