package main

import (
	"context"
	"os/signal"
	"syscall"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/opentool-host/opentool-host/frontdoor"
)

func mcpCommand() *cli.Command {
	flags := []cli.Flag{
		dirFlag(true),
		&cli.BoolFlag{Name: "watch", Value: true, Usage: "hot reload: watch --dir and start, replace or stop plugins as files change (the client gets tools/list_changed)"},
		&cli.DurationFlag{Name: "shutdown-timeout", Value: 15 * time.Second, Usage: "at the end of input or on SIGINT/SIGTERM, longest wait for calls in flight (> 0)", Action: positive("shutdown-timeout")},
	}
	flags = append(flags, toolSearchFlags()...)
	flags = append(flags, hostFlags()...)
	flags = append(flags, logFlags("warn")...)
	return &cli.Command{
		Name:      "mcp",
		Usage:     "serve every plugin in --dir to one MCP client over stdin/stdout",
		UsageText: "opentool-host mcp --dir plugins [--log-level warn] [--log-json]",
		Description: "For the config of a desktop MCP client (Claude Desktop, Cursor, VS Code): the client starts\n" +
			"this command and speaks MCP (newline-delimited JSON-RPC) on its stdin and stdout. stdout carries\n" +
			"nothing but MCP; logs go to stderr. Each function is a tool; a streaming function's items are\n" +
			"collected into {\"items\":[...]}, with a progress notification per item when asked for.\n" +
			"The host stops (calls in flight drained, every plugin stopped) when stdin ends or on SIGINT/SIGTERM.",
		Flags:  flags,
		Action: mcpAction,
	}
}

func mcpAction(c *cli.Context) error {
	cfg, err := hostConfig(c) // its logger writes to stderr
	if err != nil {
		return err
	}
	cfg.Watch = c.Bool("watch")
	if err := toolSearch(c, &cfg); err != nil {
		return err
	}
	sig, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	return exitError(frontdoor.ServeStdio(sig, frontdoor.StdioConfig{Host: cfg, NewHost: newHost, ShutdownTimeout: c.Duration("shutdown-timeout")}))
}
