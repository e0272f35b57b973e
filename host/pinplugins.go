package host

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"

	"github.com/opentool-host/opentool-host/host/core"
	"github.com/opentool-host/opentool-host/host/supervise"
	"github.com/opentool-host/opentool-host/protocol/lockfile"
)

// ErrNoSuchPlugin is WriteLock's error for a name that is not a plugin of
// the folder.
var ErrNoSuchPlugin = errors.New("no such plugin in the directory")

// snapshot starts a host on cfg, waits for every plugin to start or
// fail, and returns what it pins (Host.Pins) and every plugin's status;
// the host is closed before it returns. Errors: NewStarted's.
func snapshot(ctx context.Context, cfg core.Config) (*lockfile.File, []supervise.PluginStatus, error) {
	h, err := NewStarted(ctx, cfg)
	if err != nil {
		return nil, nil, err
	}
	defer h.Close(context.Background())
	return h.Pins(), h.Plugins(), nil
}

// WriteLock pins the plugins of cfg.Dir (`opentool-host lock`): it
// starts them in a host of its own (NewStarted; closed before it
// returns) and writes the folder's lock file, cfg.Dir/lockfile.Name.
// With update (plugin names), only those plugins are pinned anew in the
// existing lock (their functions and files) and the rest of it is kept;
// without, every plugin is pinned anew, keeping where the existing lock,
// if any, says pulled files came from (lockfile.File.Write drops a
// source whose file now has other bytes). It returns the lock written
// and the plugins that did not start, each as "NAME (reason)", sorted:
// their functions are not pinned. Errors: with update, the existing
// lock cannot be read, or a name is not a plugin of the folder
// (wrapping ErrNoSuchPlugin); the host cannot be made or started; the
// lock cannot be written.
func WriteLock(ctx context.Context, cfg core.Config, update []string) (*lockfile.File, []string, error) {
	path := filepath.Join(cfg.Dir, lockfile.Name)
	lock := lockfile.New()
	if len(update) > 0 {
		old, err := lockfile.Read(path)
		if err != nil {
			return nil, nil, err
		}
		lock = old
	}
	now, ps, err := snapshot(ctx, cfg)
	if err != nil {
		return nil, nil, err
	}
	if len(update) > 0 {
		if err := copyPins(lock, now, update, ps); err != nil {
			return nil, nil, err
		}
	} else {
		if old, err := lockfile.Read(path); err == nil {
			now.Sources = old.Sources
		}
		lock = now
	}
	if err := lock.Write(path); err != nil {
		return nil, nil, err
	}
	return lock, notServing(ps), nil
}

// InstallPinned installs the plugins of cfg.Dir, a staging folder of
// files on their way into the folder of the lock file at path (a pulled
// plugin), by calling install; when there is a lock file at path, it
// first pins them in it, so that a host run with Config.Locked finds the
// pins in place when the files arrive. To pin, it starts them in a host
// of its own (as WriteLock does), copies what that host pins of each
// into the lock (their functions and files) and records sources (a
// file's base name → where it came from, lockfile.File.SetSource). When
// install then fails, the previous lock is written back. It returns the
// names of the plugins pinned; nil without a lock file. Errors: the lock
// cannot be read, parsed or written, or a plugin did not start ("not
// installed: the plugin did not start, ..."), and then install is not
// called; install's error (with the failure to write the previous lock
// back, if any).
func InstallPinned(ctx context.Context, cfg core.Config, path string, sources map[string]lockfile.Source, install func() error) ([]string, error) {
	old, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, install()
	}
	if err != nil {
		return nil, err
	}
	lock, err := lockfile.Parse(old)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	now, ps, err := snapshot(ctx, cfg)
	if err != nil {
		return nil, err
	}
	if failed := notServing(ps); len(failed) > 0 {
		return nil, fmt.Errorf("not installed: the plugin did not start, so its functions cannot be pinned in %s: %s (--no-lock installs it unpinned)", path, strings.Join(failed, ", "))
	}
	var names []string
	for _, p := range ps {
		names = append(names, p.Name)
	}
	if err := copyPins(lock, now, names, ps); err != nil {
		return nil, err
	}
	for _, file := range slices.Sorted(maps.Keys(sources)) {
		lock.SetSource(file, sources[file])
	}
	if err := lock.Write(path); err != nil {
		return nil, err
	}
	if err := install(); err != nil {
		prev, perr := lockfile.Parse(old)
		if perr == nil {
			perr = prev.Write(path)
		}
		if perr != nil {
			err = fmt.Errorf("%w; putting the previous %s back also failed: %v", err, filepath.Base(path), perr)
		}
		return nil, err
	}
	return names, nil
}

// notServing lists the plugins of ps that do not serve (neither ready
// nor degraded), as "NAME (reason)", sorted.
func notServing(ps []supervise.PluginStatus) []string {
	var out []string
	for _, p := range ps {
		if !p.State.Serving() {
			out = append(out, fmt.Sprintf("%s (%s)", p.Name, p.LastError))
		}
	}
	sort.Strings(out)
	return out
}

// copyPins copies into lock what now pins of the named plugins (of ps):
// their function digests and their files (plugin file or declaration,
// policy); what now does not pin of them leaves lock. Errors:
// ErrNoSuchPlugin for a name not in ps.
func copyPins(lock, now *lockfile.File, names []string, ps []supervise.PluginStatus) error {
	files := map[string][]string{} // plugin -> files
	for _, p := range ps {
		files[p.Name] = []string{filepath.Base(p.Path), p.Name + ".policy.json"}
	}
	for _, name := range names {
		pinned, ok := files[name]
		if !ok {
			return fmt.Errorf("%s: %w", name, ErrNoSuchPlugin)
		}
		for _, f := range pinned {
			if sum, ok := now.Files[f]; ok {
				lock.Files[f] = sum
			} else {
				delete(lock.Files, f)
			}
		}
		if fns, ok := now.Functions[name]; ok {
			lock.Functions[name] = fns
		} else {
			delete(lock.Functions, name)
		}
	}
	return nil
}
