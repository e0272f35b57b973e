package discover

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"

	"github.com/hashicorp/go-hclog"

	"github.com/opentool-host/opentool-host/process/launcher"
)

// StateDir is the host-owned state of one Host. Its root folder
// "host-PID-RANDOM" under Config.StateDir holds copies of plugin binaries
// named by their sha256 (running a copy avoids "text file busy" when a
// binary is rebuilt in place, and closes the gap between checking a file
// and executing it). go-plugin's unix sockets go into a second folder,
// "oth-PID-RANDOM" under the system temp folder, whose path stays short
// enough for a socket address (108 bytes). Copies are reference counted
// and removed when no process uses them; remove deletes both folders, and
// folders of dead hosts are swept when a host starts.
type StateDir struct {
	// Parent is Config.StateDir (or its default), which also holds the
	// remembered owners of function names (owners.go).
	Parent string
	root   string
	Bin    string // the binary copies, named by sha256
	// run holds the mirrors of folders whose files a declared plugin
	// executes under a lock (verify).
	run  string
	Sock string // go-plugin's socket folder ("oth-PID-RANDOM", short)
	// shared: plugins run as another user (Config.PluginUser), who must
	// execute the copies.
	shared bool

	mu      sync.Mutex
	refs    map[string]int // sha256 -> processes using the copy
	mirrors map[string]int // mirror folder name -> processes using it
}

const sockPrefix = "oth-"

// NewStateDir makes the state folders and sweeps those of dead hosts.
// With a plugin user (user non-nil), the folders can be traversed and the
// binary copies read and executed by others (binaries hold no secret),
// and so can the socket folder (0711, the host's): each plugin creates
// its socket in go-plugin's per-start plugin-dir inside it, 0770 with the
// plugin user's group, and cannot list, rename or remove the others'.
func NewStateDir(parent string, user *syscall.Credential, log hclog.Logger) (*StateDir, error) {
	if parent == "" {
		parent = filepath.Join(os.TempDir(), "opentool-host")
	}
	if err := os.MkdirAll(parent, 0o700); err != nil {
		return nil, fmt.Errorf("state dir: %w", err)
	}
	SweepDeadDirs(parent, "host-", log)
	SweepDeadDirs(os.TempDir(), sockPrefix, log)
	pid := strconv.Itoa(os.Getpid())
	root, err := os.MkdirTemp(parent, "host-"+pid+"-")
	if err != nil {
		return nil, fmt.Errorf("state dir: %w", err)
	}
	sock, err := os.MkdirTemp("", sockPrefix+pid+"-")
	if err != nil {
		os.RemoveAll(root)
		return nil, fmt.Errorf("state dir: %w", err)
	}
	s := &StateDir{Parent: parent, root: root, Bin: filepath.Join(root, "bin"), run: filepath.Join(root, "run"), Sock: sock,
		refs: map[string]int{}, mirrors: map[string]int{}}
	if err := errors.Join(os.MkdirAll(s.Bin, 0o700), os.MkdirAll(s.run, 0o700)); err != nil {
		s.Remove()
		return nil, fmt.Errorf("state dir: %w", err)
	}
	if user != nil {
		s.shared = true
		err := errors.Join(os.Chmod(parent, 0o711), os.Chmod(root, 0o711), os.Chmod(s.Bin, 0o711), os.Chmod(s.run, 0o711),
			os.Chmod(sock, 0o711))
		if err != nil {
			s.Remove()
			return nil, fmt.Errorf("state dir for --plugin-user: %w", err)
		}
	}
	return s, nil
}

// SweepDeadDirs removes the folders PREFIX+PID+"-"... in parent whose
// process no longer exists (never this process's): the state folders of
// hosts that died, and the test kit's build folders of test binaries that
// exited. Errors are ignored: a folder left is swept by a later call.
func SweepDeadDirs(parent, prefix string, log hclog.Logger) {
	entries, err := os.ReadDir(parent)
	if err != nil {
		return
	}
	for _, e := range entries {
		rest, ok := strings.CutPrefix(e.Name(), prefix)
		if !ok || !e.IsDir() {
			continue
		}
		pidText, _, _ := strings.Cut(rest, "-")
		pid, err := strconv.Atoi(pidText)
		if err != nil || pid == os.Getpid() || processAlive(pid) {
			continue
		}
		if err := removeTree(filepath.Join(parent, e.Name())); err == nil {
			log.Debug("swept the folder of a dead process", "dir", filepath.Join(parent, e.Name()))
		}
	}
}

func processAlive(pid int) bool {
	err := syscall.Kill(pid, 0)
	return err == nil || err == syscall.EPERM
}

// Acquire copies the executable at path into bin/ (unless a copy with the
// same sha256 is there) and returns the copy's path and the sha256 (hex).
// Call release(sum) when the process using it is gone.
func (s *StateDir) Acquire(path string) (copyPath, sum string, err error) {
	src, err := os.Open(path)
	if err != nil {
		return "", "", err
	}
	defer src.Close()
	launcher.ForkLock.RLock() // no fork while the copy is open for writing
	tmp, err := os.CreateTemp(s.Bin, ".copy-*")
	if err != nil {
		launcher.ForkLock.RUnlock()
		return "", "", err
	}
	defer os.Remove(tmp.Name()) // no-op after the rename
	h := sha256.New()
	_, err = io.Copy(io.MultiWriter(tmp, h), src)
	if err == nil {
		mode := os.FileMode(0o500) // read-only: the launcher checks its bytes again before each exec
		if s.shared {
			mode = 0o555 // the plugin user runs it
		}
		err = tmp.Chmod(mode)
	}
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	launcher.ForkLock.RUnlock()
	if err != nil {
		return "", "", fmt.Errorf("copy %s: %w", path, err)
	}
	sum = hex.EncodeToString(h.Sum(nil))
	copyPath = filepath.Join(s.Bin, sum)

	s.mu.Lock()
	defer s.mu.Unlock()
	if s.refs[sum] == 0 {
		if err := os.Rename(tmp.Name(), copyPath); err != nil {
			return "", "", err
		}
	}
	s.refs[sum]++
	return copyPath, sum, nil
}

// Release drops one reference to the copy sum and deletes it at zero.
func (s *StateDir) Release(sum string) { s.drop(s.refs, sum, filepath.Join(s.Bin, sum)) }

// drop drops one reference of refs (s.refs or s.mirrors) to key and
// removes path, its file or folder, at zero.
func (s *StateDir) drop(refs map[string]int, key, path string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if refs[key]--; refs[key] <= 0 {
		delete(refs, key)
		_ = removeTree(path)
	}
}

// Remove deletes both state folders.
func (s *StateDir) Remove() error {
	return errors.Join(removeTree(s.root), os.RemoveAll(s.Sock))
}

// maxMirrorEntries bounds the entries of a folder verify mirrors.
const maxMirrorEntries = 16384

// Verified is what verify made of a declared plugin's files.
type Verified struct {
	// Copies maps each file to its verified copy (decl.Launch.Verified),
	// sums each file to the sha256 of the copied bytes.
	Copies, Sums map[string]string
	// Dirs are the mirror folders the copies lie in (a confined plugin
	// must read them).
	Dirs []string
	// Release drops what verify acquired; call it once the process that
	// runs the copies is gone.
	Release func()
}

// verify makes the verified copies of files (absolute paths, the files a
// declared plugin executes or names, decl.Launch.Files), so that what
// runs is exactly the bytes checked against the lock: each file is
// copied into bin/ by sha256 (acquire, hashed as it is copied), and the
// copy is placed, under the file's own name, in a mirror of the folder
// the file really lies in (symbolic links resolved): a host-owned folder
// run/KEY holding a symbolic link to every other entry of that folder
// as it is now. A script run from its copy thus still finds its siblings
// (Python's sys.path[0], Node's relative require, a shell script's
// $(dirname "$0")) while its own bytes cannot change. KEY is the sha256
// of the folder and its copies' names and sums; a mirror is shared and
// removed when its last process is gone. Errors: a file that cannot be
// read, a folder of more than maxMirrorEntries entries, a mirror that
// cannot be made; nothing is left acquired.
func (s *StateDir) verify(files []string) (Verified, error) {
	v := Verified{Copies: map[string]string{}, Sums: map[string]string{}}
	var sums, keys []string
	v.Release = func() {
		for _, sum := range sums {
			s.Release(sum)
		}
		for _, k := range keys {
			s.releaseMirror(k)
		}
	}
	folders := map[string]map[string]string{} // real folder -> name -> sha256
	real := map[string]string{}               // file -> real path
	for _, f := range files {
		_, sum, err := s.Acquire(f)
		if err != nil {
			v.Release()
			return Verified{}, err
		}
		sums = append(sums, sum)
		r, err := filepath.EvalSymlinks(f)
		if err != nil {
			v.Release()
			return Verified{}, err
		}
		real[f], v.Sums[f] = r, sum
		if folders[filepath.Dir(r)] == nil {
			folders[filepath.Dir(r)] = map[string]string{}
		}
		folders[filepath.Dir(r)][filepath.Base(r)] = sum
	}
	mirrorOf := map[string]string{}
	for folder, names := range folders {
		key, err := s.mirror(folder, names)
		if err != nil {
			v.Release()
			return Verified{}, err
		}
		keys = append(keys, key)
		mirrorOf[folder] = filepath.Join(s.run, key)
		v.Dirs = append(v.Dirs, mirrorOf[folder])
	}
	for f, r := range real {
		v.Copies[f] = filepath.Join(mirrorOf[filepath.Dir(r)], filepath.Base(r))
	}
	v.Release = sync.OnceFunc(v.Release)
	return v, nil
}

// mirror returns the name of the mirror of folder whose entries names
// (name → sha256) are the copies bin/SHA256 (hard links), making it
// unless it is there, and takes a reference to it.
func (s *StateDir) mirror(folder string, names map[string]string) (string, error) {
	h := sha256.New()
	io.WriteString(h, folder)
	for _, n := range slices.Sorted(maps.Keys(names)) {
		fmt.Fprintf(h, "\x00%s=%s", n, names[n])
	}
	key := hex.EncodeToString(h.Sum(nil))
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.mirrors[key] == 0 {
		if err := s.makeMirror(folder, names, filepath.Join(s.run, key)); err != nil {
			return "", fmt.Errorf("mirror of %s: %w", folder, err)
		}
	}
	s.mirrors[key]++
	return key, nil
}

// makeMirror makes the mirror of folder at dst (see verify).
func (s *StateDir) makeMirror(folder string, names map[string]string, dst string) error {
	d, err := os.Open(folder)
	if err != nil {
		return err
	}
	entries, err := d.ReadDir(maxMirrorEntries + 1)
	d.Close()
	if err != nil && !errors.Is(err, io.EOF) {
		return err
	}
	if len(entries) > maxMirrorEntries {
		return fmt.Errorf("more than %d entries: give the files a folder of their own", maxMirrorEntries)
	}
	tmp, err := os.MkdirTemp(s.run, ".mirror-*")
	if err != nil {
		return err
	}
	for _, e := range entries {
		if _, pinned := names[e.Name()]; !pinned {
			err = errors.Join(err, os.Symlink(filepath.Join(folder, e.Name()), filepath.Join(tmp, e.Name())))
		}
	}
	for n, sum := range names {
		err = errors.Join(err, os.Link(filepath.Join(s.Bin, sum), filepath.Join(tmp, n)))
	}
	mode := os.FileMode(0o500) // read-only: removeTree makes it writable again
	if s.shared {
		mode = 0o555 // the plugin user lists and runs it
	}
	if err == nil {
		err = os.Chmod(tmp, mode)
	}
	if err == nil {
		_ = removeTree(dst) // a mirror left by a failed release
		err = os.Rename(tmp, dst)
	}
	if err != nil {
		_ = removeTree(tmp)
	}
	return err
}

// removeTree removes path and everything under it, first making its
// folders writable again (mirrors are read-only, makeMirror); symbolic
// links are removed, never followed. Errors: os.RemoveAll's.
func removeTree(path string) error {
	_ = filepath.WalkDir(path, func(p string, d fs.DirEntry, err error) error {
		if err == nil && d.IsDir() {
			_ = os.Chmod(p, 0o700)
		}
		return nil
	})
	return os.RemoveAll(path)
}

// releaseMirror drops one reference to mirror key and removes it at zero.
func (s *StateDir) releaseMirror(key string) { s.drop(s.mirrors, key, filepath.Join(s.run, key)) }
