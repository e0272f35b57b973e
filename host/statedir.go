package host

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"

	"github.com/hashicorp/go-hclog"

	"github.com/opentool-host/opentool-host/launcher"
)

// stateDir is the host-owned state of one Host. Its root folder
// "host-PID-RANDOM" under Config.StateDir holds copies of plugin binaries
// named by their sha256 (running a copy avoids "text file busy" when a
// binary is rebuilt in place, and closes the gap between checking a file
// and executing it). go-plugin's unix sockets go into a second folder,
// "oth-PID-RANDOM" under the system temp folder, whose path stays short
// enough for a socket address (108 bytes). Copies are reference counted
// and removed when no process uses them; remove deletes both folders, and
// folders of dead hosts are swept when a host starts.
type stateDir struct {
	root string
	bin  string
	sock string
	// shared: plugins run as another user (Config.PluginUser), who must
	// execute the copies.
	shared bool

	mu   sync.Mutex
	refs map[string]int // sha256 -> processes using the copy
}

const sockPrefix = "oth-"

// newStateDir makes the state folders and sweeps those of dead hosts.
// With a plugin user (user non-nil), the folders can be traversed and the
// binary copies read and executed by others (binaries hold no secret),
// and so can the socket folder (0711, the host's): each plugin creates
// its socket in go-plugin's per-start plugin-dir inside it, 0770 with the
// plugin user's group, and cannot list, rename or remove the others'.
func newStateDir(parent string, user *syscall.Credential, log hclog.Logger) (*stateDir, error) {
	if parent == "" {
		parent = filepath.Join(os.TempDir(), "opentool-host")
	}
	if err := os.MkdirAll(parent, 0o700); err != nil {
		return nil, fmt.Errorf("state dir: %w", err)
	}
	sweepStateDirs(parent, "host-", log)
	sweepStateDirs(os.TempDir(), sockPrefix, log)
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
	s := &stateDir{root: root, bin: filepath.Join(root, "bin"), sock: sock, refs: map[string]int{}}
	if err := os.MkdirAll(s.bin, 0o700); err != nil {
		s.remove()
		return nil, fmt.Errorf("state dir: %w", err)
	}
	if user != nil {
		s.shared = true
		err := errors.Join(os.Chmod(parent, 0o711), os.Chmod(root, 0o711), os.Chmod(s.bin, 0o711),
			os.Chmod(sock, 0o711))
		if err != nil {
			s.remove()
			return nil, fmt.Errorf("state dir for --plugin-user: %w", err)
		}
	}
	return s, nil
}

// sweepStateDirs removes folders PREFIX+PID+"-"... in parent whose
// process no longer exists.
func sweepStateDirs(parent, prefix string, log hclog.Logger) {
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
		if err := os.RemoveAll(filepath.Join(parent, e.Name())); err == nil {
			log.Debug("swept state of a dead host", "dir", filepath.Join(parent, e.Name()))
		}
	}
}

func processAlive(pid int) bool {
	err := syscall.Kill(pid, 0)
	return err == nil || err == syscall.EPERM
}

// acquire copies the executable at path into bin/ (unless a copy with the
// same sha256 is there) and returns the copy's path and the sha256 (hex).
// Call release(sum) when the process using it is gone.
func (s *stateDir) acquire(path string) (copyPath, sum string, err error) {
	src, err := os.Open(path)
	if err != nil {
		return "", "", err
	}
	defer src.Close()
	launcher.ForkLock.RLock() // no fork while the copy is open for writing
	tmp, err := os.CreateTemp(s.bin, ".copy-*")
	if err != nil {
		launcher.ForkLock.RUnlock()
		return "", "", err
	}
	defer os.Remove(tmp.Name()) // no-op after the rename
	h := sha256.New()
	_, err = io.Copy(io.MultiWriter(tmp, h), src)
	if err == nil {
		mode := os.FileMode(0o700)
		if s.shared {
			mode = 0o755 // the plugin user runs it
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
	copyPath = filepath.Join(s.bin, sum)

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

// release drops one reference to the copy sum and deletes it at zero.
func (s *stateDir) release(sum string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.refs[sum]--; s.refs[sum] <= 0 {
		delete(s.refs, sum)
		_ = os.Remove(filepath.Join(s.bin, sum))
	}
}

// remove deletes both state folders.
func (s *stateDir) remove() error {
	return errors.Join(os.RemoveAll(s.root), os.RemoveAll(s.sock))
}
