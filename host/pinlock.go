package host

import (
	"path/filepath"

	"github.com/opentool-host/opentool-host/host/discover"
	"github.com/opentool-host/opentool-host/protocol/lockfile"
)

// Pins returns a lock that pins what the host serves now: each plugin's
// files (executable, declaration, policy) as last started and the digest
// of each function its serving process declares. Plugins with no serving
// process have their files pinned but no functions. `opentool-host lock`
// writes it.
func (h *Host) Pins() *lockfile.File {
	lock := lockfile.New()
	for _, p := range h.all() {
		f, sum, doc := p.PinState()
		if f.Path == "" {
			continue
		}
		file := sum
		if f.Launch != "" {
			file = f.FileSum
		}
		if file != "" {
			lock.Files[filepath.Base(f.Path)] = file
		}
		if f.Policy.Path != "" && f.Policy.Sum != "" {
			lock.Files[filepath.Base(f.Policy.Path)] = f.Policy.Sum
		}
		if f.Launch != "" {
			discover.PinPrograms(lock, p.Name(), f.Launch, h.log)
		}
		if doc == nil {
			continue
		}
		fns := map[string]string{}
		for k := range doc.Functions {
			fns[doc.Functions[k].Name] = lockfile.Digest(&doc.Functions[k])
		}
		lock.Functions[p.Name()] = fns
	}
	return lock
}
