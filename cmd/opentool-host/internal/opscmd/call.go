package opscmd

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/urfave/cli/v2"

	"github.com/opentool-host/opentool-host/client"
	"github.com/opentool-host/opentool-host/frontend/keyview"
	"github.com/opentool-host/opentool-host/host"
	"github.com/opentool-host/opentool-host/host/core"
)

// Call is "opentool-host call FUNCTION --params JSON": it calls FUNCTION
// once on the running host at --url (with --api-key), or on the plugins
// of --dir, which it starts, and prints its JSON result (exit status 1
// with the error for a failed call, 2 for bad usage).
func Call() *cli.Command {
	flags := append([]cli.Flag{
		&cli.StringFlag{Name: "params", Aliases: []string{"p"}, Value: "{}", Usage: "arguments as a JSON `OBJECT`, e.g. '{\"a\":1,\"b\":2}'"},
	}, sourceFlags(true)...)
	return &cli.Command{
		Name:  "call",
		Usage: "call one function once and print its JSON result (on a running host with --url, or on the plugins of --dir, which it starts)",
		UsageText: "opentool-host call --url http://127.0.0.1:9627 FUNCTION --params '{\"a\":1}'\n" +
			"   opentool-host call --dir plugins FUNCTION --params '{\"a\":1}'",
		Description: "Prints the result object on stdout. On a tool or host error prints the error\n" +
			"on stderr and exits with status 1 (2 for bad usage). With --url the running host\n" +
			"answers (its plugins, its keys: --api-key); with --dir this command starts its own\n" +
			"copy of every plugin in the folder, for this one call.",
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
	if err := checkSource(c); err != nil {
		return err
	}
	fn := c.Args().First()
	params := bytes.TrimSpace([]byte(c.String("params")))
	var obj map[string]any
	if err := json.Unmarshal(params, &obj); err != nil {
		return cli.Exit(fmt.Sprintf("call: --params must be a JSON object: %v", err), 2)
	}
	var res []byte
	err := fromSource(c, func(url, apiKey string) error {
		ret, err := keyview.HostClient(url, apiKey).Call(c.Context, client.FunctionCall{Name: fn, Arguments: obj})
		if err != nil {
			return remoteCallError(fn, err)
		}
		res, err = json.Marshal(ret.Result)
		return err
	}, func(h *host.Host) (err error) {
		res, err = h.Call(core.WithCaller(c.Context, core.Caller{FrontEnd: "cli"}), fn, params)
		return localCallError(fn, err)
	})
	if err != nil {
		return err
	}
	var out bytes.Buffer
	if err := json.Indent(&out, res, "", "  "); err != nil {
		out.Reset()
		out.Write(res)
	}
	fmt.Fprintln(c.App.Writer, out.String())
	return nil
}

// localCallError is the exit (status 1) of a failed call of fn on a host
// this command started; nil for nil.
func localCallError(fn string, err error) error {
	if err == nil {
		return nil
	}
	switch he := core.AsError(err); {
	case he != nil && he.Kind == core.KindTool:
		return cli.Exit(fmt.Sprintf("call %s: tool error %d: %s", fn, he.Code, he.Message), 1)
	case he != nil && he.Function == fn:
		return cli.Exit(fmt.Sprintf("call: %v", err), 1) // the error names the function
	}
	return cli.Exit(fmt.Sprintf("call %s: %v", fn, err), 1)
}

// remoteCallError is the exit (status 1) of a failed call of fn on a
// running host: a tool's own error as the local call says it ("tool
// error CODE: MESSAGE"), the host's (a JSON-RPC code: unknown function,
// bad arguments) with its message, anything else (unreachable, a key
// refused) as the client says it.
func remoteCallError(fn string, err error) error {
	var ce *client.CallError
	switch {
	case errors.As(err, &ce) && ce.Code > 0:
		return cli.Exit(fmt.Sprintf("call %s: tool error %d: %s", fn, ce.Code, ce.Message), 1)
	case errors.As(err, &ce):
		return cli.Exit(fmt.Sprintf("call %s: %s", fn, ce.Message), 1)
	}
	return cli.Exit(fmt.Sprintf("call %s: %v", fn, err), 1)
}
