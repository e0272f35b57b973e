package host

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/opentool-host/opentool-host/host/core"
	"github.com/opentool-host/opentool-host/host/discover"
	"github.com/opentool-host/opentool-host/host/supervise"
	"github.com/opentool-host/opentool-host/process/launcher"
	"github.com/opentool-host/opentool-host/protocol/decl"
	"github.com/opentool-host/opentool-host/protocol/lockfile"
)

// Rescan brings the running plugins in line with the directory: new files
// are started, removed ones drained and stopped, changed ones (different
// sha256) replaced blue/green, and failed ones retried. It returns when
// those actions are done, with the routing table rebuilt; when ctx ends
// first it returns ctx's error and the actions go on. SIGHUP and fsnotify
// overflows call it.
func (h *Host) Rescan(ctx context.Context) error {
	h.scanMu.Lock()
	defer h.scanMu.Unlock()
	if h.closed.Load() {
		return core.ErrClosed
	}
	h.follow.Do(h.startFollowing)
	sc, err := discover.ScanDir(h.cfg.Dir, h.cfg.MCPConfigs, h.owners())
	if err != nil {
		return err
	}
	ignored := map[string]string{}
	for f, reason := range sc.Skipped {
		if lookslikePlugin(f) {
			ignored[f] = reason
			h.log.Warn("file in the plugins folder is not served", "file", f, "reason", reason)
		} else {
			h.log.Debug("ignoring file in plugins dir", "file", f, "reason", reason)
		}
	}
	h.ignoredMu.Lock()
	h.ignored.Store(&ignored)
	h.ignoredMu.Unlock()
	for f, hint := range sc.Hints {
		h.log.Warn("not reading file in plugins dir", "file", f, "reason", hint)
	}
	for f, n := range sc.Notes {
		discover.LogNote(h.log, f, n)
	}
	for what, reason := range sc.Refused {
		h.log.Error("plugin refused", "plugin", what, "reason", reason)
		file, _, _ := strings.Cut(what, ": ")
		ignored[file] = joinReasons(ignored[file], reason)
	}
	seen := map[string]bool{}
	var waits []<-chan struct{}
	for _, c := range sc.Found {
		seen[c.Name] = true
		p, old := h.takePlugin(c.Name, c.Path)
		if p == nil {
			return core.ErrClosed
		}
		if old != nil {
			waits = append(waits, old.Remove())
		}
		waits = append(waits, p.Sync(c))
	}
	for _, p := range h.takeUnseen(seen) {
		waits = append(waits, p.Remove())
	}
	// Each plugin that is up (or failed) is served at once: the routes
	// are rebuilt as each start ends, not after the slowest one.
	done := make(chan struct{}, len(waits))
	stop := make(chan struct{})
	defer close(stop)
	for _, w := range waits {
		go func() {
			select {
			case <-w:
				done <- struct{}{}
			case <-stop:
			}
		}()
	}
	for range waits {
		select {
		case <-done:
			h.rebuild(true)
		case <-h.closing:
			return core.ErrClosed
		case <-ctx.Done():
			return fmt.Errorf("host: rescan: %w", ctx.Err())
		}
	}
	h.rebuildRoutes()
	return nil
}

// syncPath brings the plugins of one file in line with it: started when
// new, replaced when changed, removed when the file is gone or no longer a
// plugin. The watcher calls it for each settled path; it does not wait.
func (h *Host) syncPath(path string) {
	if h.closed.Load() {
		return
	}
	base := filepath.Base(path)
	if name, ok := discover.IsPolicyFile(base); ok {
		h.syncPolicy(name)
		return
	}
	if base == lockfile.Name {
		h.reloadPins()
		return
	}
	var found []discover.Candidate
	switch {
	case discover.IsDeclaration(base):
		var note discover.DeclNote
		found, note = discover.ReadDeclaration(path, false)
		discover.LogNote(h.log, path, note)
	default:
		if _, ok := decl.PluginName(base); !ok {
			return
		}
		c, reason := discover.CheckCandidate(path)
		h.setIgnored(base, reason)
		if reason != "" {
			if _, err := os.Lstat(path); err == nil && lookslikePlugin(base) {
				h.log.Warn("file in the plugins folder is not served", "file", base, "reason", reason)
			}
			break
		}
		found = []discover.Candidate{c}
	}
	keep := map[string]bool{}
	refused := ""
	for _, c := range discover.WithPolicies(h.cfg.Dir, found) {
		p, err := h.claimPlugin(c, path)
		if err != nil {
			h.log.Error("plugin refused", "plugin", base+": "+c.Name, "reason", err)
			refused = joinReasons(refused, err.Error())
			continue
		}
		if p != nil {
			keep[c.Name] = true
			p.Sync(c)
		}
	}
	if discover.IsDeclaration(base) {
		h.setIgnored(base, refused)
	}
	for _, p := range h.takeFrom(path, keep) {
		p.Remove()
	}
}

// joinReasons joins two reasons a file is not served with "; " ("" when
// there is none).
func joinReasons(a, b string) string {
	if a == "" {
		return b
	}
	return a + "; " + b
}

// reloadPins re-reads opentool.lock after it changed and lets every
// held plugin try again. A lock that cannot be read keeps the previous
// one (never fewer pins by accident).
func (h *Host) reloadPins() {
	if h.sv.Pins == nil {
		return
	}
	if err := h.sv.Pins.Reload(); err != nil {
		h.log.Error("opentool.lock changed but cannot be read; the previous pins stay", "error", err)
		return
	}
	h.log.Info("opentool.lock reloaded")
	for _, p := range h.all() {
		p.PinsChanged()
	}
}

// syncPolicy re-reads the file of plugin name after its policy file
// changed (the plugin restarts when the policy differs); nothing when no
// such plugin runs.
func (h *Host) syncPolicy(name string) {
	h.mu.Lock()
	p := h.plugins[name]
	h.mu.Unlock()
	if p == nil {
		h.log.Debug("policy file for a plugin that is not there", "plugin", name)
		return
	}
	h.syncPath(p.Path())
}

// owners maps each plugin's name to the file that declares it: the live
// plugins' files, and for a name no live plugin has, the file of the
// folder remembered to declare it (owners.go), so that a file dropped in
// later does not take a plugin name at a restart that it could not take
// while the host ran (discover's claimNames keeps the owner's file).
func (h *Host) owners() map[string]string {
	h.mu.Lock()
	m := make(map[string]string, len(h.plugins))
	for name, p := range h.plugins {
		m[name] = p.Path()
	}
	h.mu.Unlock()
	h.known.mu.Lock()
	defer h.known.mu.Unlock()
	for name, base := range h.known.files {
		if _, live := m[name]; !live {
			m[name] = filepath.Join(h.cfg.Dir, base)
		}
	}
	return m
}

// claimPlugin returns the Plugin of c's name declared by path, made when
// new; nil once the host is closing. Errors: the name, or its variable
// key (launcher.PluginKey), is another plugin's (with c's own fault, if
// any).
func (h *Host) claimPlugin(c discover.Candidate, path string) (*supervise.Plugin, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if p, ok := h.plugins[c.Name]; ok && p.Path() != path {
		return nil, errors.New(c.TakenBy(c.Name, p.Path()))
	}
	key := launcher.PluginKey(c.Name)
	for name, p := range h.plugins {
		if name != c.Name && launcher.PluginKey(name) == key {
			return nil, errors.New(c.TakenBy(name, p.Path()))
		}
	}
	return h.pluginLocked(c.Name, path), nil
}

// takePlugin returns the Plugin of name declared by path, made when new,
// and the Plugin of the same name declared by another file, which it
// replaces (Rescan decided, by claimNames); nil once the host is closing.
func (h *Host) takePlugin(name, path string) (p, old *supervise.Plugin) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if q, ok := h.plugins[name]; ok && q.Path() != path {
		delete(h.plugins, name)
		old = q
	}
	return h.pluginLocked(name, path), old
}

// pluginLocked returns the Plugin of name, made when new; nil once the
// host is closing. Callers hold h.mu.
func (h *Host) pluginLocked(name, path string) *supervise.Plugin {
	if h.closed.Load() {
		return nil
	}
	p, ok := h.plugins[name]
	if !ok {
		p = supervise.NewPlugin(h.sv, name, path)
		h.plugins[name] = p
		h.log.Info("plugin found", "plugin", name, "path", path)
		h.events.Publish(core.Event{Type: core.EventFound, Plugin: name, Message: "plugin found", Reason: filepath.Base(path)})
	}
	return p
}

// takeFrom removes from the host the plugins declared by path whose
// names are not in keep and returns them.
func (h *Host) takeFrom(path string, keep map[string]bool) []*supervise.Plugin {
	h.mu.Lock()
	defer h.mu.Unlock()
	var gone []*supervise.Plugin
	for name, p := range h.plugins {
		if p.Path() == path && !keep[name] {
			gone = append(gone, p)
			delete(h.plugins, name)
		}
	}
	return gone
}

// takeUnseen removes from the host the plugins whose names are not in
// seen and returns them.
func (h *Host) takeUnseen(seen map[string]bool) []*supervise.Plugin {
	h.mu.Lock()
	defer h.mu.Unlock()
	var gone []*supervise.Plugin
	for name, p := range h.plugins {
		if !seen[name] {
			gone = append(gone, p)
			delete(h.plugins, name)
		}
	}
	return gone
}

// IgnoredFile is a file of the plugins folder that looks like a plugin
// (its name starts with opentool-plugin-) but is not one.
type IgnoredFile struct {
	// File is the file's name in the plugins folder.
	File string `json:"file"`
	// Reason says why it is not served: "not executable", "not a regular
	// file", "not readable: permission denied", "a symbolic link to a
	// missing file", "plugin name must match ...".
	Reason string `json:"reason"`
}

// Ignored lists the files of the plugins folder whose names start with
// decl.PluginPrefix but that cannot be run as plugins, and the declarations
// whose plugin name another file took, with the reason, sorted by name:
// /health and `list` show them so that no such file is ignored without a
// word.
func (h *Host) Ignored() []IgnoredFile {
	m := h.ignored.Load()
	if m == nil {
		return nil
	}
	out := make([]IgnoredFile, 0, len(*m))
	for f, r := range *m {
		out = append(out, IgnoredFile{File: f, Reason: r})
	}
	slices.SortFunc(out, func(a, b IgnoredFile) int { return strings.Compare(a.File, b.File) })
	return out
}

// setIgnored records (reason not "") or clears the plugins-folder file
// base after the watcher saw it change; a file that is gone, or whose
// name does not look like a plugin's or a declaration's, is cleared.
func (h *Host) setIgnored(base, reason string) {
	h.ignoredMu.Lock()
	defer h.ignoredMu.Unlock()
	m := map[string]string{}
	if old := h.ignored.Load(); old != nil {
		m = maps.Clone(*old)
	}
	if _, err := os.Lstat(filepath.Join(h.cfg.Dir, base)); reason == "" || err != nil || !(lookslikePlugin(base) || discover.IsDeclaration(base)) {
		delete(m, base)
	} else {
		m[base] = reason
	}
	h.ignored.Store(&m)
}

// lookslikePlugin reports whether a skipped file of the plugins folder is
// meant as a plugin: its name starts with decl.PluginPrefix and it is not an
// editor's or a build tool's temporary file.
func lookslikePlugin(name string) bool {
	return strings.HasPrefix(name, decl.PluginPrefix) && !decl.IsTempFile(name)
}
