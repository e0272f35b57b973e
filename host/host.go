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
// Each plugin file is supervised by a Plugin (plugin.go): restarts with
// backoff, blue/green replacement when the file changes, draining on
// removal. One process is an instance (instance.go).
package host

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"sync"
	"sync/atomic"

	"github.com/hashicorp/go-hclog"

	"github.com/opentool-host/opentool-host/opentool"
)

// Host serves the functions of every plugin in a directory. Create it
// with New, then Start; it is safe for concurrent use.
type Host struct {
	cfg   Config
	log   hclog.Logger
	state *stateDir

	mu              sync.Mutex // guards plugins and lifecycle
	plugins         map[string]*Plugin
	routes          atomic.Pointer[routeTable]
	conflictsLogged map[[3]string]bool

	scanMu  sync.Mutex // one rescan at a time
	closing chan struct{}
	closed  atomic.Bool
	watcher *watcher
}

// New provisions a Host from cfg: it checks that cfg.Dir is a directory
// and makes the host-owned state folder (sweeping those of dead hosts).
// Nothing is started until Start.
func New(cfg Config) (*Host, error) {
	cfg, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	if cfg.Dir == "" {
		return nil, errors.New("host: plugins directory is required")
	}
	fi, err := os.Stat(cfg.Dir)
	if err != nil {
		return nil, fmt.Errorf("host: plugins directory: %w", err)
	}
	if !fi.IsDir() {
		return nil, fmt.Errorf("host: plugins directory %s is not a directory", cfg.Dir)
	}
	state, err := newStateDir(cfg.StateDir, cfg.Logger)
	if err != nil {
		return nil, fmt.Errorf("host: %w", err)
	}
	h := &Host{
		cfg:             cfg,
		log:             cfg.Logger,
		state:           state,
		plugins:         map[string]*Plugin{},
		conflictsLogged: map[[3]string]bool{},
		closing:         make(chan struct{}),
	}
	h.routes.Store(&routeTable{funcs: map[string]*route{}, failed: map[string]*Plugin{}})
	return h, nil
}

// Start scans the plugins directory, starts every plugin concurrently and
// returns when each is ready or failed (a broken plugin is logged with its
// reason and does not stop the others). With Config.Watch it then watches
// the directory. It fails only when the directory cannot be read or the
// watcher cannot start.
func (h *Host) Start(ctx context.Context) error {
	if err := h.Rescan(ctx); err != nil {
		return err
	}
	if h.cfg.Watch {
		w, err := newWatcher(h)
		if err != nil {
			return err
		}
		h.watcher = w
	}
	return nil
}

// Rescan brings the running plugins in line with the directory: new files
// are started, removed ones drained and stopped, changed ones (different
// sha256) replaced blue/green, and failed ones retried. It returns when
// those actions are done. SIGHUP and fsnotify overflows call it.
func (h *Host) Rescan(ctx context.Context) error {
	h.scanMu.Lock()
	defer h.scanMu.Unlock()
	if h.closed.Load() {
		return ErrClosed
	}
	found, skipped, err := scanDir(h.cfg.Dir)
	if err != nil {
		return err
	}
	for f, reason := range skipped {
		h.log.Debug("ignoring file in plugins dir", "file", f, "reason", reason)
	}
	seen := map[string]bool{}
	var wg sync.WaitGroup
	for _, c := range found {
		seen[c.name] = true
		wg.Add(1)
		go func() {
			defer wg.Done()
			h.sync(ctx, c)
		}()
	}
	h.mu.Lock()
	var gone []*Plugin
	for name, p := range h.plugins {
		if !seen[name] {
			gone = append(gone, p)
			delete(h.plugins, name)
		}
	}
	h.mu.Unlock()
	for _, p := range gone {
		wg.Add(1)
		go func() {
			defer wg.Done()
			h.removePlugin(p)
		}()
	}
	wg.Wait()
	h.rebuildRoutes()
	return nil
}

// syncPath brings the plugin of one file in line with it: started when
// new, replaced when changed, removed when the file is gone or no longer a
// plugin. The watcher calls it for each settled path.
func (h *Host) syncPath(ctx context.Context, path string) {
	if h.closed.Load() {
		return
	}
	name, ok := PluginName(filepath.Base(path))
	if !ok {
		return
	}
	c, reason := checkCandidate(path)
	if reason == "" {
		h.sync(ctx, c)
		return
	}
	h.mu.Lock()
	p, ok := h.plugins[name]
	if ok {
		delete(h.plugins, name)
	}
	h.mu.Unlock()
	if ok {
		h.log.Info("plugin file gone or unusable", "plugin", name, "reason", reason)
		h.removePlugin(p)
	}
}

// sync starts, replaces or retries the plugin of candidate c as needed.
func (h *Host) sync(ctx context.Context, c candidate) {
	h.mu.Lock()
	p, ok := h.plugins[c.name]
	if !ok {
		if h.closed.Load() {
			h.mu.Unlock()
			return
		}
		p = newPlugin(h, c)
		h.plugins[c.name] = p
		h.mu.Unlock()
		h.log.Info("plugin found", "plugin", c.name, "path", c.path)
		p.opMu.Lock()
		defer p.opMu.Unlock()
		p.start(ctx)
		return
	}
	h.mu.Unlock()
	p.opMu.Lock()
	defer p.opMu.Unlock()
	p.mu.Lock()
	unchanged := p.stamp == c.info && p.path == c.path
	v := p.v.Load()
	p.mu.Unlock()
	if v.state == StateFailed || v.state == StateStarting {
		p.replace(ctx, c)
		return
	}
	if unchanged {
		return
	}
	if v.inst != nil {
		if sum, err := fileSHA256(c.path); err == nil && sum == v.inst.sum {
			p.mu.Lock()
			p.path, p.stamp = c.path, c.info
			p.mu.Unlock()
			return // touched, same content
		}
	}
	p.replace(ctx, c)
}

// removePlugin drains and stops p (its file is gone).
func (h *Host) removePlugin(p *Plugin) {
	h.log.Info("plugin removed", "plugin", p.name)
	p.opMu.Lock()
	defer p.opMu.Unlock()
	p.remove()
	h.rebuildRoutes()
}

// rebuildRoutes rebuilds the routing table from the current plugins and
// swaps it in. Name conflicts are logged once each.
func (h *Host) rebuildRoutes() {
	h.mu.Lock()
	defer h.mu.Unlock()
	plugins := make([]*Plugin, 0, len(h.plugins))
	for _, p := range h.plugins {
		plugins = append(plugins, p)
	}
	t, conflicts := buildRoutes(plugins)
	for _, c := range conflicts {
		if !h.conflictsLogged[c] {
			h.conflictsLogged[c] = true
			h.log.Warn("function name conflict: later duplicate not served", "function", c[0], "served_by", c[1], "dropped_from", c[2])
		}
	}
	h.routes.Store(t)
}

// Function returns the served function fn with its $refs inlined, or nil.
// The result must not be modified.
func (h *Host) Function(fn string) *opentool.Function {
	if r, ok := h.routes.Load().funcs[fn]; ok {
		return r.fn
	}
	return nil
}

// Document returns the aggregated OpenTool 1.1.0 document of every served
// function (plugin-name order, then each document's order), with $refs
// inlined, schemas keyed "PLUGIN.Name" and server.url set to baseURL
// (left out when empty). title and version fill info. The result must
// not be modified.
func (h *Host) Document(title, version, baseURL string) *opentool.OpenTool {
	return h.routes.Load().document(title, version, baseURL)
}

// FunctionInfo is one served function and the plugin that serves it.
type FunctionInfo struct {
	// Plugin is the serving plugin's name.
	Plugin string `json:"plugin"`
	// Function is the function (with $refs inlined).
	Function *opentool.Function `json:"function"`
	// Info is the info object (title, description, version) of the
	// serving plugin's own document.
	Info opentool.Info `json:"info"`
}

// Functions lists the served functions in the order of Document.
func (h *Host) Functions() []FunctionInfo {
	t := h.routes.Load()
	out := make([]FunctionInfo, 0, len(t.order))
	for _, r := range t.order {
		out = append(out, FunctionInfo{Plugin: r.plugin.name, Function: r.fn, Info: r.info})
	}
	return out
}

// Plugins returns the status of every plugin, sorted by name.
func (h *Host) Plugins() []PluginStatus {
	h.mu.Lock()
	ps := make([]*Plugin, 0, len(h.plugins))
	for _, p := range h.plugins {
		ps = append(ps, p)
	}
	h.mu.Unlock()
	out := make([]PluginStatus, 0, len(ps))
	for _, p := range ps {
		out = append(out, p.Status())
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// Close stops watching, drains every plugin's calls in flight (up to
// Config.DrainTimeout or ctx's deadline, whichever is first), stops every
// plugin process and removes the state folder. It is safe to call twice.
func (h *Host) Close(ctx context.Context) error {
	if !h.closed.CompareAndSwap(false, true) {
		return nil
	}
	close(h.closing)
	if h.watcher != nil {
		h.watcher.close()
	}
	h.scanMu.Lock()
	defer h.scanMu.Unlock()
	h.mu.Lock()
	ps := make([]*Plugin, 0, len(h.plugins))
	for _, p := range h.plugins {
		ps = append(ps, p)
	}
	h.mu.Unlock()
	var wg sync.WaitGroup
	for _, p := range ps {
		wg.Add(1)
		go func() {
			defer wg.Done()
			p.remove()
		}()
	}
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-ctx.Done():
		for _, p := range ps {
			if inst := p.v.Load().inst; inst != nil {
				inst.kill()
			}
		}
		<-done
	}
	return h.state.remove()
}
