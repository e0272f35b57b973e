package main

import (
	"context"
	"os/signal"
	"syscall"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/urfave/cli/v2"

	"github.com/opentool-host/opentool-host/host"
	"github.com/opentool-host/opentool-host/mcpapi"
)

func mcpCommand() *cli.Command {
	flags := []cli.Flag{
		dirFlag(true),
		&cli.BoolFlag{Name: "watch", Value: true, Usage: "hot reload: watch --dir and start, replace or stop plugins as files change"},
		&cli.DurationFlag{Name: "shutdown-timeout", Value: 15 * time.Second, Usage: "at the end of input or on SIGINT/SIGTERM, longest wait for calls in flight (> 0)", Action: positive("shutdown-timeout")},
	}
	flags = append(flags, hostFlags()...)
	flags = append(flags, logFlags("warn")...)
	return &cli.Command{
		Name:      "mcp",
		Usage:     "serve every plugin in --dir to one MCP client over stdin/stdout",
		UsageText: "opentool-host mcp --dir plugins",
		Description: "For a desktop MCP client's config (Claude Desktop, Cursor, VS Code): the client starts\n" +
			"this command and speaks MCP on its stdin/stdout. stdout carries nothing but MCP; logs go to\n" +
			"stderr. The host stops (calls drained, every plugin stopped) when stdin ends or on SIGINT/SIGTERM.",
		Flags:  flags,
		Action: mcpAction,
	}
}

func mcpAction(c *cli.Context) error {
	cfg, err := hostConfig(c) // its logger writes to stderr only
	if err != nil {
		return err
	}
	cfg.Watch = c.Bool("watch")
	h, err := host.New(cfg)
	if err != nil {
		return cli.Exit(err.Error(), 1)
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	if err := h.Start(ctx); err != nil {
		_ = h.Close(context.Background())
		return cli.Exit(err.Error(), 1)
	}
	s := mcpapi.New(h, mcpapi.Config{MaxResultBytes: c.Int64("max-result"), Logger: cfg.Logger.Named("mcp")})
	go s.Follow(ctx)
	cfg.Logger.Info("serving MCP on stdio", "functions", len(h.Functions()))
	err = s.Run(ctx, &mcp.StdioTransport{})
	sctx, cancel := context.WithTimeout(context.Background(), c.Duration("shutdown-timeout"))
	defer cancel()
	if cerr := h.Close(sctx); cerr != nil {
		cfg.Logger.Warn("host close", "error", cerr)
	}
	if err != nil && ctx.Err() == nil {
		cfg.Logger.Debug("MCP session ended", "error", err)
	}
	return nil
}
