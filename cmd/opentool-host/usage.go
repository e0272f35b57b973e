package main

import (
	"fmt"
	"time"

	"github.com/urfave/cli/v2"
)

// Usage errors (an unknown flag or command, a flag value that does not
// parse or is out of range, arguments a command does not take) print one
// line and a hint, never the whole help, and exit with status 2:
//
//	opentool-host: flag provided but not defined: -frob
//	Run 'opentool-host run --help' for usage.

// usageError is the error of a usage mistake in the command of c: msg, then
// the hint, exit status 2 (main prints it after "opentool-host: ").
func usageError(c *cli.Context, msg string) error {
	return cli.Exit(msg+"\n"+usageHint(c), 2)
}

// usageHint names the help of the command being run (of the app at top
// level).
func usageHint(c *cli.Context) string {
	name := c.App.Name
	if c.Command != nil && c.Command.Name != "" && c.Command.Name != c.App.Name {
		name += " " + c.Command.Name
	}
	return fmt.Sprintf("Run '%s --help' for usage.", name)
}

// onUsageError replaces urfave/cli's "Incorrect Usage" and full help text
// after a flag parse error (unknown flag, unparsable value) by one line and
// the hint.
func onUsageError(c *cli.Context, err error, _ bool) error {
	return usageError(c, err.Error())
}

// rootAction runs when no command matched: no arguments show the help,
// "help [COMMAND]" the help of the app or of COMMAND, anything else is an
// unknown command.
func rootAction(c *cli.Context) error {
	args := c.Args()
	switch first := args.First(); {
	case !args.Present():
		return cli.ShowAppHelp(c)
	case first == "help" || first == "h":
		if args.Len() == 1 {
			return cli.ShowAppHelp(c)
		}
		if cmd := c.App.Command(args.Get(1)); cmd != nil {
			return cli.ShowCommandHelp(c, cmd.Name)
		}
		return usageError(c, fmt.Sprintf("unknown command %q", args.Get(1)))
	default:
		return usageError(c, fmt.Sprintf("unknown command %q", first))
	}
}

// noArgs refuses positional arguments, for commands that take none (those
// without ArgsUsage): `run plugins` is a mistake for `run --dir plugins`.
func noArgs(c *cli.Context) error {
	if c.NArg() > 0 {
		return usageError(c, fmt.Sprintf("%s: unexpected argument %q (it takes flags only)", c.Command.Name, c.Args().First()))
	}
	return nil
}

// atLeast is a flag Action refusing values of --name below min. urfave/cli
// runs it only for flags given on the command line or in the environment
// (defaults are in range).
func atLeast[T int | int64](name string, min T) func(*cli.Context, T) error {
	return func(c *cli.Context, v T) error {
		if v < min {
			return usageError(c, fmt.Sprintf("invalid value %d for --%s: must be at least %d", v, name, min))
		}
		return nil
	}
}

// positive is a flag Action refusing durations of --name that are not
// above 0.
func positive(name string) func(*cli.Context, time.Duration) error {
	return func(c *cli.Context, d time.Duration) error {
		if d <= 0 {
			return usageError(c, fmt.Sprintf("invalid value %v for --%s: must be greater than 0 (e.g. 30s)", d, name))
		}
		return nil
	}
}
