package main

import (
	"fmt"
	"os"

	"github.com/hashicorp/go-hclog"
	"github.com/urfave/cli/v2"
)

func logFlags(defaultLevel string) []cli.Flag {
	return []cli.Flag{
		&cli.StringFlag{Name: "log-level", Value: defaultLevel, Usage: "log level: trace, debug, info, warn, error or off", EnvVars: []string{"OPENTOOL_LOG_LEVEL"}},
		&cli.BoolFlag{Name: "log-json", Usage: "write logs as JSON lines", EnvVars: []string{"OPENTOOL_LOG_JSON"}},
	}
}

// newLogger builds the host logger from --log-level and --log-json; logs go
// to stderr.
func newLogger(c *cli.Context) (hclog.Logger, error) {
	lvl := hclog.LevelFromString(c.String("log-level"))
	if lvl == hclog.NoLevel {
		return nil, cli.Exit(fmt.Sprintf("--log-level %q: want trace, debug, info, warn, error or off", c.String("log-level")), 2)
	}
	return hclog.New(&hclog.LoggerOptions{
		Name:       "opentool-host",
		Level:      lvl,
		JSONFormat: c.Bool("log-json"),
		Output:     os.Stderr,
		Color:      hclog.ColorOff,
	}), nil
}

func dirFlag(required bool) *cli.StringFlag {
	f := &cli.StringFlag{Name: "dir", Aliases: []string{"d"}, Usage: "plugins `DIR`ectory holding opentool-plugin-* executables", EnvVars: []string{"OPENTOOL_PLUGIN_DIR"}}
	if !required {
		return f
	}
	f.Value = "plugins"
	return f
}
