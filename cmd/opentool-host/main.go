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
	"maps"
	"os"
	"strings"

	"github.com/urfave/cli/v2"

	"github.com/opentool-host/opentool-host/internal/version"
)

func main() {
	if err := newApp().Run(interspersed(os.Args)); err != nil {
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
	app := &cli.App{
		Name:    "opentool-host",
		Usage:   "serve OpenTool plugins (opentool-plugin-* executables) as one tool server",
		Version: version.Version,
		Description: "opentool-host starts every executable named opentool-plugin-NAME in a directory as an\n" +
			"isolated plugin process, loads its OpenTool document and serves all functions over HTTP:\n" +
			"GET /opentool/version, POST /opentool/call (JSON-RPC 2.0), GET /opentool/load, GET /health.",
		HideVersion: false,
		Commands: []*cli.Command{
			runCommand(),
			mcpCommand(),
			listCommand(),
			callCommand(),
			validateCommand(),
			lockCommand(),
			exportCommand(),
			versionCommand(),
			adapterCommand(),
			pushCommand(),
			pullCommand(),
		},
		// Usage errors are one line and a hint (usage.go); "help" is
		// handled by rootAction, so that no command has a "help"
		// subcommand that would shadow an argument (`call help`).
		Action:          rootAction,
		OnUsageError:    onUsageError,
		HideHelpCommand: true,
		// Every error, ExitCoder or not, goes back to main, which prints it
		// once and exits (urfave/cli would otherwise print ExitCoders
		// itself and exit from inside Run).
		ExitErrHandler: func(*cli.Context, error) {},
	}
	for _, cmd := range app.Commands {
		cmd.OnUsageError = onUsageError
		cmd.HideHelpCommand = true
		if cmd.ArgsUsage == "" && cmd.Before == nil {
			cmd.Before = noArgs
		}
	}
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

// interspersed lets the "call" command take flags after FUNCTION, as in
// `call --dir plugins add --params '{"a":1}'` (and "pull" and "push"
// after their arguments): urfave/cli stops parsing
// flags at the first argument, so the arguments after "call" are reordered
// to put flags (and their values) first. Every call flag takes a value
// except those in boolFlags.
func interspersed(args []string) []string {
	boolFlags := map[string]bool{"--log-json": true, "-log-json": true, "--prefix-collisions": true, "-prefix-collisions": true, "--help": true, "-h": true, "-help": true}
	maps.Copy(boolFlags, ociBoolFlags()) // push and pull take flags after their arguments too
	for i := 1; i < len(args); i++ {
		a := args[i]
		if a != "call" && a != "pull" && a != "push" {
			if strings.HasPrefix(a, "-") {
				continue // a global flag before the command
			}
			return args
		}
		var flags, positional []string
		rest := args[i+1:]
		for j := 0; j < len(rest); j++ {
			t := rest[j]
			switch {
			case t == "--":
				positional = append(positional, rest[j+1:]...)
				j = len(rest)
			case strings.HasPrefix(t, "-") && len(t) > 1:
				flags = append(flags, t)
				if !strings.Contains(t, "=") && !boolFlags[t] && j+1 < len(rest) {
					flags = append(flags, rest[j+1])
					j++
				}
			default:
				positional = append(positional, t)
			}
		}
		out := append([]string{}, args[:i+1]...)
		out = append(out, flags...)
		return append(out, positional...)
	}
	return args
}
