package main

import (
	"fmt"
	"regexp"
	"slices"
	"strings"
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
	return usageError(c, explainFlagError(c, err.Error()))
}

// flagErrRE matches the flag package's parse errors.
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

// nearestFlag returns the name of flags closest to name (edit distance
// at most 2, or a prefix), or "" when none is close.
func nearestFlag(name string, flags []cli.Flag) string {
	best, bestD := "", 3
	for _, f := range flags {
		for _, n := range f.Names() {
			if len(n) < 2 {
				continue
			}
			d := editDistance(name, n)
			if strings.HasPrefix(n, name) && len(name) >= 2 {
				d = min(d, 1)
			}
			if d < bestD {
				best, bestD = n, d
			}
		}
	}
	return best
}

// editDistance is the Levenshtein distance of a and b.
func editDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur := make([]int, len(b)+1)
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev = cur
	}
	return prev[len(b)]
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
