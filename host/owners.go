package host

// Remembered owners. The owner of each plain function name is written to
// STATE_DIR/owners-HASH.json (HASH: the plugins folder's absolute path),
// so that the plugin that owned a name keeps it after a restart exactly as
// it does while the host runs: ownership does not depend on the order in
// which plugins arrived or on their names sorting first. routes.go's
// claimFree gives a free name to its remembered owner first.
//
// The same file remembers which file of the plugins folder each plugin
// name belongs to, so that a file dropped in later that declares a name
// another file serves (aaa.mcp.json declaring a server "vault") is
// refused after a restart as it is while the host runs, instead of
// winning because its name sorts first: Host.owners gives
// discover.ScanDir the live owners and, for names no live plugin has,
// the remembered files.

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"sync"

	"github.com/opentool-host/opentool-host/host/supervise"
	"github.com/opentool-host/opentool-host/internal/strictjson"
)

// maxOwnersFile bounds the remembered owners file the host reads.
const maxOwnersFile = 1 << 20

// ownersRecord is the remembered owners file: the plugins folder it
// belongs to and, by plain function name, the owning plugin's name.
type ownersRecord struct {
	Dir    string            `json:"dir"`
	Owners map[string]string `json:"owners"`
	// Plugins maps each plugin name to the base name of the file in the
	// folder that declares it (absent in files of older hosts).
	Plugins map[string]string `json:"plugins,omitempty"`
}

// nameOwners remembers the owner of each plain function name in one file.
type nameOwners struct {
	path string
	dir  string
	// last is what the file holds (function name → plugin name).
	last map[string]string
	// mu guards files, which Rescan reads (Host.owners) outside routeMu.
	mu sync.Mutex
	// files is what the file holds of plugin names (plugin name → file
	// base name in the folder).
	files map[string]string
}

// loadOwners reads the remembered owners of dir's function names from
// the state folder's parent. A missing file remembers nothing; an
// unreadable or malformed one is logged and then overwritten.
func (h *Host) loadOwners() *nameOwners {
	abs, err := filepath.Abs(h.cfg.Dir)
	if err != nil {
		abs = h.cfg.Dir
	}
	sum := sha256.Sum256([]byte(abs))
	o := &nameOwners{path: filepath.Join(h.state.Parent, "owners-"+hex.EncodeToString(sum[:8])+".json"), dir: abs, last: map[string]string{}, files: map[string]string{}}
	b, err := os.ReadFile(o.path)
	if errors.Is(err, fs.ErrNotExist) {
		return o
	}
	var rec ownersRecord
	if err == nil {
		err = strictjson.DecodeExact(b, &rec, maxOwnersFile)
	}
	if err != nil || rec.Dir != abs {
		h.log.Warn("remembered owners of function names not read; they are decided anew", "file", o.path, "error", err)
		return o
	}
	if rec.Owners != nil {
		o.last = rec.Owners
	}
	for name, base := range rec.Plugins {
		if base == filepath.Base(base) && base != "." && base != ".." {
			o.files[name] = base // a name, never a path that leaves the folder
		}
	}
	return o
}

// file returns the remembered file (its base name in the folder) of
// plugin name, or "".
func (o *nameOwners) file(name string) string {
	if o == nil {
		return ""
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.files[name]
}

// save writes the plain names of claims owned by plugins of offers, and
// the file in the folder of each plugin of offers, when they differ from
// what the file holds. A failed write is logged: the
// owners then hold while the host runs.
func (o *nameOwners) save(h *Host, offers []supervise.Offer, claims map[string]claim) {
	plugins := map[*supervise.Plugin]bool{}
	for _, of := range offers {
		plugins[of.P] = true
	}
	now := map[string]string{}
	for name, c := range claims {
		if name == c.fn && plugins[c.owner] {
			now[name] = c.owner.Name()
		}
	}
	files := map[string]string{}
	for p := range plugins {
		if abs, err := filepath.Abs(p.Path()); err == nil && filepath.Dir(abs) == o.dir {
			files[p.Name()] = filepath.Base(abs)
		}
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	if maps.Equal(now, o.last) && maps.Equal(files, o.files) {
		return
	}
	b, _ := json.Marshal(ownersRecord{Dir: o.dir, Owners: now, Plugins: files})
	if err := writeReplacing(o.path, b); err != nil {
		h.log.Warn("owners of function and plugin names not remembered for the next start", "file", o.path, "error", err)
		return
	}
	o.last, o.files = now, files
}

// remembered returns the remembered owner's name of function fn, or "".
func (o *nameOwners) remembered(fn string) string {
	if o == nil {
		return ""
	}
	return o.last[fn]
}

// writeReplacing writes b to a new file beside path and renames it over
// path, so that a reader (another host on the same folder) never sees a
// partial file.
func writeReplacing(path string, b []byte) error {
	f, err := os.CreateTemp(filepath.Dir(path), filepath.Base(path)+".*")
	if err != nil {
		return err
	}
	_, err = f.Write(b)
	if err = errors.Join(err, f.Close()); err == nil {
		err = os.Rename(f.Name(), path)
	}
	if err != nil {
		os.Remove(f.Name())
	}
	return err
}
