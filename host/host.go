// Package host runs OpenTool plugins as isolated hashicorp/go-plugin
// subprocesses and serves all their functions as one tool set.
//
// Lifecycle (after caddy): New provisions and validates the configuration
// (the plugins directory, the host-owned state folder); Start finds the
// plugin files, starts them concurrently and builds the routing table;
// Call and StreamCall route a call by function name to the owning plugin;
// Close drains the calls in flight, stops every plugin and removes the
// state folder.
//
// A plugin is an executable "opentool-plugin-NAME", one server of a
// drop-in declaration "NAME.mcp.json" or the commands of a
// "NAME.tools.json" (discover/discover.go; a declared plugin is served in the
// host's process by Config.Declared, supervise/local.go, and supervised exactly
// like an executable, its Run's end being its exit). A
// plugin whose document changes while it runs says so on its Watch
// stream; the new document is loaded, validated and served without a
// restart (instance.followDocument, evReloaded).
//
// Each plugin is supervised by a Plugin (supervise/plugin.go) whose life is
// one pure transition function, next (supervise/lifecycle.go): restarts with
// backoff, crash loops, blue/green replacement when the file changes,
// draining on removal. One process is an instance (supervise/instance.go).
//
// Plugins publish their state; the routing table follows it (routes.go):
// a plugin signals a host-owned channel and one host goroutine rebuilds
// the table, while Start and Rescan rebuild it themselves once their
// plugins have settled. A function name belongs to the plugin that owned
// it first: a later plugin declaring the same name does not take it over
// (routes.go has the rule).
package host

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"sync"
	"sync/atomic"

	"github.com/hashicorp/go-hclog"

	"github.com/opentool-host/opentool-host/host/core"
	"github.com/opentool-host/opentool-host/host/discover"
	"github.com/opentool-host/opentool-host/host/supervise"
	"github.com/opentool-host/opentool-host/process/cgroup"
	"github.com/opentool-host/opentool-host/process/launcher"
	"github.com/opentool-host/opentool-host/protocol/opentool"
)

// Host serves the functions of every plugin in a directory. Create it
// with New, then Start; it is safe for concurrent use.
type Host struct {
	cfg   core.Config
	log   hclog.Logger
	state *discover.StateDir
	sv    *supervise.Supervisor
	// onUpdated are told of changed resources (OnResourceUpdated), onLog
	// of log messages outside calls (OnLogMessage), onList of the lists
	// MCP servers said changed (OnListChanged); updMu guards them.
	updMu     sync.Mutex
	onUpdated []func(uri string)
	onLog     []func(plugin string, params json.RawMessage)
	onList    []func(plugin, list string)

	mu      sync.Mutex // guards plugins
	plugins map[string]*supervise.Plugin
	closed  atomic.Bool

	results resultBudget // result bytes held for unfinished responses

	routes  atomic.Pointer[routeTable]
	routeMu sync.Mutex                    // one rebuild at a time; guards claims and logged
	claims  map[string]claim              // function name → owner, across rebuilds
	known   *nameOwners                   // claims' owners remembered across restarts (owners.go); guarded by routeMu
	logged  map[supervise.Conflict]string // the conflicts logged (→ refused plugin), while they last
	// catClaims owns the MCP catalog keys across rebuilds and catLogged
	// are the catalog conflicts logged (catalog.go); guarded by routeMu.
	catClaims map[string]*supervise.Plugin
	catLogged map[catConflict]bool
	changed   chan struct{} // plugins signal it when their state or document changed
	events    core.EventHub // lifecycle events (Subscribe)

	ignored   atomic.Pointer[map[string]string] // plugins-folder file → why it is not a plugin (Ignored)
	ignoredMu sync.Mutex                        // one writer of ignored at a time
	scanMu    sync.Mutex                        // one rescan or notified rebuild at a time; Close waits for it
	follow    sync.Once                         // starts followPlugins (first Rescan) or rules it out (Close)
	followed  chan struct{}
	closing   chan struct{}
	// started is closed when Start has returned: until then a call to a
	// function not served yet waits for it (startWait).
	started   chan struct{}
	startOnce sync.Once
	inStart   atomic.Bool        // Start was entered
	cancel    context.CancelFunc // ends sv.Ctx: starts in flight give up
	watcher   *discover.Watcher
	// builtins are the host's own functions (tool search, builtin.go);
	// nil without Config.ToolSearch.
	builtins *builtins
}

// New provisions a Host from cfg: it checks that cfg.Dir is a directory
// and makes the host-owned state folder (sweeping those of dead hosts).
// Nothing is started until Start. Errors: a cfg.Dir that does not exist
// is one wrapping fs.ErrNotExist that says where it looked ("plugins
// folder DIR not found (looked for ABS): ..."); the others start with
// "host: ".
func New(cfg core.Config) (*Host, error) {
	cfg, err := cfg.WithDefaults()
	if err != nil {
		return nil, err
	}
	if cfg.Dir == "" {
		return nil, errors.New("host: plugins directory is required")
	}
	fi, err := os.Stat(cfg.Dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, dirNotFound{cfg.Dir}
	}
	if err != nil {
		return nil, fmt.Errorf("host: plugins directory: %w", err)
	}
	if !fi.IsDir() {
		return nil, fmt.Errorf("host: plugins directory %s is not a directory", cfg.Dir)
	}
	if err := discover.CheckMCPConfigs(cfg.Dir, cfg.MCPConfigs); err != nil {
		return nil, fmt.Errorf("host: %w", err)
	}
	var pins *discover.Pins
	if cfg.Locked {
		if pins, err = discover.NewPins(cfg.Dir, cfg.AcceptDefinitionChanges); err != nil {
			return nil, fmt.Errorf("host: %w", err)
		}
	}
	bt, err := newBuiltins(&cfg)
	if err != nil {
		return nil, err
	}
	state, err := discover.NewStateDir(cfg.StateDir, cfg.PluginUser, cfg.Logger)
	if err != nil {
		return nil, fmt.Errorf("host: %w", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	h := &Host{
		cfg:       cfg,
		log:       cfg.Logger,
		state:     state,
		plugins:   map[string]*supervise.Plugin{},
		claims:    map[string]claim{},
		catClaims: map[string]*supervise.Plugin{},
		logged:    map[supervise.Conflict]string{},
		changed:   make(chan struct{}, 1),
		closing:   make(chan struct{}),
		started:   make(chan struct{}),
		cancel:    cancel,
		results:   resultBudget{max: cfg.MaxResultMemory},
		builtins:  bt,
	}
	h.known = h.loadOwners()
	h.warnUngrantedSecrets()
	h.sv = &supervise.Supervisor{Cfg: &h.cfg, State: state, Log: cfg.Logger, Ctx: ctx, Changed: h.changed, Pins: pins, Events: &h.events,
		ResourceUpdated: h.resourceUpdated, LogMessage: h.logMessage, ListChanged: h.listChanged}
	if cfg.NoCgroups {
		h.log.Debug("plugin cgroups off (Config.NoCgroups)")
	} else if h.sv.Cgroups, err = cgroup.New(); err != nil {
		h.log.Info("plugins run without cgroups: a descendant that leaves its process group (setsid) is not killed with the plugin", "reason", err)
	} else {
		h.sv.Cgroups.EnableControllers() // for cpu_percent and processes; refused where not delegated
		h.log.Debug("one cgroup per plugin process", "dir", h.sv.Cgroups.Dir())
	}
	if err != nil {
		h.sv.NoCgroups = err.Error()
	} else if cfg.NoCgroups {
		h.sv.NoCgroups = "Config.NoCgroups"
	}

	h.routes.Store(newRouteTable())
	return h, nil
}

// NewStarted is New, then Start: a host whose plugins have each started
// or failed. On a Start error the host is closed. Errors: New's or
// Start's.
func NewStarted(ctx context.Context, cfg core.Config) (*Host, error) {
	h, err := New(cfg)
	if err != nil {
		return nil, err
	}
	if err := h.Start(ctx); err != nil {
		_ = h.Close(context.Background())
		return nil, err
	}
	return h, nil
}

// warnUngrantedSecrets logs each declared secret that is granted to no
// plugin: no policy can name it (a setup from before grants says so here
// once, and in each plugin that names it).
func (h *Host) warnUngrantedSecrets() {
	for _, name := range slices.Sorted(maps.Keys(h.cfg.Secrets)) {
		if len(h.cfg.Secrets[name].Plugins) == 0 {
			h.log.Warn("secret is granted to no plugin: no policy can name it; grant it with --secret-for NAME=PLUGIN", "secret", name)
		}
	}
}

// dirNotFound is New's error for a plugins folder that does not exist:
// it says where it looked and how to choose another (the command line's
// --dir, ./plugins by default). It wraps fs.ErrNotExist.
type dirNotFound struct{ dir string }

func (e dirNotFound) Error() string {
	abs, _ := filepath.Abs(e.dir)
	return fmt.Sprintf("plugins folder %s not found (looked for %s): --dir defaults to ./plugins in the working folder; give --dir PATH or create the folder", e.dir, abs)
}

func (e dirNotFound) Unwrap() error { return fs.ErrNotExist }

// Start scans the plugins directory, starts every plugin concurrently and
// returns when each is ready or failed (a broken plugin is logged with its
// reason and does not stop the others), with the routing table built:
// names declared twice go to the plugin first by name. With Config.Watch
// it then watches the directory. It fails only when the directory cannot
// be read, ctx ends first, or the watcher cannot start.
func (h *Host) Start(ctx context.Context) error {
	h.inStart.Store(true)
	defer h.startOnce.Do(func() { close(h.started) })
	if err := h.Rescan(ctx); err != nil {
		return err
	}
	if err := h.startKeeper(); err != nil {
		return err
	}
	h.builtins.startCode(h)
	if h.cfg.Watch {
		w, err := discover.NewWatcher(&h.cfg, h.log, h.Rescan, h.syncPath)
		if err != nil {
			return err
		}
		h.watcher = w
	}
	return nil
}

// startKeeper starts the keeper (Config.Keeper) once the first plugins
// are up, so that its process start does not compete with theirs
// (the first start of a plugin is protected meanwhile by its parent-death
// signal and, with cgroups, by the sweep of dead hosts' folders at the next
// start). Without cgroups it is told of the plugins already running.
func (h *Host) startKeeper() error {
	if len(h.cfg.Keeper) == 0 || h.sv.Keeper.Load() != nil {
		return nil
	}
	dir := ""
	if h.sv.Cgroups != nil {
		dir = h.sv.Cgroups.Dir()
	}
	k, err := launcher.StartKeeper(h.cfg.Keeper, dir)
	if err != nil {
		return fmt.Errorf("host: %w", err)
	}
	h.sv.Keeper.Store(k)
	h.log.Debug("keeper started", "pid", k.PID(), "command", h.cfg.Keeper[0])
	if h.sv.Cgroups == nil {
		for _, p := range h.Plugins() {
			if p.PID > 0 {
				_ = k.Track(p.PID)
			}
		}
	}
	return nil
}

// startFollowing starts followPlugins.
func (h *Host) startFollowing() {
	h.followed = make(chan struct{})
	go h.followPlugins()
}

// followPlugins rebuilds the routing table each time a plugin signals a
// change, until the host closes. A rebuild waits for a rescan in progress
// (which rebuilds when its plugins have settled), so that plugins found
// together claim names in plugin-name order.
func (h *Host) followPlugins() {
	defer close(h.followed)
	for {
		select {
		case <-h.closing:
			return
		case <-h.changed:
		}
		h.scanMu.Lock()
		if !h.closed.Load() {
			h.rebuildRoutes()
		}
		h.scanMu.Unlock()
	}
}

// rebuildRoutes rebuilds the routing table from the plugins' offers and
// the claims (routes.go), swaps it in and logs the new conflicts.
func (h *Host) rebuildRoutes() { h.rebuild(false) }

// rebuild builds and publishes the routes. A provisional rebuild (while a
// rescan waits for its plugins) serves the plugins up so far without
// keeping their claims or logging conflicts: a plugin still starting
// that sorts first, or that is a name's remembered owner, keeps its
// right to a name it shares (the rescan's final rebuild decides, as if
// every plugin had come up at once), and until then the name is served
// by nobody (routeTable.holdUncertain): a call of it waits.
func (h *Host) rebuild(provisional bool) {
	h.routeMu.Lock()
	defer h.routeMu.Unlock()
	h.mu.Lock()
	offers := make([]supervise.Offer, 0, len(h.plugins))
	for _, p := range h.plugins {
		offers = append(offers, supervise.Offer{P: p})
	}
	h.mu.Unlock()
	for i := range offers {
		offers[i] = offers[i].P.Offer()
	}
	sortOffers(offers)
	claims, catClaims := h.claims, h.catClaims
	if provisional {
		claims, catClaims = maps.Clone(h.claims), maps.Clone(h.catClaims)
	}
	t := buildRoutes(offers, claims, h.cfg.PrefixCollisions, h.builtins.claim, h.known)
	t.cat = buildCatalog(offers, catClaims, h.cfg.PrefixCollisions)
	if provisional {
		t.holdUncertain(offers, h.claims, h.known)
	} else {
		h.known.save(h, offers, h.claims)
		h.logConflicts(t)
		h.logCatalogConflicts(t.cat)
	}
	close(h.routes.Swap(t).replaced)
}

// Changed returns a channel that is closed when the served functions may
// have changed: a plugin came, went, restarted, failed or changed its
// document. Read Functions again after it closes, then call Changed again
// for the next change. Tables are rebuilt on every plugin state change,
// so a close does not promise a difference; compare to know.
func (h *Host) Changed() <-chan struct{} { return h.routes.Load().replaced }

// logConflicts logs each conflict of t once while it lasts: a refused
// duplicate at ERROR, a prefixed one at WARN. Callers hold h.routeMu.
func (h *Host) logConflicts(t *routeTable) {
	now := map[supervise.Conflict]string{}
	for plugin, cs := range t.conflicts {
		for _, c := range cs {
			now[c] = plugin
			if h.logged[c] == plugin {
				continue
			}
			if c.ServedAs == "" {
				h.log.Error("function name conflict: the name is owned by another plugin; duplicate refused",
					"function", c.Function, "owner", c.Owner, "refused", plugin,
					"next", "rename the function in "+plugin+", or run with --prefix-collisions to serve it as "+plugin+prefixSep+c.Function)
			} else {
				h.log.Warn("function name conflict: the name is owned by another plugin; duplicate served prefixed",
					"function", c.Function, "owner", c.Owner, "plugin", plugin, "served_as", c.ServedAs,
					"next", "call it as "+c.ServedAs+", or rename it in "+plugin+" to serve it under a name of its own")
			}
			h.events.Publish(core.Event{Type: core.EventCollision, Plugin: plugin, Message: "function name conflict",
				Reason: c.String()})
		}
	}
	h.logged = now
}

// SharedTools reports whether the plugin that serves function fn now
// lists the same tools to every MCP client: FunctionInfo.SharedTools as
// the plugin's current catalog says it (a server restarted with another
// "sessions" declaration says so at once). False when fn is not served
// by a plugin or is not a declared MCP server's tool.
func (h *Host) SharedTools(fn string) bool {
	rt, ok := h.routes.Load().funcs[fn]
	return ok && rt.functionInfo().SharedTools
}

// Function returns the served function fn with its $refs inlined (the
// host's own included, builtin.go), or nil. The result must not be
// modified.
func (h *Host) Function(fn string) *opentool.Function {
	if f := h.builtins.function(fn); f != nil {
		return f
	}
	if r, ok := h.routes.Load().funcs[fn]; ok {
		return r.fn
	}
	return nil
}

// Document returns the aggregated OpenTool 1.1.0 document of every served
// function (the host's own first, builtin.go; then plugin-name order, then
// each document's order), with $refs inlined, schemas keyed "PLUGIN.Name"
// and server.url set to baseURL (left out when empty). title and version
// fill info. The result must not be modified.
func (h *Host) Document(title, version, baseURL string) *opentool.OpenTool {
	var own []*opentool.Function
	if h.builtins != nil {
		own = h.builtins.fns
	}
	return h.routes.Load().document(title, version, baseURL, own)
}

// FunctionInfo is one served function and the plugin that serves it.
type FunctionInfo struct {
	// Plugin is the serving plugin's name; "" for the host's own
	// functions (Builtin).
	Plugin string `json:"plugin"`
	// Function is the function (with $refs inlined) under the name it is
	// served as.
	Function *opentool.Function `json:"function"`
	// Info is the info object (title, description, version) of the
	// serving plugin's own document; for the host's own functions title
	// BuiltinOwner and the host's version.
	Info opentool.Info `json:"info"`
	// Builtin is set on the host's own functions (tool search's
	// search_tools and call_tool, Config.ToolSearch): every API key may
	// call them, and they reach only what the key may call.
	Builtin bool `json:"builtin,omitempty"`
	// SharedTools is set on a declared MCP server's function
	// (Function.MCPTool) when its plugin lists the same tools to every
	// MCP client (a server declared "sessions": "shared";
	// supervise.Catalog.SharedTools): a client's own list of it is the
	// shared one, which a CallView need not ask for.
	SharedTools bool `json:"-"`
}

// Functions lists the served functions in the order of Document.
func (h *Host) Functions() []FunctionInfo {
	t := h.routes.Load()
	out := make([]FunctionInfo, 0, len(t.order)+2)
	if b := h.builtins; b != nil {
		for _, f := range b.fns {
			out = append(out, FunctionInfo{Function: f, Info: b.info, Builtin: true})
		}
	}
	for _, r := range t.order {
		out = append(out, r.functionInfo())
	}
	return out
}

// ToolSearchThreshold is Config.ToolSearchThreshold with Config.ToolSearch
// on, else 0: listings show a key whose plugins' functions it may call
// number more than this only the host's own (package catalog); 0: every
// function is listed.
func (h *Host) ToolSearchThreshold() int {
	if !h.cfg.ToolSearch {
		return 0
	}
	return h.cfg.ToolSearchThreshold
}

// Plugins returns the status of every plugin, sorted by name, with the
// conflicts of the current routing table.
func (h *Host) Plugins() []supervise.PluginStatus {
	ps := h.all()
	t := h.routes.Load()
	out := make([]supervise.PluginStatus, 0, len(ps))
	for _, p := range ps {
		s := p.Status()
		s.Conflicts = slices.Clone(t.conflicts[p.Name()])
		out = append(out, s)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// all returns the plugins.
func (h *Host) all() []*supervise.Plugin {
	h.mu.Lock()
	defer h.mu.Unlock()
	ps := make([]*supervise.Plugin, 0, len(h.plugins))
	for _, p := range h.plugins {
		ps = append(ps, p)
	}
	return ps
}

// Close stops watching, drains every plugin's calls in flight (up to
// Config.DrainTimeout or ctx's deadline, whichever is first; then its
// processes are killed), stops every plugin process and removes the state
// folder. It is safe to call twice.
func (h *Host) Close(ctx context.Context) error {
	if !h.closed.CompareAndSwap(false, true) {
		return nil
	}
	close(h.closing)
	h.cancel()
	if h.watcher != nil {
		h.watcher.Close()
	}
	h.follow.Do(func() {})
	if h.followed != nil {
		<-h.followed
	}
	h.scanMu.Lock()
	defer h.scanMu.Unlock()
	ps := h.all()
	for _, p := range ps {
		p.Close()
	}
	done := make(chan struct{})
	go func() {
		for _, p := range ps {
			p.Wait()
		}
		close(done)
	}()
	select {
	case <-done:
	case <-ctx.Done():
		for _, p := range ps {
			p.Kill()
		}
		<-done
	}
	if h.sv.Cgroups != nil {
		_ = h.sv.Cgroups.Close()
	}
	if k := h.sv.Keeper.Load(); k != nil {
		k.Close()
	}
	h.builtins.close()
	return h.state.Remove()
}
