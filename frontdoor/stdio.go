package frontdoor

import (
	"context"
	"fmt"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/opentool-host/opentool-host/host"
	"github.com/opentool-host/opentool-host/mcpapi"
)

// sessionCloseWait bounds the wait for the stdio MCP session to write the
// answers of the calls that ended with the host, after a signal.
const sessionCloseWait = 2 * time.Second

// StdioConfig configures ServeStdio.
type StdioConfig struct {
	// Host is the host's configuration.
	Host host.Config
	// ShutdownTimeout bounds the wait for calls in flight at the end.
	ShutdownTimeout time.Duration
}

// ServeStdio serves every plugin to one MCP client over this process's
// stdin and stdout (MCP "Transports", stdio: newline-delimited JSON-RPC;
// stdout carries nothing else) until stdin ends or ctx is done (a
// signal); then calls in flight get ShutdownTimeout, every plugin stops
// and the session writes what the ended calls answered. The client is
// the local user who started the process: no keys, no request guard.
// Errors: the host could not be made or started, or the session not
// opened.
func ServeStdio(ctx context.Context, cfg StdioConfig) error {
	log := cfg.Host.Logger
	if log == nil {
		log = hclog.NewNullLogger()
	}
	h, err := host.New(cfg.Host)
	if err != nil {
		return err
	}
	closeHost := func() {
		cctx, cancel := context.WithTimeout(context.Background(), cfg.ShutdownTimeout)
		defer cancel()
		if err := h.Close(cctx); err != nil {
			log.Warn("host close", "error", err)
		}
	}
	if err := h.Start(ctx); err != nil {
		closeHost()
		return err
	}
	s := mcpapi.New(h, mcpapi.Config{MaxResultBytes: cfg.Host.MaxResultBytes, Logger: log.Named("mcp")})
	follow, unfollow := context.WithCancel(context.Background())
	defer unfollow()
	go s.Follow(follow)
	ss, err := s.MCP().Connect(context.Background(), &mcp.StdioTransport{}, nil)
	if err != nil {
		closeHost()
		return fmt.Errorf("mcp: %w", err)
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
	case <-ctx.Done():
		log.Info("signal: shutting down")
	}
	closeHost()
	// Close waits for the calls the host has just ended to write their
	// answers, for up to sessionCloseWait: a read of stdin in progress
	// may keep it from returning.
	go func() { _ = ss.Close() }()
	select {
	case <-ended:
	case <-time.After(sessionCloseWait):
	}
	log.Info("stopped")
	return nil
}
