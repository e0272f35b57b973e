package host

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"sort"

	"github.com/opentool-host/opentool-host/lockfile"
)

// ErrNoSuchPlugin is CopyPins' error for a name that is not a plugin of
// the folder.
var ErrNoSuchPlugin = errors.New("no such plugin in the directory")

// Snapshot starts a host on cfg (mk makes it: New, or a caller's wrapper
// with better messages), waits for every plugin to start or fail, and
// returns what it pins (Host.Pins) and every plugin's status; the host is
// closed before it returns. `opentool-host lock` and `pull` use it.
// Errors: mk's or Start's.
func Snapshot(ctx context.Context, cfg Config, mk func(Config) (*Host, error)) (*lockfile.File, []PluginStatus, error) {
	h, err := mk(cfg)
	if err != nil {
		return nil, nil, err
	}
	defer h.Close(context.Background())
	if err := h.Start(ctx); err != nil {
		return nil, nil, err
	}
	return h.Pins(), h.Plugins(), nil
}

// NotServing lists the plugins of ps that do not serve (neither ready
// nor degraded), as "NAME (reason)", sorted.
func NotServing(ps []PluginStatus) []string {
	var out []string
	for _, p := range ps {
		if !p.State.Serving() {
			out = append(out, fmt.Sprintf("%s (%s)", p.Name, p.LastError))
		}
	}
	sort.Strings(out)
	return out
}

// CopyPins copies into lock what now pins of the named plugins (of ps):
// their function digests and their files (plugin file or declaration,
// policy); what now does not pin of them leaves lock. Errors:
// ErrNoSuchPlugin for a name not in ps.
func CopyPins(lock, now *lockfile.File, names []string, ps []PluginStatus) error {
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
