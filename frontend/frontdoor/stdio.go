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
	"github.com/opentool-host/opentool-host/host/core"
	"github.com/opentool-host/opentool-host/host/tasks"
	"github.com/opentool-host/opentool-host/internal/mcpsession"
	"github.com/opentool-host/opentool-host/protocol/mcpmethod"
)

// sessionCloseWait bounds the wait for the stdio MCP session to write the
// answers of the calls that ended with the host, after a signal.
const sessionCloseWait = 2 * time.Second

// StdioConfig configures ServeStdio.
type StdioConfig struct {
	// Host is the host's configuration.
	Host core.Config
	// ShutdownTimeout bounds the wait for calls in flight at the end.
	ShutdownTimeout time.Duration
	// Tasks configures the task manager of the client's MCP tasks, in
	// both dialects (core tasks of 2025-11-25, the Tasks extension), kept
	// in this process's memory (Store and Logger are set here). Zero
	// fields take the tasks package's defaults, except After: zero turns
	// every extension call into a task at once (mcp's default is
	// tasks.DefaultAfter).
	Tasks tasks.Config
	// Sole, when set, is given the client's session once it initialized
	// (mcpapi.Config.Sole): give the same to the declared MCP servers
	// (Host.Declared = declared.ServeFor(Sole)), so that their requests
	// outside calls reach this client. nil: they get none.
	Sole *mcpsession.Sole
}

// ServeStdio serves every plugin to one MCP client over this process's
// stdin and stdout (MCP "Transports", stdio: newline-delimited JSON-RPC;
// stdout carries nothing else) until stdin ends or ctx is done (a
// signal); then calls in flight get ShutdownTimeout, every plugin stops
// and the session writes what the ended calls answered. The session
// opens before the plugins start, so that initialize is answered at once
// (a desktop client gives up on a server that does not answer it), and
// the first lists wait for the plugins of the first start, for at most
// cfg.Host.StartTimeout and a second (holdUntilServed, firstLists): many desktop
// clients list once, so the first tools/list, prompts/list and
// resources/list hold every plugin that came up in time, and
// notifications/*/list_changed says when more arrive (or leave); a call
// of a tool not served yet waits for it while the plugins start, as an
// HTTP call does. The
// client is the local user who started the process: no keys, no request
// guard. MCP tasks are served as on /mcp with sessions (core tasks with
// notifications/tasks/status, and the Tasks extension), kept in memory
// for cfg.Tasks.TTL. Errors: the host could not be made or started, or
// the session not opened.
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
	tcfg := cfg.Tasks
	tcfg.Store, tcfg.Logger = tasks.NewMemoryStore(), log.Named("tasks")
	tm, err := tasks.NewManager(tcfg)
	if err != nil {
		closeHost()
		return err
	}
	defer tm.Close() // after the host: the calls of tasks still running end with it
	s := mcpapi.New(h, mcpapi.Config{MaxResultBytes: cfg.Host.MaxResultBytes, Logger: log.Named("mcp"), Tasks: tm, Sole: cfg.Sole})
	started := make(chan struct{})
	listed := firstLists(h, s, started, firstListsBound(cfg.Host.StartTimeout), log)
	s.MCP().AddReceivingMiddleware(holdUntilServed(h, s, listed))
	follow, unfollow := context.WithCancel(context.Background())
	defer unfollow()
	go s.Follow(follow)
	ss, err := s.MCP().Connect(context.Background(), s.Stdio(&mcp.StdioTransport{}), nil)
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
			s.Sync() // every plugin up: listed now, not on Follow's next turn
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

// firstListsGrace is how much longer than the start timeout the first
// lists wait: a plugin that does not start fails at the start timeout,
// and the host's first start ends just after (its names then go to the
// plugins that are up), so that a stuck plugin costs the first list the
// start timeout, not a list without the other plugins' tools.
const firstListsGrace = time.Second

// firstListsBound is how long the first lists wait for the first start:
// startTimeout (Config.StartTimeout; zero: the host's default of 10 s)
// plus firstListsGrace.
func firstListsBound(startTimeout time.Duration) time.Duration {
	if startTimeout <= 0 {
		startTimeout = 10 * time.Second
	}
	return startTimeout + firstListsGrace
}

// firstLists returns a channel closed when the first start's lists may
// be answered: when started is closed (every plugin of the first start
// is up or failed), or bound after the call, whichever is first. At the
// bound it logs, at WARN, the plugins still starting, which the client
// then learns of by notifications/*/list_changed as each comes up. s is
// synced before the channel closes, so that a list answered then holds
// every function served.
func firstLists(h *host.Host, s *mcpapi.Server, started <-chan struct{}, bound time.Duration, log hclog.Logger) <-chan struct{} {
	listed := make(chan struct{})
	go func() {
		defer close(listed)
		timer := time.NewTimer(bound)
		defer timer.Stop()
		select {
		case <-started:
			return
		case <-timer.C:
		}
		var late []string
		for _, p := range h.Plugins() {
			if !p.State.Settled() {
				late = append(late, p.Name)
			}
		}
		s.Sync()
		log.Warn("plugins still starting: the first lists are answered without them; the client is told when they come up (list_changed)",
			"plugins", strings.Join(late, ","), "waited", bound)
	}()
	return listed
}

// holdUntilServed holds each request about tools, prompts, resources and
// completion that arrives while the plugins of the first start are
// starting (until listed is closed: firstLists), so that a client that
// lists once sees every tool of the folder on its first tools/list: the
// lists (tools/list, prompts/list, resources/list, ...) and the other
// requests wait for listed; a tools/call of a tool h serves (its owner
// known: host's routes.go) goes at once, else waits for it or for
// listed. initialize (and server/discover, 2026-07-28's opening) waits
// for listed at most initializeHold, so that its result offers the capabilities of what is served (mcpapi's
// advertise.go: a tools-only folder offers no prompts, resources or
// completions); past it, every capability the host has. ping and
// notifications pass at once. The request's context bounds the wait.
func holdUntilServed(h *host.Host, s *mcpapi.Server, listed <-chan struct{}) mcp.Middleware {
	return func(next mcp.MethodHandler) mcp.MethodHandler {
		return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
			area := method // "tools" of "tools/call"
			if i := strings.IndexByte(method, '/'); i >= 0 {
				area = method[:i]
			}
			var err error
			switch {
			case method == mcpmethod.Initialize || method == mcpmethod.Discover:
				holdInitialize(ctx, listed)
			case area != "tools" && area != "prompts" && area != "resources" && area != "completion":
			case method == mcpmethod.ToolsCall:
				p, _ := req.GetParams().(*mcp.CallToolParamsRaw)
				if p != nil {
					err = waitServed(ctx, h, p.Name, listed)
					s.Sync() // the tool reaches the SDK before the call does
				}
			default:
				select {
				case <-listed:
				case <-ctx.Done():
					err = ctx.Err()
				}
			}
			if err != nil {
				return nil, err
			}
			return next(ctx, method, req)
		}
	}
}

// initializeHold is the longest stdio's initialize waits for the first
// start (holdUntilServed): well within the 10 s a desktop client such as
// the MCP Inspector waits for its answer by default.
const initializeHold = 5 * time.Second

// holdInitialize waits until listed is closed, initializeHold has passed
// or ctx ends, whichever is first.
func holdInitialize(ctx context.Context, listed <-chan struct{}) {
	timer := time.NewTimer(initializeHold)
	defer timer.Stop()
	select {
	case <-listed:
	case <-timer.C:
	case <-ctx.Done():
	}
}

// waitServed waits until h serves the function tool, started is closed
// (the start ended) or ctx ends (its error).
func waitServed(ctx context.Context, h *host.Host, tool string, started <-chan struct{}) error {
	for {
		changed := h.Changed()
		if h.Function(tool) != nil {
			return nil
		}
		select {
		case <-started:
			return nil
		case <-changed:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}
