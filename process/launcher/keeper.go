package launcher

// The keeper makes sure nothing a plugin started outlives its host,
// whatever the plugin does with signals and whatever killed the host.
//
// A host starts one keeper process (StartKeeper: the small keeper
// program, or the host's binary re-executed as "keeper"; both run
// keeper.Run) and holds the write end of a pipe that is the keeper's
// standard input. The kernel closes that end when the host exits for any
// reason, SIGKILL included; the keeper then reads end of file and kills:
//
//   - the host's cgroup folder whole (cgroup.kill on it kills every
//     plugin's cgroup and every process in them: setsid descendants,
//     plugins that ignore SIGTERM or cleared their parent-death signal,
//     plugins a Landlock sandbox keeps out of cgroupfs), then removes the
//     folders;
//   - the process groups the host told it of (Track), for hosts without
//     cgroups.
//
// The keeper ignores SIGINT, SIGTERM and SIGHUP (a terminal's Ctrl-C
// reaches the host's whole process group; the host stops its plugins
// itself and then closes the pipe). It needs no cooperation from any
// plugin. A plugin running as the host's user could still signal the
// keeper before the host dies: run plugins as another user
// (--plugin-user) or sandboxed (Landlock ABI 6 scopes signals) where
// that matters.

import (
	"fmt"
	"os"
	"sync"

	"github.com/opentool-host/opentool-host/process/keeper"
)

// Keeper is the host's end of a running keeper process.
type Keeper struct {
	mu   sync.Mutex
	w    *os.File // the pipe's write end; nil once closed
	proc *Process
	done chan struct{}
}

// StartKeeper runs argv (the keeper command: [keeper.Program's path,
// keeper.Command] or [host-binary, keeper.Command]) with
// cgroupDir (the host's cgroup folder; "" without cgroups) as its
// argument and the read end of a pipe as its standard input. The keeper
// runs in a process group of its own. Errors: the process could not be
// started.
func StartKeeper(argv []string, cgroupDir string) (*Keeper, error) {
	if len(argv) == 0 {
		return nil, fmt.Errorf("keeper: no command")
	}
	r, w, err := os.Pipe() // both ends close-on-exec: no plugin inherits the write end
	if err != nil {
		return nil, fmt.Errorf("keeper: %w", err)
	}
	// The keeper's environment is the allow-list too; it must outlive
	// the host.
	cmd, err := New(Spec{Path: argv[0], Args: append(append([]string{}, argv[1:]...), cgroupDir), Env: Env(os.Environ(), Allow{}), Stdin: r, Stderr: os.Stderr, Outlive: true})
	var proc *Process
	if err == nil {
		proc, err = cmd.Start()
	}
	r.Close()
	if err != nil {
		w.Close()
		return nil, fmt.Errorf("keeper: %w", err)
	}
	k := &Keeper{w: w, proc: proc, done: make(chan struct{})}
	go func() { _ = proc.Wait(); close(k.done) }()
	return k, nil
}

// Track tells the keeper of a plugin's process group pgid, which it kills
// if the host dies. Errors: the keeper is gone or closed.
func (k *Keeper) Track(pgid int) error {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.w == nil {
		return fmt.Errorf("keeper: closed")
	}
	return keeper.Track(k.w, pgid)
}

// Close closes the pipe (the keeper then kills what is left and exits)
// and waits for the keeper to exit.
func (k *Keeper) Close() {
	k.mu.Lock()
	if k.w != nil {
		k.w.Close()
		k.w = nil
	}
	k.mu.Unlock()
	<-k.done
}

// PID returns the keeper's process id.
func (k *Keeper) PID() int { return k.proc.Pid() }
