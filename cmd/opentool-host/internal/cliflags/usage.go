// Package cliflags is the small command-line toolkit of opentool-host's
// command, over github.com/urfave/cli/v2: usage errors of one line and a
// hint instead of the whole help, flag Actions that refuse values out of
// range, flags given after a command's arguments, and the process's exit.
//
// Usage errors (an unknown flag or command, a flag value that does not
// parse or is out of range, arguments a command does not take) print one
// line and a hint, never the whole help, and exit with status 2:
//
//	opentool-host: flag provided but not defined: -frob
//	Run 'opentool-host run --help' for usage.
//
// A command's main calls Prepare on its app, then Run:
//
//	app := newApp() // ends with cliflags.Prepare(app)
//	os.Exit(cliflags.Run(app, cliflags.Interspersed(os.Args, app, "call")))
package cliflags

import (
	"fmt"
	"regexp"
	"slices"
	"strings"

	"github.com/urfave/cli/v2"

	"github.com/opentool-host/opentool-host/internal/nearest"
)

// UsageError is the error of a usage mistake in the command of c: msg,
// then a line naming the command's help, as a cli.ExitCoder with exit
// status 2 (Run prints it after "APP: ").
func UsageError(c *cli.Context, msg string) error {
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
	return UsageError(c, explainFlagError(c, err.Error()))
}

// badValueRE and undefinedRE match the flag package's parse errors.
var (
	badValueRE  = regexp.MustCompile(`^invalid value "(.*)" for flag -([^:]+): parse error$`)
	undefinedRE = regexp.MustCompile(`^flag provided but not defined: -+(.+)$`)
)

// explainFlagError rewrites the flag package's terse messages into ones
// that say what to do: a duration without a unit gets an example; an
// unknown flag gets the nearest flag of the command.
func explainFlagError(c *cli.Context, msg string) string {
	flags := c.App.Flags
	if c.Command != nil && c.Command.Name != "" {
		flags = c.Command.Flags
	}
	if m := badValueRE.FindStringSubmatch(msg); m != nil {
		for _, f := range flags {
			if _, ok := f.(*cli.DurationFlag); ok && slices.Contains(f.Names(), m[2]) {
				return fmt.Sprintf("invalid value %q for --%s: a duration needs a unit, such as 5s, 500ms or 2m", m[1], m[2])
			}
		}
		return fmt.Sprintf("invalid value %q for --%s", m[1], m[2])
	}
	if m := undefinedRE.FindStringSubmatch(msg); m != nil {
		if near := nearestFlag(m[1], flags); near != "" {
			return fmt.Sprintf("unknown flag --%s; did you mean --%s?", m[1], near)
		}
		return fmt.Sprintf("unknown flag --%s", m[1])
	}
	return msg
}

// synonyms are flag names people bring from other tools, with the flag
// of this one that does their job.
var synonyms = map[string]string{"port": "addr", "listen": "addr", "bind": "addr", "host": "addr", "address": "addr"}

// nearestFlag returns the name of flags closest to name (nearest.Name:
// case, a prefix, edit distance at most 2), or the flag a synonym of
// another tool's names (--port: --addr), or "" when none is close.
func nearestFlag(name string, flags []cli.Flag) string {
	names := func(yield func(string) bool) {
		for _, f := range flags {
			for _, n := range f.Names() {
				if !yield(n) {
					return
				}
			}
		}
	}
	if near := nearest.Name(name, names); near != "" {
		return near
	}
	if syn, ok := synonyms[strings.TrimLeft(strings.ToLower(name), "-")]; ok && slices.ContainsFunc(flags, func(f cli.Flag) bool { return slices.Contains(f.Names(), syn) }) {
		return syn
	}
	return ""
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
		return UsageError(c, fmt.Sprintf("unknown command %q", args.Get(1)))
	default:
		return UsageError(c, fmt.Sprintf("unknown command %q", first))
	}
}

// noArgs refuses positional arguments, for commands that take none (those
// without ArgsUsage): `run plugins` is a mistake for `run --dir plugins`.
func noArgs(c *cli.Context) error {
	if c.NArg() > 0 {
		return UsageError(c, fmt.Sprintf("%s: unexpected argument %q (it takes flags only)", c.Command.Name, c.Args().First()))
	}
	return nil
}
