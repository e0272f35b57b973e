package host

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"

	"github.com/hashicorp/go-hclog"
)

// stateDir is the host-owned folder "host-PID" under Config.StateDir. It
// holds "bin/", copies of plugin binaries named by their sha256 (running a
// copy avoids "text file busy" when a binary is rebuilt in place, and the
// gap between checking a file and executing it), and "sock/", go-plugin's
// unix sockets. Copies are reference counted and removed when no process
// uses them; remove deletes the whole folder.
type stateDir struct {
	root string
	bin  string
	sock string

	mu   sync.Mutex
	refs map[string]int // sha256 -> processes using the copy
}

// newStateDir makes parent/host-PID and sweeps folders of dead hosts.
func newStateDir(parent string, log hclog.Logger) (*stateDir, error) {
	if parent == "" {
		parent = filepath.Join(os.TempDir(), "opentool-host")
	}
	if err := os.MkdirAll(parent, 0o700); err != nil {
		return nil, fmt.Errorf("state dir: %w", err)
	}
	sweepStateDirs(parent, log)
	root := filepath.Join(parent, "host-"+strconv.Itoa(os.Getpid()))
	_ = os.RemoveAll(root) // a previous host with our pid is dead
	s := &stateDir{root: root, bin: filepath.Join(root, "bin"), sock: filepath.Join(root, "sock"), refs: map[string]int{}}
	for _, d := range []string{s.bin, s.sock} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			return nil, fmt.Errorf("state dir: %w", err)
		}
	}
	return s, nil
}

// sweepStateDirs removes host-PID folders whose process no longer exists.
func sweepStateDirs(parent string, log hclog.Logger) {
	entries, err := os.ReadDir(parent)
	if err != nil {
		return
	}
	for _, e := range entries {
		pidText, ok := strings.CutPrefix(e.Name(), "host-")
		if !ok || !e.IsDir() {
			continue
		}
		pid, err := strconv.Atoi(pidText)
		if err != nil || pid == os.Getpid() || processAlive(pid) {
			continue
		}
		if err := os.RemoveAll(filepath.Join(parent, e.Name())); err == nil {
			log.Debug("swept state of a dead host", "dir", e.Name())
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
	tmp, err := os.CreateTemp(s.bin, ".copy-*")
	if err != nil {
		return "", "", err
	}
	defer os.Remove(tmp.Name()) // no-op after the rename
	h := sha256.New()
	if _, err := io.Copy(io.MultiWriter(tmp, h), src); err != nil {
		tmp.Close()
		return "", "", fmt.Errorf("copy %s: %w", path, err)
	}
	if err := tmp.Chmod(0o700); err != nil {
		tmp.Close()
		return "", "", err
	}
	if err := tmp.Close(); err != nil {
		return "", "", err
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

// remove deletes the whole state folder.
func (s *stateDir) remove() error { return os.RemoveAll(s.root) }
