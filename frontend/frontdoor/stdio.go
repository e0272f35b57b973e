package frontdoor

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/opentool-host/opentool-host/frontend/mcpapi"
	"github.com/opentool-host/opentool-host/host"
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
// and the session writes what the ended calls answered. The session
// opens before the plugins start, so that initialize is answered at once
// (a desktop client gives up on a server that does not answer it);
// requests about tools, prompts, resources and completion wait until
// every plugin has started or failed (waitForStart), so that the first
// tools/list is whole for the clients that do not follow
// notifications/tools/list_changed, which the others get for every later
// change. The client is the local user who started the process: no
// keys, no request guard. Errors: the host could not be made or
// started, or the session not opened.
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
	s := mcpapi.New(h, mcpapi.Config{MaxResultBytes: cfg.Host.MaxResultBytes, Logger: log.Named("mcp")})
	started := make(chan struct{})
	s.MCP().AddReceivingMiddleware(waitForStart(started))
	follow, unfollow := context.WithCancel(context.Background())
	defer unfollow()
	go s.Follow(follow)
	ss, err := s.MCP().Connect(context.Background(), &mcp.StdioTransport{}, nil)
	if err != nil {
		closeHost()
		return fmt.Errorf("mcp: %w", err)
	}
	log.Info("serving MCP on stdio; starting plugins")
	startErr := make(chan error, 1)
	go func() { startErr <- h.Start(ctx) }()
	ended := make(chan struct{})
	go func() {
		_ = ss.Wait()
		close(ended)
	}()
	var failed error
serve:
	for {
		select {
		case err := <-startErr:
			startErr = nil
			switch {
			case err != nil && ctx.Err() != nil:
				log.Info("signal while the plugins start: shutting down")
				break serve
			case err != nil:
				failed = err
				break serve
			}
			s.Sync() // the tools of every plugin up, before the held requests go on
			close(started)
			log.Info("plugins started", "functions", len(h.Functions()))
		case <-ended:
			log.Info("end of input: shutting down")
			break serve
		case <-ctx.Done():
			log.Info("signal: shutting down")
			break serve
		}
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
	return failed
}

// waitForStart holds the requests whose answer depends on the plugins
// (tools/, prompts/, resources/, completion/ methods) until started is
// closed or the request's context ends; initialize, ping and
// notifications pass at once.
func waitForStart(started <-chan struct{}) mcp.Middleware {
	return func(next mcp.MethodHandler) mcp.MethodHandler {
		return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
			area := method // an MCP method's area: "tools" of "tools/list"
			if i := strings.IndexByte(method, '/'); i >= 0 {
				area = method[:i]
			}
			switch area {
			case "tools", "prompts", "resources", "completion":
				select {
				case <-started:
				case <-ctx.Done():
					return nil, ctx.Err()
				}
			}
			return next(ctx, method, req)
		}
	}
}
