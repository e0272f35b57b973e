// Package tasklayer serves MCP tasks on the host's MCP front end, in both
// dialects: the Tasks extension (io.modelcontextprotocol/tasks,
// extension.go, its notifications/tasks on listen streams: listen.go) and
// the core tasks of MCP 2025-11-25 (core.go, their
// notifications/tasks/status: notify.go), with what a plugin's function
// says of tasks (exec.go) and the checks of the tasks methods' headers
// (headers.go).
//
// It is a layer around the call: Layer.Install adds it to an MCP SDK
// server as receiving middleware (mcp.Server.AddReceivingMiddleware) and
// custom methods (mcp.AddReceivingCustomMethod); a tools/call it runs as
// a task goes on through the rest of the server's handlers as any call.
// It depends on the task manager (package tasks), the front end's
// function look-up (Functions) and its channels to its clients
// (Channels), not on the front end itself.
package tasklayer

import (
	"github.com/hashicorp/go-hclog"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/opentool-host/opentool-host/host"
	"github.com/opentool-host/opentool-host/host/tasks"
	"github.com/opentool-host/opentool-host/host/tasks/mcptasks"
)

// Functions is the front end's look-up of the functions it serves as
// tools.
type Functions interface {
	// Function returns the function tool name calls as served now, and
	// whether it is served.
	Function(name string) (host.FunctionInfo, bool)
}

// Config configures a Layer. Tasks, Functions and Channels are required.
type Config struct {
	// Tasks keeps the tasks; it outlives the Layer, whose watches
	// (tasks.Manager.Watch) last as long as it.
	Tasks *tasks.Manager
	// Functions looks up the function a tools/call names: a call of a
	// tool the caller's key may not call is answered plainly (the usual
	// unknown tool), and what the function declares of tasks is honoured
	// (exec.go).
	Functions Functions
	// Channels reach a session's client outside a request, for
	// notifications/tasks/status.
	Channels Channels
	// Logger receives tasks created and store failures. Default: no
	// logging.
	Logger hclog.Logger
}

// Layer is MCP tasks on one MCP server. Create it with New and add it
// with Install; it is safe for concurrent use.
type Layer struct {
	cfg     Config
	listens taskListens // listen streams that agreed to task ids (listen.go)
	notes   coreNotes   // the session each core task notifies (notify.go)
}

// New returns the Layer of cfg.
func New(cfg Config) *Layer {
	if cfg.Logger == nil {
		cfg.Logger = hclog.NewNullLogger()
	}
	return &Layer{cfg: cfg}
}

// Install serves tasks on srv, whose capabilities declare
// capabilities.extensions[mcptasks.Extension] already (mcp.ServerOptions):
// it adds the tools/call middleware, the initialize middleware of the
// core dialect's capabilities.tasks, the subscriptions/listen middleware
// of the extension's task ids, and the tasks/* methods, and watches the
// task manager for ended tasks. Middleware added to srv later runs
// first: install the layer before the middleware that puts the caller's
// grant on the request's context (access.WithGrant), so that it runs
// after that. Install it once.
func (l *Layer) Install(srv *mcp.Server) {
	srv.AddReceivingMiddleware(l.taskMiddleware)
	must := func(err error) {
		if err != nil {
			panic(err) // only for a standard method's name: a bug here
		}
	}
	// tasks/get and tasks/cancel are both dialects' (core.go).
	must(mcp.AddReceivingCustomMethod(srv, mcptasks.MethodGet, l.dialectGet))
	must(mcp.AddReceivingCustomMethod(srv, mcptasks.MethodCancel, l.dialectCancel))
	must(mcp.AddReceivingCustomMethod(srv, mcptasks.MethodUpdate, l.tasksUpdate))
	must(mcp.AddReceivingCustomMethod(srv, mcptasks.MethodResult, l.coreResult))
	must(mcp.AddReceivingCustomMethod(srv, mcptasks.MethodList, l.coreList))
	srv.AddReceivingMiddleware(l.listenMiddleware, l.coreInitMiddleware)
	l.cfg.Tasks.Watch(l.taskEnded) // for the Layer's life, as the Manager's
	l.cfg.Tasks.Watch(l.coreTaskEnded)
}
