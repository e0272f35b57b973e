package opscmd

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/urfave/cli/v2"

	"github.com/opentool-host/opentool-host/internal/hostflags"

	"github.com/opentool-host/opentool-host/host"
)

// Call is "opentool-host call --dir DIR FUNCTION --params JSON": it
// starts the plugins of --dir, calls FUNCTION once and prints its JSON
// result (exit status 1 with the error for a failed call).
func Call() *cli.Command {
	flags := hostflags.Flags("warn",
		hostflags.DirFlag(true),
		&cli.StringFlag{Name: "params", Aliases: []string{"p"}, Value: "{}", Usage: "arguments as a JSON `OBJECT`, e.g. '{\"a\":1,\"b\":2}'"},
	)
	return &cli.Command{
		Name:      "call",
		Usage:     "start the plugins in --dir, call one function once and print its JSON result",
		UsageText: "opentool-host call --dir plugins FUNCTION --params '{\"a\":1}'",
		Description: "Prints the result object on stdout. On a tool or host error prints the error\n" +
			"on stderr and exits with status 1 (2 for bad usage).",
		ArgsUsage: "FUNCTION",
		Flags:     flags,
		Action:    callAction,
	}
}

func callAction(c *cli.Context) error {
	if c.NArg() == 2 && strings.HasPrefix(strings.TrimSpace(c.Args().Get(1)), "{") {
		return cli.Exit(fmt.Sprintf("call: arguments go in --params: opentool-host call %s --params '%s'", c.Args().First(), c.Args().Get(1)), 2)
	}
	if c.NArg() != 1 {
		return cli.Exit("call: give exactly one FUNCTION name (see --help)", 2)
	}
	fn := c.Args().First()
	params := bytes.TrimSpace([]byte(c.String("params")))
	var obj map[string]any
	if err := json.Unmarshal(params, &obj); err != nil {
		return cli.Exit(fmt.Sprintf("call: --params must be a JSON object: %v", err), 2)
	}
	h, err := startHost(c)
	if err != nil {
		return err
	}
	defer h.Close(context.Background())
	res, err := h.Call(host.WithCaller(c.Context, host.Caller{FrontEnd: "cli"}), fn, params)
	if err != nil {
		switch he := host.AsError(err); {
		case he != nil && he.Kind == host.KindTool:
			return cli.Exit(fmt.Sprintf("call %s: tool error %d: %s", fn, he.Code, he.Message), 1)
		case he != nil && he.Function == fn:
			return cli.Exit(fmt.Sprintf("call: %v", err), 1) // the error names the function
		}
		return cli.Exit(fmt.Sprintf("call %s: %v", fn, err), 1)
	}
	var out bytes.Buffer
	if err := json.Indent(&out, res, "", "  "); err != nil {
		out.Reset()
		out.Write(res)
	}
	fmt.Fprintln(c.App.Writer, out.String())
	return nil
}
