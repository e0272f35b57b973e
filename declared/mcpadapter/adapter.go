package mcpadapter

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/url"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/opentool-host/opentool-host/declared/oauthlogin"
	"github.com/opentool-host/opentool-host/host/core"
	"github.com/opentool-host/opentool-host/host/supervise"
	"github.com/opentool-host/opentool-host/host/tasks/mcptasks"
	"github.com/opentool-host/opentool-host/internal/mcpsession"
	"github.com/opentool-host/opentool-host/internal/wire"
	"github.com/opentool-host/opentool-host/pluginsdk"
	"github.com/opentool-host/opentool-host/process/launcher"
	"github.com/opentool-host/opentool-host/protocol/decl"
	"github.com/opentool-host/opentool-host/protocol/opentool"
)

// DefaultInitTimeout is the default of Options.InitTimeout.
const DefaultInitTimeout = 60 * time.Second

// DefaultTerminateGrace is the default of Options.TerminateGrace.
const DefaultTerminateGrace = 2 * time.Second

// loadMargin is how long before the deadline of the host's Load the
// adapter gives up waiting for the server, so that the host gets the
// reason and not its own timeout.
const loadMargin = 500 * time.Millisecond

// Options tunes an Adapter. The zero value is what Serve uses.
type Options struct {
	// InitTimeout bounds the connection attempt: starting the server,
	// initialize (MCP "Lifecycle") and the first complete tools/list.
	// Default DefaultInitTimeout (60 s). The deadline of the host's Load
	// (its --start-timeout), when sooner, ends the attempt earlier.
	InitTimeout time.Duration

	// Starter starts a command server as the host starts a plugin: from
	// the plugin's environment (launcher.Starter.Env, to which the
	// declared env is added), confined by its policy, its stderr to
	// Starter.Stderr (which the host logs under the plugin's name). nil:
	// an empty environment and no confinement (tests).
	Starter *launcher.Starter

	// TerminateGrace is how long a command server has to exit after its
	// stdin is closed, and again after SIGTERM, before it is killed, when
	// the adapter ends the session (MCP "Lifecycle", stdio shutdown).
	// Default DefaultTerminateGrace (2 s).
	TerminateGrace time.Duration

	// Shared, when true, sends every caller's calls through the one
	// shared session ("sessions": "shared" in the declaration); false,
	// the default: each MCP client session gets an upstream session of
	// its own (clients.go).
	Shared bool

	// NoLending, when true ("lendReads": false in the declaration), gives
	// every call of a client session an upstream session of its own,
	// read-only ones too; false, the default: a client session without
	// one is lent the shared session for a call of a tool the server
	// annotates readOnlyHint while no other call changed it (borrow.go).
	// Ignored with Shared.
	NoLending bool

	// MaxSessions bounds the client sessions with an upstream session of
	// their own at once ("maxSessions"; for a command server, the server
	// processes besides the shared one); a client session beyond takes an
	// idle one's place or is served by the shared session (clients.go).
	// Default DefaultMaxSessions (16).
	MaxSessions int

	// MaxSessionsPerKey is one API key's share of those places
	// ("maxSessionsPerKey", at most MaxSessions): its client sessions
	// beyond it take an idle place of its own or are served by the shared
	// session, never another key's place (clients.go, shareOf). 0: a
	// quarter of MaxSessions (at least 1) when more than one key is in
	// force (mcpsession.Session.Keys), every place with keys off or one
	// key.
	MaxSessionsPerKey int

	// ReclaimIdle is how long a client's own session must have gone
	// unused (no request of its client in flight, none ended since)
	// before its place may be given to another client ("reclaimIdle" in
	// the declaration, clients.go: reclaimFor), so that a client calling
	// steadily keeps its session, and what the server keeps for it, while
	// more clients than places come; and how long a pristine one must
	// have gone unused before it retires (retire.go). 0:
	// DefaultReclaimIdle (5 s); negative: as soon as nothing of its
	// client is in flight.
	ReclaimIdle time.Duration

	// SharedIdle is how long the shared session of a per-client command
	// server may go unused, while client sessions of their own are open,
	// before its process is stopped ("parked", park.go; "sharedIdle" in
	// the declaration); it starts again at its next use. 0:
	// DefaultSharedIdle (30 s); negative: never parked.
	SharedIdle time.Duration

	// Sole, for a host with one client (stdio), is that client: the
	// shared session sends it what the server asks outside calls
	// (roots/list at its start or after notifications/roots/list_changed,
	// sampling, elicitation), with no roots fence (no other caller shares
	// the session), and tells the server of the client's
	// notifications/roots/list_changed (relay.go). nil: none (the HTTP
	// front ends' many clients).
	Sole *mcpsession.Sole

	// Tokens holds the principals' tokens of a server declared
	// "credentials": "per-user" (peruser.go), and Logins begins their
	// logins (nil: a caller without a token is told the command that
	// logs in). A per-user server without Tokens fails at its start.
	Tokens oauthlogin.Store
	Logins oauthlogin.Logins
	// Registry is the host's login step (login.go): a server declared by
	// URL with "oauth" of the authorization code grant registers its
	// login there and uses the tokens its Store holds; nil: such a
	// server fails with ErrNeedsAuthorization.
	Registry *oauthlogin.Registry
}

// withDefaults fills the zero fields.
func (o Options) withDefaults() Options {
	if o.InitTimeout <= 0 {
		o.InitTimeout = DefaultInitTimeout
	}
	if o.Starter == nil {
		o.Starter = &launcher.Starter{}
	}
	if o.TerminateGrace <= 0 {
		o.TerminateGrace = DefaultTerminateGrace
	}
	if o.MaxSessions <= 0 {
		o.MaxSessions = DefaultMaxSessions
	}
	if o.SharedIdle == 0 {
		o.SharedIdle = DefaultSharedIdle
	}
	if o.ReclaimIdle == 0 {
		o.ReclaimIdle = DefaultReclaimIdle
	}
	return o
}

// Adapter is a pluginsdk.Tool whose functions are the tools of one MCP
// server, for which it is an MCP client in the host's process. Create it
// with New, serve it (declared.Serve: its document, changes and catalog
// through pluginsdk.Local, its calls and catalog requests as a
// supervise.Direct) and call Run, which starts the server, connects and
// returns when the server's session ends; Load waits for the connection.
type Adapter struct {
	launch  decl.Launch
	log     hclog.Logger
	opts    Options
	started time.Time
	oauth   oauthClient // the server's "oauth", one for all its sessions
	conns   sync.Map    // *mcp.ClientSession → its *rawConn, over stdio and HTTP+SSE, until reading it ends (keepConn)

	changed chan struct{} // DocumentChanged's channel (buffer 1)
	relist  chan struct{} // a list_changed to act on (buffer 1)

	abandonCtx context.Context         // ended when Load gives up waiting
	abandon    context.CancelCauseFunc // ends abandonCtx with the reason
	phase      atomic.Pointer[string]  // what the connection attempt waits for

	ready chan struct{}                     // closed when the connection attempt ended
	cs    atomic.Pointer[mcp.ClientSession] // the shared session: set before ready closes; nil when it failed; a new one after each wake (park.go)
	err   error                             // set before ready closes: why it failed
	park  parking                           // the shared session's parking (park.go)

	mu   sync.RWMutex // guards conv and cat
	conv converted
	cat  pluginsdk.Catalog // the server's resources, templates, prompts (catalog.go)

	recatalog  chan struct{}                // a resources or prompts list_changed to act on (buffer 1)
	catChanged chan pluginsdk.CatalogChange // CatalogChanged's channel

	// saidChanged holds the lists (listBit) whose list_changed a session
	// of the server sent and follow has yet to pass on (lists.go);
	// lists is ListsChanged's channel.
	saidChanged atomic.Uint32
	lists       chan string

	relay *relay // the server's messages during calls (relay.go)

	proc atomic.Pointer[process] // a command server's process, once Run starts it
	// lost, for a server reached by URL, is why its session ended (the
	// server could not be reached: lose; or it closed the session), set
	// once; nil while it serves.
	lost atomic.Pointer[error]

	clients clients // the client sessions' own upstream sessions (clients.go)
	// ownRestarts counts the clients' own sessions that ended by
	// themselves (ownexit.go: ClientRestarts).
	ownRestarts atomic.Int64
	toolLists   toolLists   // the tools new upstream sessions were listed, by client (clients.go)
	lending     lending     // the shared session's lending of read-only calls (borrow.go)
	coreTasks   atomic.Bool // initialize declared core tasks for tools/call (coretasks.go)
	watches     taskWatches // the core tasks awaited, for the server's status notifications (coretasks.go)
	users       *users      // each principal's own Adapter, for a per-user server (peruser.go); nil otherwise
}

var (
	_ supervise.Direct          = (*Adapter)(nil)
	_ pluginsdk.Tool            = (*Adapter)(nil)
	_ pluginsdk.JSONCaller      = (*Adapter)(nil)
	_ pluginsdk.ResultCaller    = (*Adapter)(nil)
	_ pluginsdk.DocumentWatcher = (*Adapter)(nil)
	_ pluginsdk.LocalRunner     = (*Adapter)(nil)
	_ pluginsdk.LogWatcher      = (*Adapter)(nil)
	_ pluginsdk.ListWatcher     = (*Adapter)(nil)
	_ pluginsdk.ClientRestarter = (*Adapter)(nil)
)

// New returns an Adapter for the declared server l, not yet connected;
// log receives the conversion warnings.
func New(l decl.Launch, log hclog.Logger, opts Options) *Adapter {
	a := &Adapter{
		launch:  l,
		log:     log,
		opts:    opts.withDefaults(),
		started: time.Now(),
		changed: make(chan struct{}, 1),
		relist:  make(chan struct{}, 1),

		recatalog:  make(chan struct{}, 1),
		catChanged: make(chan pluginsdk.CatalogChange, catalogBuffer),
		lists:      make(chan string, len(listBits)),
		ready:      make(chan struct{}),
		relay:      newRelay(l.Name, log),
		oauth:      newOAuthClient(l.Name, l.Server, opts.Registry),
	}
	if l.Server.PerUser() {
		a.opts.Shared = true // the listing session serves no caller's session (peruser.go)
		a.users = &users{m: map[string]*user{}}
		if opts.Tokens == nil {
			a.oauth = oauthClient{err: fmt.Errorf("MCP server %q: its credentials are per-user, and the host keeps no tokens: start it with --oauth-token-key", l.Name)}
		} else {
			a.oauth = oauthClient{h: &tokenHandler{store: opts.Tokens, refresher: loginOf(a.oauth), server: l.Name, principal: a.listingPrincipal}}
		}
	}
	a.park.woke = make(chan struct{}, 1)
	a.park.now = make(chan struct{}, 1)
	a.relay.sole = opts.Sole
	if a.lends() {
		a.relay.lendingEnds = a.endLending
	}
	a.abandonCtx, a.abandon = context.WithCancelCause(context.Background())
	a.setPhase("start")
	return a
}

// Load implements pluginsdk.Tool: the OpenTool document of the server's
// current tool list, once connected. While the server has not answered
// it waits, until shortly (0.5 s) before ctx's deadline: then it ends the
// connection attempt and fails with the reason, e.g. `MCP server "notes"
// did not answer initialize within 9.5s` (code 500). A failed attempt
// fails every Load with its reason.
func (a *Adapter) Load(ctx context.Context) (*opentool.OpenTool, error) {
	if err := a.await(ctx); err != nil {
		return nil, pluginsdk.ToolFailure("%v", err)
	}
	a.mu.RLock()
	defer a.mu.RUnlock()
	return a.conv.doc, nil
}

// await waits for the connection attempt and returns its error; at
// loadMargin before ctx's deadline it abandons the attempt instead.
func (a *Adapter) await(ctx context.Context) error {
	wait := ctx
	if d, ok := ctx.Deadline(); ok {
		var cancel context.CancelFunc
		wait, cancel = context.WithDeadline(ctx, d.Add(-loadMargin))
		defer cancel()
	}
	select {
	case <-a.ready:
		return a.err
	case <-wait.Done():
	}
	if ctx.Err() != nil {
		return fmt.Errorf("MCP server %q: %w while waiting for %s", a.launch.Name, ctx.Err(), a.currentPhase())
	}
	err := a.unanswered(time.Since(a.started))
	a.abandon(err)
	return err
}

// connected waits for the connection attempt and returns its error, or
// ctx's when ctx ends first.
func (a *Adapter) connected(ctx context.Context) error {
	select {
	case <-a.ready:
		return a.err
	case <-ctx.Done():
		return fmt.Errorf("MCP server %q: %w while waiting for %s", a.launch.Name, ctx.Err(), a.currentPhase())
	}
}

// unanswered is the error of a server that has not answered the current
// phase after d.
func (a *Adapter) unanswered(d time.Duration) error {
	return fmt.Errorf("MCP server %q did not answer %s within %v", a.launch.Name, a.currentPhase(), d.Round(100*time.Millisecond))
}

func (a *Adapter) setPhase(p string)    { a.phase.Store(&p) }
func (a *Adapter) currentPhase() string { return *a.phase.Load() }

// LogMessages implements pluginsdk.LogWatcher: the server's log messages
// sent outside calls (at most 20 a second; relay.go).
func (a *Adapter) LogMessages() <-chan json.RawMessage { return a.relay.outside }

// DocumentChanged implements pluginsdk.DocumentWatcher: a value after
// each notifications/tools/list_changed (MCP "Tools", "List Changed
// Notification") whose new tool list gives a different document.
func (a *Adapter) DocumentChanged() <-chan struct{} { return a.changed }

// Call implements pluginsdk.Tool by way of CallJSON.
func (a *Adapter) Call(ctx context.Context, name string, args map[string]any) (map[string]any, error) {
	b, err := json.Marshal(args)
	if err != nil {
		return nil, pluginsdk.InvalidArguments("arguments: %v", err)
	}
	out, err := a.CallJSON(ctx, name, b)
	if err != nil {
		return nil, err
	}
	var m map[string]any
	if err := json.Unmarshal(out, &m); err != nil {
		return nil, pluginsdk.ToolFailure("result: %v", err)
	}
	return m, nil
}

// CallJSON implements pluginsdk.JSONCaller: CallDirect's call for a
// caller without an Exchange, its result mapped by resultJSON (the
// OpenTool projection). Errors (*pluginsdk.Error): as CallDirect's, and
// 500 for an isError result (its text).
func (a *Adapter) CallJSON(ctx context.Context, name string, args []byte) ([]byte, error) {
	t, err := a.callTool(ctx, nil, name, args)
	if err != nil {
		return nil, err
	}
	res, err := t.decoded()
	if err != nil {
		return nil, err
	}
	return resultJSON(res)
}

// CallDirect implements supervise.Direct: tools/call (MCP "Tools",
// "Calling Tools") of the MCP tool served as name, with args (a JSON
// object; empty or null is {}), for the caller of x (its MCP client
// session or sessionless request picks the upstream session, its _meta
// goes to the server, the server's messages during the call go to its
// Notify and Request: relay.go). The server's result goes on as an MCP
// result: a plain one (text blocks and isError only, mcpresult.Plain) as
// the server wrote it (DirectResult.MCPJSON: an MCP client of the host
// whose call the host answers itself gets those bytes, decoded by no
// one), any other decoded once (DirectResult.MCP, callResult): every
// content block with its annotations, structuredContent, isError and
// _meta. ctx's end
// reaches the server as notifications/cancelled (MCP "Cancellation").
// Errors (*wire.ToolError): 404 for a name not served; 400 when the
// server answered JSON-RPC -32602 (invalid params); 500 for another
// JSON-RPC error, a closed connection, or a failed connection attempt;
// Exited when the server's process exited; Login when the caller must
// log in first (peruser.go).
func (a *Adapter) CallDirect(ctx context.Context, x *core.Exchange, name string, args []byte) (supervise.DirectResult, error) {
	t, err := a.callTool(ctx, x, name, args)
	if err == nil && t.plain != nil {
		return supervise.DirectResult{MCPJSON: t.plain}, nil // nothing for callResult to do
	}
	res := t.res
	if err == nil {
		res, err = callResult(res, relayed(x))
	}
	if err != nil {
		return supervise.DirectResult{}, a.toolError(err)
	}
	return supervise.DirectResult{MCP: res}, nil
}

// CallResult implements pluginsdk.ResultCaller (the Adapter served over
// the plugin wire alone: pluginsdk.Local, testkit.LocalConn): CallDirect's
// call and result for a caller without an Exchange. Errors: CallJSON's,
// but an isError result is a result.
func (a *Adapter) CallResult(ctx context.Context, name string, args []byte) (pluginsdk.Result, error) {
	t, err := a.callTool(ctx, nil, name, args)
	var res *mcp.CallToolResult
	if err == nil {
		res, err = t.decoded()
	}
	if err == nil {
		res, err = callResult(res, false)
	}
	return pluginsdk.Result{MCP: res}, err
}

// toolError is err, a *pluginsdk.Error (or any error: code 500), as the
// *wire.ToolError a Direct plugin's call fails with: Exited when the
// server's program had ended by then (Ended), so that the host reports
// the plugin's exit (retryable), not the tool's own error.
func (a *Adapter) toolError(err error) *wire.ToolError {
	te := pluginsdk.WireError(err)
	te.Exited = te.Exited || a.Ended()
	return te
}

// callTool sends tools/call of the MCP tool served as name for the
// caller of x and returns its result (sendCall's: plain or decoded).
// Errors: as CallJSON's.
func (a *Adapter) callTool(ctx context.Context, x *core.Exchange, name string, args []byte) (toolResult, error) {
	if a.perUser() { // the caller's own user, with its own token (peruser.go)
		u, release, err := a.userFor(ctx, x)
		if err != nil {
			return toolResult{}, err
		}
		defer release()
		return u.callTool(ctx, x, name, args)
	}
	if err := a.connected(ctx); err != nil {
		return toolResult{}, pluginsdk.ToolFailure("%v", err)
	}
	a.mu.RLock()
	tool, ok := a.conv.names[name]
	asTask, readOnly := a.conv.tasked[tool], a.conv.readOnly[tool] // never both (convert)
	a.mu.RUnlock()
	if !ok {
		return toolResult{}, pluginsdk.FunctionNotFound(name)
	}
	r := x.SessionlessRequest()
	modern, err := a.sessionlessFor(ctx, x)
	if err != nil {
		return toolResult{}, callError(ctx, a.launch.Name, tool, err)
	}
	if modern == nil && a.refuseRetry(r, tool) {
		return toolResult{}, pluginsdk.InvalidArguments("requestState was not issued by this host")
	}
	if modern != nil {
		cs, rel := modern.session()
		return a.callOn(ctx, x, route{cs: cs, rel: rel, modern: modern}, tool, asTask, args)
	}
	sess := a.callerSession(ctx, x, true)
	defer a.holdOf(sess)()
	if loan, ok := a.lendFor(sess, readOnly); ok {
		res, err := a.callLent(ctx, loan, x, tool, args)
		if !loan.again.Load() || ctx.Err() != nil {
			return res, err
		}
		// The server asked or logged during it: made again on the
		// client's own session (borrow.go).
	}
	cs, rel, how, err := a.sessionOf(ctx, sess)
	if err != nil {
		return toolResult{}, callError(ctx, a.launch.Name, tool, err)
	}
	switch {
	case readOnly:
	case rel == a.relay:
		if err := a.spoilShared(ctx, tool); err != nil {
			return toolResult{}, callError(ctx, a.launch.Name, tool, err)
		}
	case rel.own != nil:
		rel.own.spoiled.Store(true) // never retired (retire.go)
	}
	return a.callOn(ctx, x, route{cs: cs, rel: rel, shared: how == servedForPlace}, tool, asTask, args)
}

// route is where callTool sends one call: session cs, whose messages
// relay rel takes; modern, the session of SessionlessRevision it is (nil:
// none); shared, a client session served by the shared session for want
// of a place (relayCall.shared); lent, the loan of the shared session
// the call is made on (borrow.go; nil: none).
type route struct {
	cs     *mcp.ClientSession
	rel    *relay
	modern *upstream
	shared bool
	lent   *lent
}

// callLent is the call of tool with args for the caller of x on the
// shared session lent (borrow.go: lendFor), the loan ended when it
// returns. Errors: as callOn's, or the shared session's wake.
func (a *Adapter) callLent(ctx context.Context, loan *lent, x *core.Exchange, tool string, args []byte) (toolResult, error) {
	defer loan.release()
	cs, err := a.sharedSession(ctx)
	if err != nil {
		return toolResult{}, callError(ctx, a.launch.Name, tool, err)
	}
	return a.callOn(ctx, x, route{cs: cs, rel: a.relay, lent: loan}, tool, false, args)
}

// callOn sends tools/call of MCP tool tool with args for the caller of x
// on the route rt. Errors: as CallJSON's.
func (a *Adapter) callOn(ctx context.Context, x *core.Exchange, rt route, tool string, asTask bool, args []byte) (toolResult, error) {
	r := x.SessionlessRequest()
	cs, rel, modern := rt.cs, rt.rel, rt.modern
	c, meta, err := rel.begin(ctx, x, rt.shared, rt.lent)
	if err != nil {
		return toolResult{}, callError(ctx, a.launch.Name, tool, err)
	}
	defer rel.end(c)
	params := &mcp.CallToolParams{Name: tool, Arguments: rawArgs(args), Meta: meta}
	if modern != nil {
		params.Meta = callerContext(x, cs, meta) // the caller's own (sessionless.go)
		relayRetry(r, params)
	}
	if asTask {
		return decodedResult(a.callTasked(withTaskSession(ctx, cs), c, tool, params))
	}
	res, err := a.sendCall(ctx, cs, params)
	if err != nil && ctx.Err() == nil && mcptasks.IsMissingCapability(err) {
		if rt.lent != nil {
			rt.lent.again.Store(true) // a task is kept by the server: the client's own session's
			return toolResult{}, err
		}
		// The server serves this call only as a task (tasks.go).
		a.log.Debug("MCP tool answered -32021 for the Tasks extension; calling it as a task", "server", a.launch.Name, "tool", tool)
		return decodedResult(a.callAsTask(withTaskSession(ctx, cs), tool, params))
	}
	if err != nil {
		if modern != nil {
			failWith(r, err) // the caller's error as it is (sessionless.go)
		}
		return toolResult{}, a.callError(ctx, tool, rel, err)
	}
	return res, nil
}

// callError is callError, saying how the server ended when it exited
// during the call (waiting for its exit up to exitNoticeWait): the
// shared session's server, or the client's own of r (ownExitError); for a
// server reached by URL, a call that failed on the host's side of the
// connection (not with the server's own JSON-RPC error) while the server
// cannot be reached (probe) loses the session (lose), so that the call
// is the plugin's exit, retryable, whichever of the two the SDK saw first.
func (a *Adapter) callError(ctx context.Context, tool string, r *relay, err error) error {
	if e := a.ownExitError(ctx, r, tool, err); e != nil {
		return e
	}
	if lc, ok := a.oauth.h.(*loginClient); ok && !fromServer(err) {
		if need := lc.needs(); need != nil {
			return pluginsdk.ToolFailure("MCP server %q: tool %q: %v", a.launch.Name, tool, need)
		}
	}
	if ctx.Err() == nil && (errors.Is(err, io.EOF) || errors.Is(err, mcp.ErrConnectionClosed)) {
		if p := a.proc.Load(); p != nil && p.endedWithin(exitNoticeWait) {
			return pluginsdk.ToolFailure("MCP server %q exited during the call of tool %q (%s)", a.launch.Name, tool, p.status())
		}
	}
	if u, perr := url.Parse(a.launch.Server.URL); perr == nil && a.launch.Server.URL != "" && ctx.Err() == nil && !fromServer(err) {
		if derr := probe(ctx, hostPort(u)); derr != nil {
			a.lose(fmt.Errorf("%v; a new connection: %w", err, derr))
		}
	}
	return callError(ctx, a.launch.Name, tool, err)
}

// fromServer reports whether err is a JSON-RPC error the server sent,
// not one the SDK's client made up for a request it could not send or
// whose response it lost (-32005, rejected by transport).
func fromServer(err error) bool {
	var je *jsonrpc.Error
	return errors.As(err, &je) && je.Code != codeRejectedByTransport
}

// codeRejectedByTransport is the SDK's JSON-RPC error for a request its
// connection could not carry (internal/jsonrpc2 ErrRejected).
const codeRejectedByTransport = -32005

// exitNoticeWait bounds how long a call whose connection broke waits for
// the server's exit, to report it.
const exitNoticeWait = time.Second
