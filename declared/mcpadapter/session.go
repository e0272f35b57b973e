package mcpadapter

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/opentool-host/opentool-host/host/tasks/mcptasks"
	"github.com/opentool-host/opentool-host/internal/version"
	"github.com/opentool-host/opentool-host/pluginsdk"
	"github.com/opentool-host/opentool-host/protocol/decl"
	"github.com/opentool-host/opentool-host/protocol/mcpmethod"
	"github.com/opentool-host/opentool-host/protocol/opentool"
)

// limitError is a server's answer past one of the host's limits
// (maxTools): reported as such, never as the server's exit, though the
// host ends the session for it.
type limitError struct{ msg string }

// Error implements error.
func (e *limitError) Error() string { return e.msg }

// relistTimeout bounds one tools/list after list_changed.
const relistTimeout = 30 * time.Second

// maxTools bounds one server's tool list (a server whose pagination
// never ends is refused, not followed forever).
const maxTools = 10000

// Run connects to the server, serves its tools (Load, CallJSON) and
// follows its tool list until the session ends, and returns why. Call
// it once. The error is never nil:
//
//   - the connection attempt failed, with the reason Load also gives:
//     the command could not start, the server exited first (`MCP server
//     "notes" exited (exit status 3) before it answered initialize`), or
//     did not answer initialize or tools/list within
//     Options.InitTimeout or before the host's Load deadline (`MCP
//     server "notes" did not answer initialize within 10s`; the server
//     is then killed);
//   - the server exited (`MCP server "notes" exited (signal: killed)`)
//     or a remote server closed the session;
//   - ctx ended: ctx's error, once the session is closed (stdin closed,
//     the server given Options.TerminateGrace, then SIGTERM, then
//     SIGKILL).
func (a *Adapter) Run(ctx context.Context) error {
	if a.perUser() {
		defer a.runUsers(ctx)()
	}
	cs, proc, err := a.connect(ctx)
	if err != nil {
		return err
	}
	fctx, stop := context.WithCancel(ctx)
	defer stop()
	defer a.endClients(false)
	if a.opts.Sole != nil && a.relay.rootsChanged != nil { // the host's only client's roots changed: so did the server's
		defer a.opts.Sole.OnRootsChanged(a.relay.rootsChanged)()
		if a.opts.Sole.Session() != nil {
			a.relay.rootsChanged() // the client came while connecting: the server may have asked before
		}
	}
	go a.follow(fctx)
	go a.idleOut(fctx)
	for {
		err := a.wait(ctx, cs, proc)
		if ctx.Err() != nil || !a.parkedEnd(cs) {
			return err
		}
		if cs, proc, err = a.awaitWake(ctx); err != nil {
			return err
		}
	}
}

// PID implements pluginsdk.LocalRunner: the command server's process
// id once it started, 0 before and for a URL.
func (a *Adapter) PID() int {
	if a.isParked() {
		return 0
	}
	return a.proc.Load().pid()
}

// Ended implements pluginsdk.LocalRunner: the command server's process
// has exited, or a URL server's session ended (lost): a call that
// failed then is the plugin's exit, retryable.
func (a *Adapter) Ended() bool {
	return (a.proc.Load().hasEnded() && !a.isParked()) || a.lost.Load() != nil
}

// lose ends the session with a server reached by URL that cannot be
// reached (reach: a connection refused, a stream broken with no new
// connection possible), so that the calls in flight fail at once instead
// of waiting on the SDK's reconnection (five tries over about 20 s) and
// Run returns why; the host then retries with backoff. Only the first
// reason is kept; one during the connection attempt only marks it.
func (a *Adapter) lose(err error) {
	if !a.lost.CompareAndSwap(nil, &err) {
		return
	}
	a.log.Warn("MCP server cannot be reached; ending its session", "server", a.launch.Name, "url", a.launch.Server.URL, "error", err)
	select {
	case <-a.ready:
		if cs := a.sharedNow(); cs != nil {
			go cs.Close() // its DELETE must not hold up the caller (a read of the stream)
		}
	default:
	}
}

// Kill implements pluginsdk.LocalRunner: it ends the connection attempt
// and kills the command server (its process group and cgroup) at once,
// or closes a URL server's session; Run returns soon after.
func (a *Adapter) Kill() {
	a.abandon(errKilled)
	a.endClients(true)
	a.proc.Load().kill()
	select {
	case <-a.ready:
		if cs := a.sharedNow(); cs != nil && a.launch.Server.URL != "" {
			_ = cs.Close()
		}
	default:
	}
}

// errKilled is the reason of a connection attempt the host ended.
var errKilled = errors.New("stopped by the host")

// connect makes the connection attempt: transport, initialize, the
// first tools/list, all within InitTimeout and before Load gives up. It
// sets a.cs or a.err and closes a.ready.
func (a *Adapter) connect(ctx context.Context) (*mcp.ClientSession, *process, error) {
	defer close(a.ready)
	ictx, cancel := a.initContext(ctx)
	defer cancel()
	t, proc, err := a.sharedTransport()
	if err != nil {
		a.err = fmt.Errorf("MCP server %q: %w", a.launch.Name, err)
		return nil, nil, a.err
	}
	kill := context.AfterFunc(ictx, proc.kill) // a server that does not answer in time
	cs, t, err := a.open(ictx, t)
	switch sse := sseFallback(t, err); {
	case err != nil && ictx.Err() == nil && a.launch.Server.URL == "" && revisionRefused(err):
		a.log.Info("MCP server refused initialize; asking it with server/discover, as a client of "+SessionlessRevision, "server", a.launch.Name, "error", err)
		var derr error
		if cs, proc, derr = a.discover(ictx); derr != nil {
			err = fmt.Errorf("%w; with server/discover: %v", err, derr)
		} else {
			err = nil
		}
	case err != nil && ictx.Err() == nil && sse != nil:
		a.log.Info("MCP server refused streamable HTTP; trying the HTTP+SSE transport of MCP 2024-11-05", "server", a.launch.Name, "error", err)
		var sseErr error
		if cs, sseErr = a.initialize(ictx, sse, ProtocolVersion); sseErr != nil {
			err = fmt.Errorf("%w; over HTTP+SSE: %v", err, sseErr)
		} else {
			err = nil
		}
	}
	if !kill() && err == nil {
		_ = cs.Close()
		err = ictx.Err()
	}
	if err != nil {
		a.err = a.connectError(ctx, ictx, proc, authError(t, err))
		return nil, nil, a.err
	}
	a.park.last = time.Now()
	a.cs.Store(cs)
	return cs, proc, nil
}

// discover makes a second connection attempt, for a server that refused
// initialize (revisionRefused): a new transport (for a command, a new
// process, whose exit connectError then reports) and the SDK's client
// handshake of SessionlessRevision, server/discover (SEP-2575), which
// falls back to initialize of ProtocolVersion itself, as the SDK's client
// alone does. Errors: the transport's, initialize's, ictx's.
func (a *Adapter) discover(ictx context.Context) (*mcp.ClientSession, *process, error) {
	t, proc, err := a.sharedTransport()
	if err != nil {
		return nil, nil, err
	}
	cs, err := a.initializeBefore(ictx, t, proc, SessionlessRevision)
	return cs, proc, err
}

// sharedTransport is the transport of a new shared session
// (transport): for a command, its process started, which a.proc then
// holds, its task statuses tapped (tapTaskStatus). Errors: transport's.
func (a *Adapter) sharedTransport() (mcp.Transport, *process, error) {
	t, proc, err := transport(a.launch, a.opts, a.lose, a.oauth)
	if err != nil {
		return nil, nil, err
	}
	if proc != nil {
		proc.tap = a.tapTaskStatus(a.relay.tap)
		a.proc.Store(proc)
	}
	return t, proc, nil
}

// initializeBefore is initialize of version on t, proc (nil for a URL)
// killed when ictx ends first; a session that was made as ictx ended is
// closed and ictx's error returned.
func (a *Adapter) initializeBefore(ictx context.Context, t mcp.Transport, proc *process, version string) (*mcp.ClientSession, error) {
	kill := context.AfterFunc(ictx, proc.kill)
	cs, err := a.initialize(ictx, t, version)
	if !kill() && err == nil {
		_ = cs.Close()
		err = ictx.Err()
	}
	return cs, err
}

// revisionRefused reports whether err, initialize's, is the server's
// JSON-RPC error saying that it does not speak the revision asked or
// initialize at all, as a server of 2026-07-28 alone answers it (MCP
// 2026-07-28, "Lifecycle", version negotiation: -32022, unsupported
// protocol version, SEP-2575; -32601, method not found; -32602 with the
// versions it supports in data, as 2025-11-25 servers refuse a revision).
func revisionRefused(err error) bool {
	var je *jsonrpc.Error
	if !errors.As(err, &je) {
		return false
	}
	switch je.Code {
	case mcp.CodeUnsupportedProtocolVersion, jsonrpc.CodeMethodNotFound:
		return true
	case jsonrpc.CodeInvalidParams:
		return strings.Contains(string(je.Data), "supported")
	}
	return false
}

// initContext is ctx bounded by InitTimeout and ended when Load gives up.
func (a *Adapter) initContext(ctx context.Context) (context.Context, context.CancelFunc) {
	ictx, cancelCause := context.WithCancelCause(ctx)
	stop := context.AfterFunc(a.abandonCtx, func() { cancelCause(context.Cause(a.abandonCtx)) })
	tctx, cancel := context.WithTimeout(ictx, a.opts.InitTimeout)
	return tctx, func() {
		cancel()
		stop()
		cancelCause(nil)
	}
}

// ProtocolVersion is the MCP revision the adapter asks servers for:
// 2025-11-25, the latest in which a server sends its requests
// (sampling/createMessage, elicitation/create, roots/list) and its
// notifications during a call, which the host relays to the MCP client
// that made the call. (In 2026-07-28 a server returns them as an
// input-required result instead, SEP-2322, and results carry members of
// the new revision the server's own clients of 2025-11-25 would not see.)
const ProtocolVersion = "2025-11-25"

// open opens the shared session over t, as the SDK's client opens one:
// a server reached by streamable HTTP is asked with server/discover first
// (SEP-2575; a server that does not know it, or refuses it, is asked with
// initialize on the same connection, the SDK's own fallback), a command
// or an HTTP+SSE server with initialize of ProtocolVersion (for a command,
// one that refuses initialize is asked again in a new process: connect).
// A server that answers server/discover and lists ProtocolVersion among
// its supportedVersions is asked again, with initialize of
// ProtocolVersion on a new connection: the shared session relays the
// server's requests during a call to the caller (ProtocolVersion), and
// the callers of SessionlessRevision get a session of their own
// (sessionless.go). It returns the transport of the session. Errors:
// initialize's (the fallback's, after a refused server/discover), the
// listing's, ctx's.
func (a *Adapter) open(ctx context.Context, t mcp.Transport) (*mcp.ClientSession, mcp.Transport, error) {
	if a.launch.Server.URL == "" || a.launch.Server.Transport == decl.TransportSSE {
		cs, err := a.initialize(ctx, t, ProtocolVersion)
		return cs, t, err
	}
	cs, first, err := a.handshake(ctx, t, SessionlessRevision)
	if err != nil {
		return nil, t, err
	}
	if cs.InitializeResult().ProtocolVersion < SessionlessRevision || !supports(first, ProtocolVersion) {
		return cs, t, a.prepare(ctx, cs)
	}
	a.log.Debug("MCP server answered server/discover and speaks "+ProtocolVersion+" too; opening the shared session in "+ProtocolVersion, "server", a.launch.Name)
	_ = cs.Close()
	if t, _, err = transport(a.launch, a.opts, a.lose, a.oauth); err != nil {
		return nil, t, err
	}
	cs, err = a.initialize(ctx, t, ProtocolVersion)
	return cs, t, err
}

// supports reports whether raw, a server/discover result (SEP-2575,
// DiscoverResult), lists version among its supportedVersions.
func supports(raw json.RawMessage, version string) bool {
	var dr mcp.DiscoverResult
	return json.Unmarshal(raw, &dr) == nil && slices.Contains(dr.SupportedVersions, version)
}

// initialize connects the MCP client in revision version (initialize,
// MCP "Lifecycle"; for SessionlessRevision, server/discover first) and
// lists the tools; the session is closed again when listing fails.
func (a *Adapter) initialize(ctx context.Context, t mcp.Transport, version string) (*mcp.ClientSession, error) {
	cs, _, err := a.handshake(ctx, t, version)
	if err != nil {
		return nil, err
	}
	return cs, a.prepare(ctx, cs)
}

// handshake connects the MCP client in revision version (initialize,
// MCP "Lifecycle"; for SessionlessRevision, server/discover first, and
// initialize of ProtocolVersion on the same connection when the server
// refuses it, as the SDK does) and returns the session with the first
// result the server sent (server/discover's or initialize's). A failure
// is initialize's (the phase says so) unless ctx ended first.
func (a *Adapter) handshake(ctx context.Context, t mcp.Transport, version string) (*mcp.ClientSession, json.RawMessage, error) {
	a.setPhase(mcpmethod.Initialize)
	if version >= SessionlessRevision {
		a.setPhase(mcpmethod.Discover)
	}
	var once sync.Once // the first result is initialize's or server/discover's (coretasks.go)
	var first json.RawMessage
	ictx := withRawResult(ctx, func(raw json.RawMessage) {
		once.Do(func() { first = raw; a.coreTasks.Store(coreTasksDeclared(raw)) })
	})
	ictx, note := withConnNote(ictx)
	cs, err := a.client().Connect(ictx, t, &mcp.ClientSessionOptions{ProtocolVersion: version})
	if err != nil {
		if ctx.Err() == nil {
			a.setPhase(mcpmethod.Initialize) // the SDK's fallback after a refused server/discover
		}
		return nil, nil, err
	}
	a.keepConn(cs, note)
	return cs, first, nil
}

// prepare lists the tools, the resources and the prompts of cs, a new
// session, and asks for its log messages; cs is closed again when
// listing the tools fails. Errors: the tool list's.
func (a *Adapter) prepare(ctx context.Context, cs *mcp.ClientSession) error {
	a.setPhase(mcpmethod.ToolsList)
	if _, err := a.list(ctx, cs); err != nil {
		_ = cs.Close()
		return err
	}
	a.setPhase("resources/list and prompts/list")
	if _, err := a.listCatalog(ctx, cs); err != nil {
		// The tools serve without them.
		a.log.Warn("MCP server's resources or prompts not served: listing them failed", "server", a.launch.Name, "error", err)
	}
	if ir := cs.InitializeResult(); ir != nil && ir.ProtocolVersion < SessionlessRevision && ir.Capabilities != nil && ir.Capabilities.Logging != nil {
		// Every level: the host filters per client (relay.go).
		if err := cs.SetLoggingLevel(ctx, &mcp.SetLoggingLevelParams{Level: "debug"}); err != nil {
			a.log.Warn("logging/setLevel debug failed; the server's log messages may not all reach clients", "server", a.launch.Name, "error", err)
		}
	}
	a.setPhase("ready")
	return nil
}

// UIExtension is the client capability extension of MCP Apps
// (@modelcontextprotocol/ext-apps: extensions["io.modelcontextprotocol/ui"]
// = {"mimeTypes": [UIMimeType]}), which the shared session declares.
const UIExtension = "io.modelcontextprotocol/ui"

// UIMimeType is the MIME type of an MCP App's ui:// resource.
const UIMimeType = "text/html;profile=mcp-app"

// client is the MCP client: it asks for the tool list again on
// notifications/tools/list_changed, the catalog on prompts/ and
// resources/list_changed (serverSaid: by way of follow, so that lists
// never overlap and none is missed).
func (a *Adapter) client() *mcp.Client {
	impl := &mcp.Implementation{Name: "opentool-host-mcp-adapter", Title: "opentool-host", Version: version.Version}
	// What the adapter relays to the MCP client that made a call
	// (relay.go, clientRequests); roots with listChanged, which the
	// adapter sends after a call whose caller's roots the server got
	// (relay.go, the roots fence), not for its clients' own changes; MCP
	// Apps (UIExtension), whose tools' _meta.ui and ui:// resources the
	// host relays as written: the shared session lists every tool a
	// client may be shown (clientTools: each client session its own).
	caps := &mcp.ClientCapabilities{
		RootsV2:     &mcp.RootCapabilities{ListChanged: true},
		Sampling:    &mcp.SamplingCapabilities{},
		Elicitation: &mcp.ElicitationCapabilities{Form: &mcp.FormElicitationCapabilities{}, URL: &mcp.URLElicitationCapabilities{}},
	}
	caps.AddExtension(UIExtension, map[string]any{"mimeTypes": []string{UIMimeType}})
	c := mcp.NewClient(impl, &mcp.ClientOptions{
		Capabilities:               caps,
		ToolListChangedHandler:     func(context.Context, *mcp.ToolListChangedRequest) { a.serverSaid(pluginsdk.ListTools) },
		ResourceListChangedHandler: func(context.Context, *mcp.ResourceListChangedRequest) { a.serverSaid(pluginsdk.ListResources) },
		PromptListChangedHandler:   func(context.Context, *mcp.PromptListChangedRequest) { a.serverSaid(pluginsdk.ListPrompts) },
		ResourceUpdatedHandler: func(_ context.Context, req *mcp.ResourceUpdatedNotificationRequest) {
			a.catalogChanged(pluginsdk.CatalogChange{URI: req.Params.URI})
		},
		ProgressNotificationHandler: func(_ context.Context, req *mcp.ProgressNotificationClientRequest) {
			a.relay.progress(req.Params)
		},
		LoggingMessageHandler: func(_ context.Context, req *mcp.LoggingMessageRequest) {
			a.relay.message(req.Params)
		},
	})
	c.AddReceivingMiddleware(a.clientRequests)
	addTaskMethods(c)
	a.relay.rootsChanged = func() {
		// The SDK's client sends notifications/roots/list_changed when
		// its roots change. It is never asked for them (clientRequests
		// answers roots/list): one placeholder root, replaced each time.
		c.AddRoots(&mcp.Root{URI: "opentool-host:roots-changed"})
	}
	a.relay.ping = func(ctx context.Context) {
		if cs := a.sharedNow(); cs != nil && !a.isParked() {
			_ = cs.Ping(ctx, nil)
		}
	}
	return c
}

// clientRequests relays the server's requests to its client
// (sampling/createMessage, elicitation/create, roots/list, MCP
// 2025-11-25 "Client Features") to the MCP client that made the call in
// flight (relay.request), and hands every other method to next.
func (a *Adapter) clientRequests(next mcp.MethodHandler) mcp.MethodHandler {
	return relayRequests(a.relay, next)
}

// relayRequests answers the server's requests to its client through r
// (relay.request) and hands every other method to next. The answer
// reaches the server as the client wrote it (rawAnswer): the SDK's
// client would check an elicitation's content against the requested
// schema and fill in the schema's defaults, which only the client that
// asked the user may do; the adapter checks only its shape (checkAnswer).
func relayRequests(r *relay, next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		m, _ := mcpmethod.Lookup(method)
		res, ok := m.NewResult().(mcp.Result)
		if !mcpmethod.IsClientRequest(method) || !ok {
			return next(ctx, method, req)
		}
		raw, err := r.request(method, req.GetParams())
		if err != nil {
			return nil, err
		}
		if err := checkAnswer(method, raw, res); err != nil {
			return nil, &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: fmt.Sprintf("the client's result: %v", err)}
		}
		return rawAnswer{Result: res, raw: raw}, nil
	}
}

// rawAnswer is a client's answer to the server's request, relayed as the
// client wrote it: Result is its decoding (the SDK's type), raw the JSON
// that MarshalJSON writes, byte for byte.
type rawAnswer struct {
	mcp.Result
	raw json.RawMessage
}

// MarshalJSON implements json.Marshaler: the answer as the client wrote it.
func (a rawAnswer) MarshalJSON() ([]byte, error) { return a.raw, nil }

// checkAnswer decodes raw, the client's answer to method, into res and
// checks what MCP asks of its shape ("Client Features"): a JSON object
// of res's type; for elicitation/create, action one of accept, decline
// and cancel, and content (when there) an object whose values are
// strings, numbers, booleans or arrays of strings (ElicitResult). It
// does not check the content against the requested schema: that is the
// server's to judge.
func checkAnswer(method string, raw json.RawMessage, res mcp.Result) error {
	if err := json.Unmarshal(raw, res); err != nil {
		return err
	}
	e, ok := res.(*mcp.ElicitResult)
	if !ok {
		return nil
	}
	switch e.Action {
	case "accept", "decline", "cancel":
	default:
		return fmt.Errorf("action %q is none of accept, decline and cancel", e.Action)
	}
	for k, v := range e.Content {
		if !primitive(v) {
			return fmt.Errorf("content.%s is %T, not a string, number, boolean or array of strings", k, v)
		}
	}
	return nil
}

// primitive reports whether v, a decoded JSON value, is a string, a
// number, a boolean or an array of strings: an elicitation answer's
// value (MCP "Elicitation", ElicitResult.content).
func primitive(v any) bool {
	switch v := v.(type) {
	case string, float64, bool:
		return true
	case []any:
		for _, s := range v {
			if _, ok := s.(string); !ok {
				return false
			}
		}
		return true
	}
	return false
}

// connectError is the reason a connection attempt failed with err.
func (a *Adapter) connectError(ctx, ictx context.Context, proc *process, err error) error {
	name := a.launch.Name
	switch {
	case a.abandonCtx.Err() != nil:
		return context.Cause(a.abandonCtx)
	case ctx.Err() != nil:
		return fmt.Errorf("MCP server %q: connection attempt %w", name, ctx.Err())
	case ictx.Err() != nil:
		return a.unanswered(a.opts.InitTimeout)
	case errors.As(err, new(*limitError)):
		return fmt.Errorf("MCP server %q: %s: %w", name, a.currentPhase(), err)
	case strings.Contains(err.Error(), "maximum line length"): // the SDK's errFrameTooLarge, unexported
		return fmt.Errorf("MCP server %q: %s: a line longer than %d MiB, the most the host reads of one message: %w", name, a.currentPhase(), maxLine>>20, err)
	case !proc.hasStarted():
		return fmt.Errorf("MCP server %q: start: %w", name, err)
	case proc.hasEnded():
		return fmt.Errorf("MCP server %q exited (%s) before it answered %s", name, proc.status(), a.currentPhase())
	}
	return fmt.Errorf("MCP server %q: %s: %w", name, a.currentPhase(), err)
}

// list lists every tool (following nextCursor, MCP "Pagination"),
// converts them and logs what was left out. changed reports whether the
// document differs from the one before. Errors are the SDK's (the
// callers name the server and the phase).
func (a *Adapter) list(ctx context.Context, cs *mcp.ClientSession) (changed bool, err error) {
	var tools []*mcp.Tool
	// Filled by the sink before each page reaches the SDK (raw.go).
	support, defs := map[string]string{}, map[string]json.RawMessage{}
	lctx := withRawResult(ctx, func(raw json.RawMessage) { rawTools(raw, defs, support) })
	for t, err := range cs.Tools(lctx, nil) {
		if err != nil {
			return false, err
		}
		if len(tools) == maxTools {
			return false, &limitError{fmt.Sprintf("more than %d tools, the most the host reads of one server's tools/list", maxTools)}
		}
		tools = append(tools, t)
	}
	info := serverInfo{name: a.launch.Name, taskSupport: support, defs: defs, coreTasks: a.coreTasks.Load()}
	if ir := cs.InitializeResult(); ir != nil {
		info.impl = ir.ServerInfo
		if ir.Capabilities != nil {
			_, info.tasks = ir.Capabilities.Extensions[mcptasks.Extension]
		}
	}
	conv := convert(info, tools)
	if err := opentool.Validate(conv.doc); err != nil { // a bug of convert, if ever
		return false, fmt.Errorf("converted document: %w", err)
	}
	a.logFaults(conv)
	a.mu.Lock()
	old := a.conv.doc
	a.conv = conv
	a.mu.Unlock()
	changed = !sameDocument(old, conv.doc)
	if changed {
		a.toolLists.clear() // the server's tools changed: each client's too, maybe
	}
	return changed, nil
}

// logFaults logs each tool left out (the host lists them in /health too,
// from the document's refused list) and, at debug level, what the
// OpenTool projection leaves out of the others' schemas (which are served
// and checked as declared).
func (a *Adapter) logFaults(c converted) {
	for _, f := range c.dropped {
		a.log.Warn("MCP tool not served", "server", a.launch.Name, "tool", f.Tool, "reason", f.Reason)
	}
	for _, f := range c.partial {
		a.log.Debug("MCP tool schema: the OpenTool projection leaves out part of it (served and checked as declared)", "server", a.launch.Name, "tool", f.Tool, "lost", f.Reason)
	}
}

// sameDocument reports whether a and b encode to the same JSON.
func sameDocument(a, b *opentool.OpenTool) bool {
	if a == nil || b == nil {
		return a == b
	}
	ja, errA := json.Marshal(a)
	jb, errB := json.Marshal(b)
	return errA == nil && errB == nil && bytes.Equal(ja, jb)
}

// follow lists the tools again after each list_changed until ctx ends,
// and signals DocumentChanged when the document changed; the same for
// the catalog (CatalogChanged); then it passes the server's list_changed
// on as it came (ListsChanged). A failed list is logged and the previous
// one kept.
func (a *Adapter) follow(ctx context.Context) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-a.relist:
		case <-a.recatalog:
			lctx, cancel := context.WithTimeout(ctx, relistTimeout)
			changed, err := a.listCatalogShared(lctx)
			cancel()
			switch {
			case err != nil && ctx.Err() == nil:
				a.log.Error("resources or prompts list after list_changed failed; serving the previous ones", "server", a.launch.Name, "error", err)
			case changed:
				a.catalogChanged(pluginsdk.CatalogChange{})
			}
			a.passOn(pluginsdk.ListPrompts, pluginsdk.ListResources)
			continue
		}
		lctx, cancel := context.WithTimeout(ctx, relistTimeout)
		changed, err := a.listShared(lctx)
		cancel()
		switch {
		case err != nil && ctx.Err() == nil:
			a.log.Error("tools/list after list_changed failed; serving the previous list", "server", a.launch.Name, "error", err)
		case changed:
			select {
			case a.changed <- struct{}{}:
			default:
			}
			lctx, cancel := context.WithTimeout(ctx, relistTimeout)
			a.relistSessionless(lctx)
			cancel()
		}
		a.passOn(pluginsdk.ListTools)
	}
}

// listShared is list on the shared session, woken when parked.
func (a *Adapter) listShared(ctx context.Context) (bool, error) {
	cs, err := a.sharedSession(ctx)
	if err != nil {
		return false, err
	}
	return a.list(ctx, cs)
}

// listCatalogShared is listCatalog on the shared session, woken when
// parked.
func (a *Adapter) listCatalogShared(ctx context.Context) (bool, error) {
	cs, err := a.sharedSession(ctx)
	if err != nil {
		return false, err
	}
	return a.listCatalog(ctx, cs)
}

// wait waits for the session to end (the server exited or closed it)
// and returns why; when ctx ends first it closes the session.
func (a *Adapter) wait(ctx context.Context, cs *mcp.ClientSession, proc *process) error {
	done := make(chan error, 1)
	go func() { done <- cs.Wait() }()
	select {
	case err := <-done:
		if proc == nil {
			a.lost.CompareAndSwap(nil, &err) // calls failing now: the session's end
		}
		return a.ended(proc, err)
	case <-ctx.Done():
		_ = cs.Close()
		<-done
		return ctx.Err()
	}
}

// ended is the reason of a session that ended by itself with err.
func (a *Adapter) ended(proc *process, err error) error {
	if proc != nil && err != nil && !errors.Is(err, io.EOF) && !errors.Is(err, mcp.ErrConnectionClosed) {
		return fmt.Errorf("MCP server %q: session ended: %v; the server exited (%s)", a.launch.Name, err, proc.status())
	}
	if proc != nil {
		return fmt.Errorf("MCP server %q exited (%s)", a.launch.Name, proc.status())
	}
	if lost := a.lost.Load(); lost != nil && *lost != nil && *lost != err {
		return fmt.Errorf("MCP server %q at %s cannot be reached: %v", a.launch.Name, a.launch.Server.URL, *lost)
	}
	if err == nil {
		return fmt.Errorf("MCP server %q at %s closed the session", a.launch.Name, a.launch.Server.URL)
	}
	return fmt.Errorf("MCP server %q at %s: session ended: %w", a.launch.Name, a.launch.Server.URL, err)
}
