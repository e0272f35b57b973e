package discover

// Pinning (Config.Locked). The plugins directory's opentool.lock
// (package lockfile) pins the sha256 of every file the host may run and a
// digest of every function definition each plugin serves:
//
//   - Files are checked right before every start and restart
//     (startInstance): the binary copy that will run (the exact bytes), the
//     declaration a declared plugin was parsed from, and the plugin's
//     policy file (a pinned policy that disappeared is refused too: that
//     would loosen it). A file that is not pinned or does not match fails
//     the start; a replacement that fails leaves the old process serving.
//   - Definitions are checked when a process has loaded its document and
//     when a serving process reports a changed one (Watch, an MCP server's
//     list_changed): a function whose definition is not the pinned one, or
//     that the lock does not hold, holds the plugin: the old process and
//     definitions keep serving (a first start fails), the difference is
//     logged and shown (function, members), and the new one is served once
//     the lock pins it (`opentool-host lock --update NAME`; the host
//     re-reads opentool.lock when it changes) or at once with
//     Config.AcceptDefinitionChanges. Removed functions are not held.

import (
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync/atomic"

	"github.com/hashicorp/go-hclog"
	"github.com/opentool-host/opentool-host/protocol/decl"

	"github.com/opentool-host/opentool-host/protocol/lockfile"
	"github.com/opentool-host/opentool-host/protocol/opentool"
)

// Pins holds the lock a Locked host enforces; nil pins enforce nothing.
type Pins struct {
	path   string
	accept bool // Config.AcceptDefinitionChanges
	cur    atomic.Pointer[lockfile.File]
}

// heldError is a start or document change held by the lock: files or
// definitions that are not the pinned ones.
type heldError struct {
	plugin string
	faults []string // "opentool-plugin-x: sha256 3f1c… is not the pinned 9a0b…", "add: description, parameters changed"
}

// Error says what the lock holds and how to pin it.
func (e *heldError) Error() string {
	return fmt.Sprintf("held by %s: %s; pin with `opentool-host lock --update %s`", lockfile.Name, strings.Join(e.faults, "; "), e.plugin)
}

// Unwrap makes errors.Is(err, lockfile.ErrNotPinned) true.
func (e *heldError) Unwrap() error { return lockfile.ErrNotPinned }

// NewPins reads dir's lock file. Errors: none there (run `opentool-host
// lock` first) or it cannot be parsed.
func NewPins(dir string, accept bool) (*Pins, error) {
	p := &Pins{path: filepath.Join(dir, lockfile.Name), accept: accept}
	if err := p.Reload(); err != nil {
		return nil, fmt.Errorf("--locked: %w (write it with `opentool-host lock --dir %s`)", err, dir)
	}
	return p, nil
}

// Reload re-reads the lock file; on error the previous lock stays.
func (p *Pins) Reload() error {
	f, err := lockfile.Read(p.path)
	if err != nil {
		return err
	}
	p.cur.Store(f)
	return nil
}

// CheckFiles checks the files plugin name starts from: the binary copy
// of sum binSum (an executable plugin; "" for a declared one), the
// declaration, the files a declared plugin executes (files: each one's
// sha256, those of its verified copies when it is about to start; nil:
// read from disk), and the policy file. Errors: a *heldError naming
// each file that is not pinned or does not match.
func (p *Pins) CheckFiles(name string, f FileRef, binSum string, files map[string]string) error {
	if p == nil {
		return nil
	}
	lock := p.cur.Load()
	var faults []string
	check := func(file, sum string) {
		switch want, ok := lock.Files[file]; {
		case !ok:
			faults = append(faults, file+": not pinned")
		case want != sum:
			faults = append(faults, fmt.Sprintf("%s: sha256 %s is not the pinned %s", file, ShortSum(sum), ShortSum(want)))
		}
	}
	if f.Launch == "" {
		check(filepath.Base(f.Path), binSum)
	} else {
		check(filepath.Base(f.Path), f.FileSum)
		faults = append(faults, checkLaunchFiles(lock.Programs[name], f.Launch, files)...)
	}
	policy := name + ".policy.json"
	if f.Policy.Path != "" {
		check(policy, f.Policy.Sum)
	} else if _, pinned := lock.Files[policy]; pinned {
		faults = append(faults, policy+": pinned, but the file is gone")
	}
	if faults != nil {
		return &heldError{plugin: name, faults: faults}
	}
	return nil
}

// checkLaunchFiles checks the files a declared plugin executes (launch,
// its decl.Launch JSON; sums: each file's sha256, nil to read them from
// disk) against pinned, the plugin's "programs" of the lock. It returns
// a fault per file that is not pinned or not the pinned bytes.
func checkLaunchFiles(pinned map[string]string, launch string, sums map[string]string) []string {
	files, err := launchFiles(launch)
	if err != nil {
		return []string{err.Error()}
	}
	var faults []string
	for _, file := range files {
		want, ok := pinned[file]
		got, known := sums[file]
		var err error
		switch {
		case !ok:
			err = fmt.Errorf("file %s is not pinned in %s", file, lockfile.Name)
		case known:
			err = decl.CompareSum(file, got, want)
		default:
			err = decl.CheckPinned(pinned, file)
		}
		if err != nil {
			faults = append(faults, err.Error())
		}
	}
	return faults
}

// launchFiles returns the files a decl.Launch JSON executes or names
// (decl.Launch.Files), resolved with the host's PATH (which the adapter
// inherits).
func launchFiles(launch string) ([]string, error) {
	l, err := decl.DecodeLaunch(launch)
	if err != nil {
		return nil, err
	}
	return l.Files(os.Getenv("PATH"))
}

// VerifiedLaunch makes the verified copies of the files the declared
// plugin name executes (launch, its decl.Launch JSON; stateDir.verify)
// and returns the launch with the lock's sums of them and their copies
// (decl.Launch.Pinned, Verified), which the adapter runs instead of the
// paths, and what verify made (its sums are checked by checkFiles).
// Errors: the launch does not decode, a file cannot be resolved or
// copied.
func (p *Pins) VerifiedLaunch(state *StateDir, name, launch string) (string, Verified, error) {
	l, err := decl.DecodeLaunch(launch)
	if err != nil {
		return "", Verified{}, err
	}
	files, err := l.Files(os.Getenv("PATH"))
	if err != nil {
		return "", Verified{}, err
	}
	v, err := state.verify(files)
	if err != nil {
		return "", Verified{}, err
	}
	l.Pinned = map[string]string{}
	maps.Copy(l.Pinned, p.cur.Load().Programs[name])
	l.Verified = v.Copies
	return l.Encode(), v, nil
}

// CheckDefinitions checks doc's functions against the pinned digests of
// plugin name; old (the definitions served now, nil when none) says which
// members changed. Errors: a *heldError, unless definition changes are
// accepted (they are then logged by the caller's log and nil returned).
func (p *Pins) CheckDefinitions(name string, doc, old *opentool.OpenTool) (faults []string, err error) {
	if p == nil {
		return nil, nil
	}
	pinned := p.cur.Load().Functions[name]
	served := map[string]*opentool.Function{}
	if old != nil {
		for k := range old.Functions {
			served[old.Functions[k].Name] = &old.Functions[k]
		}
	}
	for k := range doc.Functions {
		fn := &doc.Functions[k]
		want, ok := pinned[fn.Name]
		switch {
		case !ok:
			faults = append(faults, fn.Name+": new function, not pinned")
		case lockfile.Digest(fn) != want:
			if prev := served[fn.Name]; prev != nil && lockfile.Digest(prev) == want {
				faults = append(faults, fmt.Sprintf("%s: %s changed", fn.Name, strings.Join(lockfile.Changed(prev, fn), ", ")))
			} else {
				faults = append(faults, fn.Name+": definition is not the pinned one")
			}
		}
	}
	sort.Strings(faults)
	if faults == nil || p.accept {
		return faults, nil
	}
	return faults, &heldError{plugin: name, faults: faults}
}

// IsHeld reports whether err is a hold by the lock.
func IsHeld(err error) bool {
	var he *heldError
	return errors.As(err, &he)
}

// Status says how a plugin stands with the lock: "" without one,
// "held" when a change waits for the lock, else "pinned" when the
// serving process's files and definitions are the pinned ones, else
// "unpinned".
func (p *Pins) Status(name string, f FileRef, binSum string, doc *opentool.OpenTool, held bool) string {
	switch {
	case p == nil:
		return ""
	case held:
		return "held"
	case doc == nil || p.CheckFiles(name, f, binSum, nil) != nil:
		return "unpinned"
	}
	if faults, _ := p.CheckDefinitions(name, doc, nil); faults != nil {
		return "unpinned"
	}
	return "pinned"
}

// PinPrograms records in lock the sha256 of each file the declared
// plugin name executes or names (launch, its decl.Launch JSON;
// decl.Launch.Files); a file that cannot be read is logged and left
// unpinned (the plugin then fails with --locked, naming it).
func PinPrograms(lock *lockfile.File, name, launch string, log hclog.Logger) {
	files, err := launchFiles(launch)
	if err != nil {
		log.Warn("files of a declared plugin not pinned", "plugin", name, "error", err)
		return
	}
	for _, file := range files {
		sum, err := lockfile.FileSHA256(file)
		if err != nil {
			log.Warn("file not pinned", "plugin", name, "file", file, "error", err)
			continue
		}
		if lock.Programs == nil {
			lock.Programs = map[string]map[string]string{}
		}
		if lock.Programs[name] == nil {
			lock.Programs[name] = map[string]string{}
		}
		lock.Programs[name][file] = sum
	}
}
