package host

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
	"github.com/hashicorp/go-hclog"
	"github.com/opentool-host/opentool-host/internal/decl"
	"maps"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync/atomic"

	"github.com/opentool-host/opentool-host/lockfile"
	"github.com/opentool-host/opentool-host/opentool"
)

// pins holds the lock a Locked host enforces; nil pins enforce nothing.
type pins struct {
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

func (e *heldError) Error() string {
	return fmt.Sprintf("held by %s: %s; pin with `opentool-host lock --update %s`", lockfile.Name, strings.Join(e.faults, "; "), e.plugin)
}

// Unwrap makes errors.Is(err, lockfile.ErrNotPinned) true.
func (e *heldError) Unwrap() error { return lockfile.ErrNotPinned }

// newPins reads dir's lock file. Errors: none there (run `opentool-host
// lock` first) or it cannot be parsed.
func newPins(dir string, accept bool) (*pins, error) {
	p := &pins{path: filepath.Join(dir, lockfile.Name), accept: accept}
	if err := p.reload(); err != nil {
		return nil, fmt.Errorf("--locked: %w (write it with `opentool-host lock --dir %s`)", err, dir)
	}
	return p, nil
}

// reload re-reads the lock file; on error the previous lock stays.
func (p *pins) reload() error {
	f, err := lockfile.Read(p.path)
	if err != nil {
		return err
	}
	p.cur.Store(f)
	return nil
}

// checkFiles checks the files plugin name starts from: the binary copy
// of sum binSum (an executable plugin; "" for a declared one), the
// declaration, and the policy file. Errors: a *heldError naming each
// file that is not pinned or does not match.
func (p *pins) checkFiles(name string, f fileRef, binSum string) error {
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
			faults = append(faults, fmt.Sprintf("%s: sha256 %s is not the pinned %s", file, shortSum(sum), shortSum(want)))
		}
	}
	if f.launch == "" {
		check(filepath.Base(f.path), binSum)
	} else {
		check(filepath.Base(f.path), f.fileSum)
	}
	if f.launch != "" {
		faults = append(faults, checkPrograms(lock, name, f.launch)...)
	}
	policy := name + ".policy.json"
	if f.policy.path != "" {
		check(policy, f.policy.sum)
	} else if _, pinned := lock.Files[policy]; pinned {
		faults = append(faults, policy+": pinned, but the file is gone")
	}
	if faults != nil {
		return &heldError{plugin: name, faults: faults}
	}
	return nil
}

// checkPrograms checks the programs the declared plugin name runs
// (launch, its decl.Launch JSON) against the lock: each resolved file
// must be pinned with its bytes. It returns a fault per program.
func checkPrograms(lock *lockfile.File, name, launch string) []string {
	progs, err := launchPrograms(launch)
	if err != nil {
		return []string{err.Error()}
	}
	var faults []string
	for _, prog := range progs {
		if err := decl.CheckPinned(lock.Programs[name], prog); err != nil {
			faults = append(faults, err.Error())
		} else if lock.Programs[name] == nil {
			faults = append(faults, "program "+prog+" is not pinned in opentool.lock")
		}
	}
	return faults
}

// launchPrograms returns the programs of a decl.Launch JSON, resolved
// with the host's PATH (which the adapter inherits).
func launchPrograms(launch string) ([]string, error) {
	l, err := decl.DecodeLaunch(launch)
	if err != nil {
		return nil, err
	}
	return l.Programs(os.Getenv("PATH"))
}

// pinnedLaunch returns launch with the lock's sums of its programs
// (decl.Launch.Pinned), so that the adapter checks them again before it
// runs each one; launch as is without a lock.
func (p *pins) pinnedLaunch(name, launch string) string {
	if p == nil || launch == "" {
		return launch
	}
	l, err := decl.DecodeLaunch(launch)
	if err != nil {
		return launch
	}
	l.Pinned = map[string]string{}
	maps.Copy(l.Pinned, p.cur.Load().Programs[name])
	return l.Encode()
}

// checkDefinitions checks doc's functions against the pinned digests of
// plugin name; old (the definitions served now, nil when none) says which
// members changed. Errors: a *heldError, unless definition changes are
// accepted (they are then logged by the caller's log and nil returned).
func (p *pins) checkDefinitions(name string, doc, old *opentool.OpenTool) (faults []string, err error) {
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

// isHeld reports whether err is a hold by the lock.
func isHeld(err error) bool {
	var he *heldError
	return errors.As(err, &he)
}

// status says how a plugin stands with the lock: "" without one,
// "held" when a change waits for the lock, else "pinned" when the
// serving process's files and definitions are the pinned ones, else
// "unpinned".
func (p *pins) status(name string, f fileRef, binSum string, doc *opentool.OpenTool, held bool) string {
	switch {
	case p == nil:
		return ""
	case held:
		return "held"
	case doc == nil || p.checkFiles(name, f, binSum) != nil:
		return "unpinned"
	}
	if faults, _ := p.checkDefinitions(name, doc, nil); faults != nil {
		return "unpinned"
	}
	return "pinned"
}

// Pins returns a lock that pins what the host serves now: each plugin's
// files (executable, declaration, policy) as last started and the digest
// of each function its serving process declares. Plugins with no serving
// process have their files pinned but no functions. `opentool-host lock`
// writes it.
func (h *Host) Pins() *lockfile.File {
	lock := lockfile.New()
	for _, p := range h.all() {
		f, sum, doc := p.pinState()
		if f.path == "" {
			continue
		}
		file := sum
		if f.launch != "" {
			file = f.fileSum
		}
		if file != "" {
			lock.Files[filepath.Base(f.path)] = file
		}
		if f.policy.path != "" && f.policy.sum != "" {
			lock.Files[filepath.Base(f.policy.path)] = f.policy.sum
		}
		if f.launch != "" {
			pinPrograms(lock, p.name, f.launch, h.log)
		}
		if doc == nil {
			continue
		}
		fns := map[string]string{}
		for k := range doc.Functions {
			fns[doc.Functions[k].Name] = lockfile.Digest(&doc.Functions[k])
		}
		lock.Functions[p.name] = fns
	}
	return lock
}

// pinPrograms records in lock the sha256 of each program the declared
// plugin name runs (launch, its decl.Launch JSON); a program that cannot
// be read is logged and left unpinned (the plugin then fails with
// --locked, naming it).
func pinPrograms(lock *lockfile.File, name, launch string, log hclog.Logger) {
	progs, err := launchPrograms(launch)
	if err != nil {
		log.Warn("programs of a declared plugin not pinned", "plugin", name, "error", err)
		return
	}
	for _, prog := range progs {
		sum, err := lockfile.FileSHA256(prog)
		if err != nil {
			log.Warn("program not pinned", "plugin", name, "program", prog, "error", err)
			continue
		}
		if lock.Programs == nil {
			lock.Programs = map[string]map[string]string{}
		}
		if lock.Programs[name] == nil {
			lock.Programs[name] = map[string]string{}
		}
		lock.Programs[name][prog] = sum
	}
}
