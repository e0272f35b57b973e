package main

import (
	"context"
	"os/signal"
	"syscall"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/urfave/cli/v2"

	"github.com/opentool-host/opentool-host/host"
	"github.com/opentool-host/opentool-host/mcpapi"
)

// sessionCloseWait bounds the wait for the MCP session to write the
// answers of the calls that ended with the host, after a signal.
const sessionCloseWait = 2 * time.Second

func mcpCommand() *cli.Command {
	flags := []cli.Flag{
		dirFlag(true),
		&cli.BoolFlag{Name: "watch", Value: true, Usage: "hot reload: watch --dir and start, replace or stop plugins as files change (the client gets tools/list_changed)"},
		&cli.DurationFlag{Name: "shutdown-timeout", Value: 15 * time.Second, Usage: "at the end of input or on SIGINT/SIGTERM, longest wait for calls in flight (> 0)", Action: positive("shutdown-timeout")},
	}
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
	log := cfg.Logger
	h, err := newHost(cfg)
	if err != nil {
		return cli.Exit(err.Error(), 1)
	}
	sig, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	if err := h.Start(sig); err != nil {
		_ = h.Close(context.Background())
		return cli.Exit(err.Error(), 1)
	}
	s := mcpapi.New(h, mcpapi.Config{MaxResultBytes: c.Int64("max-result"), Logger: log.Named("mcp")})
	follow, unfollow := context.WithCancel(context.Background())
	defer unfollow()
	go s.Follow(follow)
	ss, err := s.MCP().Connect(context.Background(), &mcp.StdioTransport{}, nil)
	if err != nil {
		closeHost(h, log, c.Duration("shutdown-timeout"))
		return cli.Exit("mcp: "+err.Error(), 1)
	}
	log.Info("serving MCP on stdio", "functions", len(h.Functions()))
	ended := make(chan struct{})
	go func() {
		_ = ss.Wait()
		close(ended)
	}()
	select {
	case <-ended:
		log.Info("end of input: shutting down")
	case <-sig.Done():
		log.Info("signal: shutting down")
	}
	closeHost(h, log, c.Duration("shutdown-timeout"))
	closeSession(ss, ended)
	log.Info("stopped")
	return nil
}

// closeHost drains the calls in flight for up to d, then stops every
// plugin.
func closeHost(h *host.Host, log hclog.Logger, d time.Duration) {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	if err := h.Close(ctx); err != nil {
		log.Warn("host close", "error", err)
	}
}

// closeSession closes ss, which waits for the calls the host has just
// ended to write their answers, for up to sessionCloseWait: a read of
// stdin in progress may keep it from returning.
func closeSession(ss *mcp.ServerSession, ended <-chan struct{}) {
	go func() { _ = ss.Close() }()
	select {
	case <-ended:
	case <-time.After(sessionCloseWait):
	}
}
