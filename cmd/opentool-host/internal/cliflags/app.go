package cliflags

import (
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"sync"

	"github.com/urfave/cli/v2"
)

// Prepare makes app's usage errors one line and a hint (UsageError):
// after a flag that does not parse, for an unknown command, and for
// arguments given to a command without ArgsUsage (which takes flags
// only). "help [COMMAND]" is handled by the app's own Action, so that no
// command has a "help" subcommand that would shadow an argument (`call
// help`). Every error, cli.ExitCoder or not, is returned by app.Run,
// never printed by urfave/cli (nor the process exited from inside Run):
// Run prints it once. Call it once the app has all its commands.
//
// Flags are laid out in narrow columns (narrowFlags): names NameWidth
// wide, usage wrapped to HelpWidth; so are the lines of the app's and
// each command's Description.
func Prepare(app *cli.App) {
	narrowOnce.Do(func() { cli.FlagStringer = narrowFlags(cli.FlagStringer) })
	app.Description = wrapLines(app.Description, HelpWidth-helpIndent)
	app.CustomAppHelpTemplate = unwrappedFlags(cli.AppHelpTemplate)
	app.Action = rootAction
	app.OnUsageError = onUsageError
	app.HideHelpCommand = true
	app.ExitErrHandler = func(*cli.Context, error) {}
	for _, cmd := range app.Commands {
		cmd.OnUsageError = onUsageError
		cmd.Description = wrapLines(cmd.Description, HelpWidth-helpIndent)
		cmd.CustomHelpTemplate = unwrappedFlags(cli.CommandHelpTemplate)
		cmd.HideHelpCommand = true
		if cmd.ArgsUsage == "" && cmd.Before == nil {
			cmd.Before = noArgs
		}
	}
}

// narrowOnce puts narrowFlags over urfave/cli's FlagStringer once per
// process (the tests build many apps).
var narrowOnce sync.Once

// Run runs app with args (os.Args: the program, then its arguments) and
// returns the process's exit status: 0, a cli.ExitCoder's code (its
// message, when not empty, printed as "APP: MESSAGE" on app.ErrWriter,
// default stderr), or 1 for any other error (printed the same way).
func Run(app *cli.App, args []string) int {
	err := app.Run(args)
	if err == nil {
		return 0
	}
	var w io.Writer = os.Stderr
	if app.ErrWriter != nil {
		w = app.ErrWriter
	}
	var ec cli.ExitCoder
	if errors.As(err, &ec) {
		if msg := err.Error(); msg != "" {
			fmt.Fprintf(w, "%s: %s\n", app.Name, msg)
		}
		return ec.ExitCode()
	}
	fmt.Fprintf(w, "%s: %v\n", app.Name, err)
	return 1
}

// Interspersed lets the commands of app named in commands take flags
// after their arguments, as in `call --dir plugins add --params
// '{"a":1}'`: urfave/cli stops parsing flags at the first argument, so
// the arguments after such a command in args (os.Args: the program,
// then its arguments) are reordered to put its flags (and their values)
// first, the rest in their order after them; "--" ends the flags. A flag
// takes the next argument as its value unless it holds "=" or is one of
// the command's boolean flags (or --help, -h). Any other command, or
// none, leaves args as they are.
func Interspersed(args []string, app *cli.App, commands ...string) []string {
	for i := 1; i < len(args); i++ {
		a := args[i]
		cmd := app.Command(a)
		if cmd == nil || !slices.Contains(commands, cmd.Name) {
			if strings.HasPrefix(a, "-") {
				continue // a global flag before the command
			}
			return args
		}
		boolFlags := boolFlagArgs(append([]cli.Flag{cli.HelpFlag}, cmd.Flags...))
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

// boolFlagArgs is the set of the ways to give the boolean flags of flags
// without a value: "--NAME" and "-NAME" for each name and alias.
func boolFlagArgs(flags []cli.Flag) map[string]bool {
	out := map[string]bool{}
	for _, f := range flags {
		if _, ok := f.(*cli.BoolFlag); !ok {
			continue
		}
		for _, n := range f.Names() {
			out["--"+n], out["-"+n] = true, true
		}
	}
	return out
}
