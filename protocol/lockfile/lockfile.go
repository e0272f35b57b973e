// Package lockfile reads and writes opentool.lock, the file that pins what
// a plugins directory may run, after Terraform's dependency lock file and
// Vault's plugin catalog: the sha256 of every plugin file, declaration and
// policy file, and a digest of every function definition each plugin
// serves. `opentool-host lock --dir DIR` writes it; `opentool-host run
// --locked` refuses a file that is not pinned or does not match (checked
// right before every start and restart) and holds a plugin whose function
// definitions changed until `opentool-host lock --update NAME`.
// `opentool-host pull` pins the files it pulls the same way and records
// where each came from (Sources; optional, see Source).
//
//	{
//	  "lockfile_version": 1,
//	  "files": {
//	    "opentool-plugin-calculator": "3f1c…",
//	    "notes.mcp.json": "9a0b…",
//	    "files.policy.json": "77de…"
//	  },
//	  "functions": {
//	    "calculator": {"add": "sha256:5e2a…", "divide": "sha256:c1d4…"},
//	    "notes": {"add_note": "sha256:08f3…"}
//	  },
//	  "sources": {
//	    "opentool-plugin-calculator": {
//	      "ref": "registry.example/plugins/calculator:1.2",
//	      "manifest": "sha256:9c1e…",
//	      "sha256": "3f1c…"
//	    }
//	  }
//	}
package lockfile

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"

	"github.com/opentool-host/opentool-host/internal/strictjson"
	"github.com/opentool-host/opentool-host/process/launcher"
	"github.com/opentool-host/opentool-host/protocol/opentool"
)

// Name is the lock file's name in the plugins directory.
const Name = "opentool.lock"

// Version is the lockfile_version this package reads and writes.
const Version = 1

// maxBytes caps the lock file read (4 MiB).
const maxBytes = 4 << 20

// File is the content of opentool.lock.
type File struct {
	// Version is the format version (Version).
	Version int `json:"lockfile_version"`
	// Files maps a file's base name in the plugins directory (plugin
	// executable, NAME.mcp.json, NAME.tools.json, NAME.policy.json) to
	// the hex sha256 of its bytes.
	Files map[string]string `json:"files"`
	// Functions maps a plugin's name to its functions: the name each is
	// served as → Digest of its definition.
	Functions map[string]map[string]string `json:"functions"`
	// Sources maps a file's base name (a key of Files) to the OCI
	// artifact `opentool-host pull` got it from. Optional: absent for
	// files that were not pulled. A source is about the bytes it names
	// (Source.SHA256): Write drops a source whose file is no longer
	// pinned with those bytes (re-pinned after a local rebuild, or
	// unpinned).
	Sources map[string]Source `json:"sources,omitempty"`
	// Programs maps a declared plugin's name (NAME.tools.json, a server
	// of NAME.mcp.json) to the files it executes: each program (a bare
	// command resolved in PATH) and each file an argument names (an
	// interpreter's script; protocol/decl.Launch.Files), absolute path →
	// hex sha256. Checked before every start against the host's verified
	// copies, which are what runs (and by the adapter, by path, before
	// each command), like plugin binaries. Optional: absent when no
	// declared plugin runs a program.
	Programs map[string]map[string]string `json:"programs,omitempty"`
}

// Source is where a pinned file was pulled from.
type Source struct {
	// Ref is the reference the file was pulled by, as given
	// ("registry.example/plugins/calculator:1.2"; non-empty).
	Ref string `json:"ref"`
	// Manifest is the digest of the artifact's manifest ("sha256:" and
	// 64 hex digits): REGISTRY/REPOSITORY@Manifest is the same artifact
	// whatever the tag points to later.
	Manifest string `json:"manifest"`
	// SHA256 is the hex sha256 of the file as pulled (its layer's
	// digest).
	SHA256 string `json:"sha256"`
}

var (
	sumRE    = regexp.MustCompile(`^[0-9a-f]{64}$`)
	digestRE = regexp.MustCompile(`^sha256:[0-9a-f]{64}$`)
)

// Read reads and checks the lock file at path. Errors: the file cannot be
// read, is not exactly this format (unknown or duplicate members, wrong
// types), or holds a sum or digest that is not hex sha256; each names the
// JSON path of the fault.
func Read(path string) (*File, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	f, err := Parse(data)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return f, nil
}

// Parse decodes a lock file's bytes (see Read for the errors).
func Parse(data []byte) (*File, error) {
	var f File
	if err := strictjson.DecodeExact(data, &f, maxBytes); err != nil {
		return nil, err
	}
	if f.Version != Version {
		return nil, fmt.Errorf("$.lockfile_version: %d, this host reads %d", f.Version, Version)
	}
	for _, k := range slices.Sorted(maps.Keys(f.Files)) {
		if !sumRE.MatchString(f.Files[k]) {
			return nil, fmt.Errorf("$.files[%q]: not a hex sha256", k)
		}
	}
	for _, p := range slices.Sorted(maps.Keys(f.Functions)) {
		for _, fn := range slices.Sorted(maps.Keys(f.Functions[p])) {
			if !digestRE.MatchString(f.Functions[p][fn]) {
				return nil, fmt.Errorf("$.functions[%q][%q]: not \"sha256:\" and 64 hex digits", p, fn)
			}
		}
	}
	for _, p := range slices.Sorted(maps.Keys(f.Programs)) {
		for _, prog := range slices.Sorted(maps.Keys(f.Programs[p])) {
			switch {
			case !filepath.IsAbs(prog):
				return nil, fmt.Errorf("$.programs[%q][%q]: not an absolute path", p, prog)
			case !sumRE.MatchString(f.Programs[p][prog]):
				return nil, fmt.Errorf("$.programs[%q][%q]: not a hex sha256", p, prog)
			}
		}
	}
	for _, k := range slices.Sorted(maps.Keys(f.Sources)) {
		src := f.Sources[k]
		switch {
		case src.Ref == "":
			return nil, fmt.Errorf("$.sources[%q].ref: must not be empty", k)
		case !digestRE.MatchString(src.Manifest):
			return nil, fmt.Errorf("$.sources[%q].manifest: not \"sha256:\" and 64 hex digits", k)
		case !sumRE.MatchString(src.SHA256):
			return nil, fmt.Errorf("$.sources[%q].sha256: not a hex sha256", k)
		}
	}
	f.init()
	return &f, nil
}

// New returns an empty lock.
func New() *File {
	f := &File{Version: Version}
	f.init()
	return f
}

func (f *File) init() {
	if f.Files == nil {
		f.Files = map[string]string{}
	}
	if f.Functions == nil {
		f.Functions = map[string]map[string]string{}
	}
}

// Write writes f to path through a temp file and a rename (readers never
// see half a file), indented, keys sorted. Sources whose file is not
// pinned with the pulled bytes any more are dropped first.
func (f *File) Write(path string) error {
	f.pruneSources()
	data, err := json.MarshalIndent(f, "", "  ")
	if err != nil {
		return err
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+Name+".*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.Write(append(data, '\n')); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Chmod(0o644); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), path)
}

// SetSource records that file (a key of Files) was pulled from src.
func (f *File) SetSource(file string, src Source) {
	if f.Sources == nil {
		f.Sources = map[string]Source{}
	}
	f.Sources[file] = src
}

// pruneSources drops the sources that no longer describe the pinned
// file: its pin is gone or is other bytes than were pulled.
func (f *File) pruneSources() {
	for k, src := range f.Sources {
		if f.Files[k] != src.SHA256 {
			delete(f.Sources, k)
		}
	}
	if len(f.Sources) == 0 {
		f.Sources = nil
	}
}

// Digest returns "sha256:HEX" of a function's definition: its JSON
// encoding (every member: name, description, parameters, return, stream,
// additionalParameters; maps with sorted keys), so any change to what a
// model is shown changes it.
func Digest(fn *opentool.Function) string {
	b, _ := json.Marshal(fn) // a parsed document always encodes
	sum := sha256.Sum256(b)
	return "sha256:" + hex.EncodeToString(sum[:])
}

// Changed returns the top-level members of a function's definition that
// differ between old and new ("description", "parameters", ...), sorted.
func Changed(old, new *opentool.Function) []string {
	a, b := members(old), members(new)
	var out []string
	for k, v := range a {
		if w, ok := b[k]; !ok || !bytes.Equal(v, w) {
			out = append(out, k)
		}
	}
	for k := range b {
		if _, ok := a[k]; !ok {
			out = append(out, k)
		}
	}
	sort.Strings(out)
	return out
}

// members returns fn's JSON members.
func members(fn *opentool.Function) map[string]json.RawMessage {
	m := map[string]json.RawMessage{}
	if fn == nil {
		return m
	}
	b, _ := json.Marshal(fn)
	_ = json.Unmarshal(b, &m)
	return m
}

// FileSHA256 returns the hex sha256 of the file at path, read as a
// stream (launcher.FileSHA256, the one the launcher checks copies with
// before each exec). Errors: the file cannot be opened or read.
func FileSHA256(path string) (string, error) { return launcher.FileSHA256(path) }

// ErrNotPinned is wrapped by errors about a file or function the lock
// does not hold.
var ErrNotPinned = errors.New("not pinned in " + Name)
