package cliflags

import (
	"bytes"
	"reflect"
	"testing"
	"time"

	"github.com/urfave/cli/v2"
)

// testApp is an app of one command "call" (FUNCTION, flags after it
// allowed) and one command "run" (flags only), prepared by Prepare and
// writing to out.
func testApp(out *bytes.Buffer) *cli.App {
	app := &cli.App{
		Name:   "tool",
		Writer: out, ErrWriter: out,
		Commands: []*cli.Command{
			{
				Name:      "call",
				ArgsUsage: "FUNCTION",
				Flags: []cli.Flag{
					&cli.StringFlag{Name: "dir", Aliases: []string{"d"}},
					&cli.StringFlag{Name: "params"},
					&cli.BoolFlag{Name: "prefix-collisions"},
					&cli.BoolFlag{Name: "sandbox"},
				},
				Action: func(c *cli.Context) error {
					if c.NArg() != 1 {
						return cli.Exit("call: give exactly one FUNCTION", 2)
					}
					return nil
				},
			},
			{
				Name: "run",
				Flags: []cli.Flag{
					&cli.DurationFlag{Name: "call-timeout", Action: Positive("call-timeout")},
					&cli.IntFlag{Name: "max-queue", Action: AtLeast("max-queue", 0)},
					&cli.DurationFlag{Name: "drain-delay", Action: NonNegative("drain-delay")},
					&cli.DurationFlag{Name: "lease", Action: AtLeastDuration("lease", 100*time.Millisecond)},
					&cli.StringFlag{Name: "transport", Action: OneOf("transport", "auto", "grpc")},
				},
				Action: func(*cli.Context) error { return nil },
			},
		},
	}
	Prepare(app)
	return app
}

// TestInterspersed: a command's flags after its arguments move before
// them; its boolean flags take no value, so the FUNCTION after them stays
// an argument; other commands are left alone.
func TestInterspersed(t *testing.T) {
	app := testApp(&bytes.Buffer{})
	for _, tc := range []struct{ in, want []string }{
		{[]string{"tool", "call", "--dir", "d", "--prefix-collisions", "add", "--params", "{}"},
			[]string{"tool", "call", "--dir", "d", "--prefix-collisions", "--params", "{}", "add"}},
		{[]string{"tool", "call", "--sandbox", "add", "-d=x", "--", "--not-a-flag"},
			[]string{"tool", "call", "--sandbox", "-d=x", "add", "--not-a-flag"}},
		{[]string{"tool", "call", "add", "-h"}, []string{"tool", "call", "-h", "add"}},
		{[]string{"tool", "run", "x", "--call-timeout", "1s"}, []string{"tool", "run", "x", "--call-timeout", "1s"}},
		{[]string{"tool", "--help"}, []string{"tool", "--help"}},
	} {
		if got := Interspersed(tc.in, app, "call"); !reflect.DeepEqual(got, tc.want) {
			t.Errorf("Interspersed(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

// TestRun: usage errors are one line and a hint with exit status 2,
// flag Actions refuse values out of range, and other errors exit 1.
func TestRun(t *testing.T) {
	for _, tc := range []struct {
		args []string
		code int
		out  string
	}{
		{[]string{"call", "add"}, 0, ""},
		{[]string{"call", "add", "--sandbox", "--dir", "d"}, 0, ""},
		{[]string{"run", "--frob"}, 2, "tool: unknown flag --frob\nRun 'tool run --help' for usage.\n"},
		{[]string{"run", "--call-timout", "1s"}, 2, "tool: unknown flag --call-timout; did you mean --call-timeout?\nRun 'tool run --help' for usage.\n"},
		{[]string{"run", "--call-timeout", "5"}, 2, "tool: invalid value \"5\" for --call-timeout: a duration needs a unit, such as 5s, 500ms or 2m\nRun 'tool run --help' for usage.\n"},
		{[]string{"run", "--max-queue", "x"}, 2, "tool: invalid value \"x\" for --max-queue\nRun 'tool run --help' for usage.\n"},
		{[]string{"run", "--call-timeout", "0s"}, 2, "tool: invalid value 0s for --call-timeout: must be greater than 0 (e.g. 30s)\nRun 'tool run --help' for usage.\n"},
		{[]string{"run", "--max-queue", "-1"}, 2, "tool: invalid value -1 for --max-queue: must be at least 0\nRun 'tool run --help' for usage.\n"},
		{[]string{"run", "--drain-delay", "-1s"}, 2, "tool: invalid value -1s for --drain-delay: must be at least 0\nRun 'tool run --help' for usage.\n"},
		{[]string{"run", "--lease", "10ms"}, 2, "tool: invalid value 10ms for --lease: must be at least 100ms\nRun 'tool run --help' for usage.\n"},
		{[]string{"run", "--transport", "udp"}, 1, "tool: --transport must be one of auto, grpc, not \"udp\"\n"},
		{[]string{"run", "plugins"}, 2, "tool: run: unexpected argument \"plugins\" (it takes flags only)\nRun 'tool run --help' for usage.\n"},
		{[]string{"frob"}, 2, "tool: unknown command \"frob\"\nRun 'tool --help' for usage.\n"},
		{[]string{"help", "frob"}, 2, "tool: unknown command \"frob\"\nRun 'tool --help' for usage.\n"},
		{[]string{"call"}, 2, "tool: call: give exactly one FUNCTION\n"},
	} {
		var out bytes.Buffer
		app := testApp(&out)
		code := Run(app, Interspersed(append([]string{"tool"}, tc.args...), app, "call"))
		if code != tc.code || out.String() != tc.out {
			t.Errorf("%q: exit %d, output %q; want %d, %q", tc.args, code, out.String(), tc.code, tc.out)
		}
	}
}

// TestNearestFlag: an unknown flag is matched to a flag at edit distance
// 2 or less, or one it is a prefix of, or the flag another tool's name
// stands for (--port: --addr); nothing when none is close.
func TestNearestFlag(t *testing.T) {
	flags := []cli.Flag{&cli.StringFlag{Name: "dir", Aliases: []string{"d"}}, &cli.DurationFlag{Name: "call-timeout"}, &cli.StringFlag{Name: "addr"}}
	for name, want := range map[string]string{"dri": "dir", "call-timout": "call-timeout", "call": "call-timeout", "frob": "", "x": "", "port": "addr", "listen": "addr"} {
		if got := nearestFlag(name, flags); got != want {
			t.Errorf("nearestFlag(%q) = %q, want %q", name, got, want)
		}
	}
}
