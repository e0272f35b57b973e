package mcpapi

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"sync/atomic"

	"github.com/hashicorp/go-hclog"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/opentool-host/opentool-host/frontend/mcpapi/channels"
	"github.com/opentool-host/opentool-host/frontend/mcpapi/clientview"
	"github.com/opentool-host/opentool-host/frontend/mcpapi/respond"
	"github.com/opentool-host/opentool-host/frontend/mcpapi/rounds"
	"github.com/opentool-host/opentool-host/frontend/mcpapi/subscriptions"
	"github.com/opentool-host/opentool-host/frontend/mcpapi/tasklayer"
	"github.com/opentool-host/opentool-host/host"
	"github.com/opentool-host/opentool-host/host/core"
	"github.com/opentool-host/opentool-host/host/tasks"
	"github.com/opentool-host/opentool-host/host/tasks/mcptasks"
	"github.com/opentool-host/opentool-host/internal/mcpsession"
	"github.com/opentool-host/opentool-host/internal/version"
)

// Name is the server name in the MCP Implementation (serverInfo) this
// package announces; its version is internal/version.Version.
const Name = "opentool-host"

// Config configures a Server. Zero fields take the defaults listed.
type Config struct {
	// MaxResultBytes caps the JSON a streaming function's collected items
	// may add up to, in bytes ({"items":[...]} included); past it the
	// call ends (the plugin is told to cancel) with an isError result of
	// kind result_rejected. Default core.DefaultMaxResultBytes (16 MiB);
	// give the host's Config.MaxResultBytes (--max-result).
	MaxResultBytes int64
	// Logger receives tool-list changes, host-side call failures and
	// functions whose definitions could not be converted. Default: no
	// logging.
	Logger hclog.Logger
	// Tasks, when set, serves MCP tasks with it, in both dialects
	// (package tasklayer): the Tasks extension
	// (io.modelcontextprotocol/tasks: a tools/call that opts in and
	// outlives its After is answered with a task) and the core tasks of
	// 2025-11-25 (a tools/call with params.task is a task at once); nil:
	// no tasks.
	Tasks *tasks.Manager
	// KeyCount, when set, reports how many API keys are in force
	// (access.Guard.Count), read as each client session opens
	// (mcpsession.Session.Keys); nil: keys off.
	KeyCount func() int
	// Sole, on stdio (the host's only client), is given the client's
	// session once it initialized, and told of its
	// notifications/roots/list_changed, for the declared MCP servers'
	// requests outside calls (sole.go); nil: none (HTTP, whose clients
	// are many).
	Sole *mcpsession.Sole
}

// Server is an MCP server whose tools are the functions a host serves.
// Create it with New; it is safe for concurrent use. Serve it over
// streamable HTTP with Handler or over another transport (stdio) through
// MCP, and keep its tools in step with the host with Follow.
type Server struct {
	h   *host.Host
	cfg Config
	srv *mcp.Server

	down     context.Context    // done once Shutdown is called
	shutdown context.CancelFunc // ends down

	inflight inflight          // stateless calls in flight, for notifications/cancelled (cancel.go)
	chans    channels.Channels // the sessions' channels to their clients outside a request
	marks    respond.Marks     // the POSTs of one request whose response the handler returned (http.go)
	rounds   *rounds.Layer     // multi-round-trip requests
	tasks    *tasklayer.Layer  // MCP tasks, with Config.Tasks; nil without

	mu      sync.Mutex        // one sync at a time; guards the fields below
	tools   map[string]string // served tool name → fingerprint
	bad     map[string]string // function name → why it is not served (logged once)
	changes int               // tools added, replaced or removed so far

	// served maps each served tool to its function, for the task layer
	// (Function); replaced whole by sync.
	served atomic.Pointer[map[string]host.FunctionInfo]
	// defs maps each served tool that is an MCP server's to the
	// definition tools/list shows (verbatim); replaced whole by sync.
	defs atomic.Pointer[map[string]json.RawMessage]

	// cat is what syncCatalog served (guarded by mu); catItems maps
	// each served catalog item (kind + "\x00" + key) to the host's, for
	// per-key filtering and the lists written as the plugins wrote their
	// items (catalog.go); subs are the sessions' resource subscriptions
	// (package subscriptions).
	cat      catalogState
	catItems atomic.Pointer[map[string]host.CatalogItem]
	subs     *subscriptions.Layer
	// send is the SDK's sending handler, under sendFilter (notify).
	send mcp.MethodHandler

	clients clientSessions // each session's mcpsession.Session (clients.go)

	// logs are the sessions that asked for log messages (logs.go).
	logs logSessions
	// views are the sessions of restricted keys and the list_changed
	// due to each (listviews.go).
	views listViews
	// shown holds a client's tools/call to the tools it was shown
	// (package clientview).
	shown *clientview.Views
	// started is set by Sync: the plugins of the first start are up, and
	// a client is offered only what is served (advertise.go).
	started atomic.Bool
}

// New returns a Server for h with the tools, resources, resource
// templates and prompts h serves now. Its MCP Implementation is Name and
// internal/version.Version; a client is offered the tools and logging
// capabilities, and prompts, resources (with subscribe) and completions
// while some plugin or server serves them, with listChanged where the
// client can be notified (advertise.go).
func New(h *host.Host, cfg Config) *Server {
	if cfg.MaxResultBytes <= 0 {
		cfg.MaxResultBytes = core.DefaultMaxResultBytes
	}
	if cfg.Logger == nil {
		cfg.Logger = hclog.NewNullLogger()
	}
	s := &Server{h: h, cfg: cfg, tools: map[string]string{}, bad: map[string]string{}, cat: catalogState{served: map[string]string{}}}
	s.down, s.shutdown = context.WithCancel(context.Background())
	s.subs = subscriptions.New(subscriptionsFront{s}, cfg.Logger)
	s.shown = clientview.New(viewsLister{s}, cfg.Logger)
	caps := &mcp.ServerCapabilities{
		// Resources, prompts and completion come from the plugins'
		// catalogs (catalog.go), logging from their log messages
		// (exchange.go); all come and go with plugins.
		Tools:       &mcp.ToolCapabilities{ListChanged: true},
		Resources:   &mcp.ResourceCapabilities{ListChanged: true, Subscribe: true},
		Prompts:     &mcp.PromptCapabilities{ListChanged: true},
		Completions: &mcp.CompletionCapabilities{},
		Logging:     &mcp.LoggingCapabilities{},
	}
	if cfg.Tasks != nil {
		caps.AddExtension(mcptasks.Extension, nil)
	}
	opts := &mcp.ServerOptions{
		Capabilities:       caps,
		CompletionHandler:  s.complete,
		SubscribeHandler:   s.subs.Subscribe,
		UnsubscribeHandler: s.subs.Unsubscribe,
	}
	if cfg.Sole != nil {
		opts.InitializedHandler, opts.RootsListChangedHandler = s.soleInitialized, s.soleRootsChanged
	}
	s.srv = mcp.NewServer(&mcp.Implementation{Name: Name, Version: version.Version}, opts)
	// A session's plain tools/call does not pass through the receiving
	// middleware below: the host answers it itself (fastcall.go), and
	// answerCall does their work for it. A middleware that acts on
	// tools/call acts there too, or makes ownsTool refuse the calls it
	// must see (as the task middleware's required tasks).
	s.srv.AddReceivingMiddleware(s.advertiseMiddleware) // first: on the SDK's own result
	s.rounds = rounds.New(rounds.Config{Functions: s, Client: roundsClient{s}, Down: s.down, ErrorMetaKey: ErrorMetaKey})
	s.rounds.Install(s.srv) // before tasks: a task's call is held in its task
	if cfg.Tasks != nil {
		s.tasks = tasklayer.New(tasklayer.Config{Tasks: cfg.Tasks, Functions: s, Channels: &s.chans, Logger: cfg.Logger})
		s.tasks.Install(s.srv) // before access: middleware added later runs first
	}
	s.srv.AddReceivingMiddleware(s.shown.Middleware) // after access: its grant on ctx
	s.srv.AddReceivingMiddleware(s.accessMiddleware)
	s.srv.AddReceivingMiddleware(s.marks.Middleware) // last: outermost, it sees the response returned
	s.srv.AddSendingMiddleware(s.sendFilter)
	h.OnResourceUpdated(s.resourceUpdated)
	h.OnLogMessage(s.logMessage)
	h.OnListChanged(s.listChanged)
	s.sync()
	return s
}

// FromMCPServer reports whether tool name is served from an MCP server's
// tool definition (Function.MCPTool: a declared MCP server's; never the
// host's own call_tool), which may run multi-round-trip requests of its
// own (rounds.Functions).
func (s *Server) FromMCPServer(name string) bool {
	f := s.h.Function(name)
	return f != nil && len(f.MCPTool) > 0
}

// Function returns the function tool name calls as served now, and
// whether it is served (tasklayer.Functions).
func (s *Server) Function(name string) (host.FunctionInfo, bool) {
	m := s.served.Load()
	if m == nil {
		return host.FunctionInfo{}, false
	}
	fi, ok := (*m)[name]
	return fi, ok
}

// Stdio returns t, the transport of the one client of a stdio server
// (mcp.StdioTransport), as the transport to connect s.MCP() with
// (channels.Channels.Stdio). Use it for one connection only.
func (s *Server) Stdio(t mcp.Transport) mcp.Transport { return s.chans.Stdio(t) }

// MCP returns the SDK server, for the transports Handler does not
// cover: s.MCP().Connect(ctx, s.Stdio(&mcp.StdioTransport{}), nil) serves one
// client on stdin and stdout.
func (s *Server) MCP() *mcp.Server { return s.srv }

// Shutdown ends the HTTP streams that only wait for server messages (a
// session's GET stream, a subscriptions/listen POST), now and from then
// on, so that http.Server.Shutdown does not wait for them until its
// deadline; calls in flight go on. Register it with
// http.Server.RegisterOnShutdown. It is safe to call more than once.
func (s *Server) Shutdown() { s.shutdown() }

// Sync brings the tools in line with the host's functions now, as Follow
// does on each change but asynchronously: call it once the host's plugins
// have started (frontdoor: before readiness turns ready and "serving" is
// logged), so that a client told the host serves finds every tool on
// /mcp at once. From then on a client is offered only the capabilities
// of what is served (advertise.go).
func (s *Server) Sync() {
	s.sync()
	s.started.Store(true)
}

// Follow keeps the tools in step with the host until ctx ends: each time
// host.Host.Changed closes it adds new tools, replaces changed ones and
// removes gone ones. The SDK then sends notifications/tools/list_changed
// (MCP "Tools", "List Changed Notification") to the sessions that listen;
// when the definitions are the same nothing is touched and nothing is
// sent (a declared MCP server's own list_changed is passed on apart:
// lists.go).
func (s *Server) Follow(ctx context.Context) {
	for {
		changed := s.h.Changed()
		s.sync()
		select {
		case <-ctx.Done():
			return
		case <-changed:
		}
	}
}

// sync brings the tool list in line with the host's functions and
// returns how many tools it added, replaced or removed.
func (s *Server) sync() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	seen := map[string]bool{}
	var causes listCauses // marked as due to the sessions that see them
	defer causes.markTo(&s.views)
	var prev map[string]host.FunctionInfo // the tools served so far
	if p := s.served.Load(); p != nil {
		prev = *p
	}
	// What the task middleware may run as a task (callable) is in place
	// before a new tool reaches the SDK, so that no call finds the tool
	// without it.
	served := map[string]host.FunctionInfo{}
	defs := map[string]json.RawMessage{}
	type tool struct {
		fi  host.FunctionInfo
		t   *mcp.Tool
		def json.RawMessage
	}
	var tools []tool
	for _, fi := range s.h.Functions() {
		if t := s.tool(fi); t != nil {
			def := s.verbatim(fi)
			tools = append(tools, tool{fi, t, def})
			served[t.Name] = fi
			if def != nil {
				defs[t.Name] = def
			}
		}
	}
	s.served.Store(&served)
	s.defs.Store(&defs)
	n := 0
	for _, tl := range tools {
		fi, t := tl.fi, tl.t
		seen[t.Name] = true
		fp := fingerprint(t, tl.def)
		if s.tools[t.Name] == fp {
			continue
		}
		if _, was := s.tools[t.Name]; was {
			causes.tool(fi) // replaced, or removed when add fails
		}
		if err := s.add(t); err != nil {
			delete(seen, t.Name)
			if s.bad[t.Name] != err.Error() {
				s.bad[t.Name] = err.Error()
				s.cfg.Logger.Error("function not served over MCP: the MCP SDK refuses its definition", "plugin", fi.Plugin, "function", t.Name, "error", err)
			}
			continue
		}
		s.tools[t.Name] = fp
		causes.tool(fi)
		delete(s.bad, t.Name)
		s.cfg.Logger.Debug("MCP tool served", "tool", t.Name, "plugin", fi.Plugin)
		n++
	}
	var gone []string
	for name := range s.tools {
		if !seen[name] {
			gone = append(gone, name)
			delete(s.tools, name)
			if fi, ok := prev[name]; ok {
				causes.tool(fi)
			}
		}
	}
	if len(gone) > 0 {
		s.srv.RemoveTools(gone...)
		s.cfg.Logger.Debug("MCP tools removed", "tools", gone)
	}
	n += len(gone)
	n += s.syncCatalog(&causes)
	s.changes += n
	return n
}

// add serves t. The SDK panics on definitions it refuses (an input schema
// whose type is not "object", an invalid x-mcp-header annotation, SEP-2243):
// that is an error here, and the tool is not served (a tool of the same
// name served before is removed). Callers hold s.mu.
func (s *Server) add(t *mcp.Tool) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("%v", r)
			if _, ok := s.tools[t.Name]; ok {
				delete(s.tools, t.Name)
				s.srv.RemoveTools(t.Name)
			}
		}
	}()
	s.srv.AddTool(t, s.handler(t.Name))
	return nil
}

// verbatim returns the definition tools/list shows of fi when it is an
// MCP server's (verbatim), else nil; one that cannot be served as the
// server wrote it is logged once and fi gets the definition toolOf
// builds. Callers hold s.mu.
func (s *Server) verbatim(fi host.FunctionInfo) json.RawMessage {
	def, err := verbatim(fi.Function, s.cfg.Tasks != nil)
	k := "mcpTool\x00" + fi.Function.Name
	if err == nil {
		delete(s.bad, k)
		return def
	}
	if s.bad[k] != err.Error() {
		s.bad[k] = err.Error()
		s.cfg.Logger.Warn("MCP tool listed with the definition the host builds, not its server's own", "plugin", fi.Plugin, "error", err)
	}
	return nil
}

// tool returns the definition of fi, or nil (logged once per reason)
// when its parameters do not convert. Callers hold s.mu.
func (s *Server) tool(fi host.FunctionInfo) *mcp.Tool {
	t, err := toolOf(fi)
	name := fi.Function.Name
	if err == nil {
		return t
	}
	if s.bad[name] != err.Error() {
		s.bad[name] = err.Error()
		s.cfg.Logger.Error("function not served over MCP: its parameters do not convert", "plugin", fi.Plugin, "error", err)
	}
	return nil
}
