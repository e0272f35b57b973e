// Package launcher starts every process opentool-host runs and owns it
// until it is gone: plugin processes (Go and script plugins, the adapter
// of declared plugins), the commands and MCP servers the adapter starts,
// and the host's keeper. It is the one place that sets
//
//   - the process group (every process leads its own, unless Spec.SharedGroup);
//   - the parent-death signal (Spec.DeathSignal; Linux only), from one
//     spawner thread that never exits (the signal follows the thread that
//     forked);
//   - the cgroup the process is cloned into (Spec.Cgroup) and the user it
//     runs as (Spec.User);
//   - the environment, an allow-list (Env), never the parent's whole
//     environment;
//   - the sandbox launcher in front of the program (Wrap: rlimits,
//     Landlock, network denial);
//   - the kill: Process.Kill kills the process group and the cgroup, and
//     the Keeper kills what is left if the host dies.
//
// Nothing else in this repository calls exec.Cmd.Start for a plugin or
// anything a plugin runs.
package launcher

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"syscall"
	"time"

	"github.com/opentool-host/opentool-host/process/cgroup"
)

// Spec is one process to start.
type Spec struct {
	// Path is the program (an absolute path, or one exec.LookPath finds
	// in the launcher's own PATH); Args are its arguments, without
	// argv[0] (which is Path).
	Path string
	Args []string
	// Arg0 is argv[0] as the program sees it; "" is Path. A program run
	// from a verified copy (protocol/decl.Exec) sees the path it was
	// declared by.
	Arg0 string
	// Dir is the working directory ("" is the caller's).
	Dir string
	// Env is the whole environment (KEY=VALUE). Build it with Env; nil
	// gives the process an empty environment, never the caller's.
	Env []string
	// Stdin, Stdout and Stderr are as in exec.Cmd (nil: /dev/null), unless
	// the matching pipe is asked for with Cmd's *Pipe methods.
	Stdin          io.Reader
	Stdout, Stderr io.Writer
	// ExtraFiles become descriptors 3, 4, ... of the process; the caller's
	// copies are closed once the process started (or failed to).
	ExtraFiles []*os.File
	// DeathSignal is sent to the process when the thread that started it
	// (the spawner, which lives as long as the caller) dies, e.g. when the
	// caller is SIGKILLed. 0 is SIGKILL. Linux only; elsewhere the
	// caller's Keeper or the plugin's own parent watch covers it.
	DeathSignal syscall.Signal
	// Outlive gives the process no parent-death signal: it survives its
	// caller (the Keeper, whose job starts when the host is gone).
	Outlive bool
	// SharedGroup keeps the process in the caller's process group instead
	// of a group of its own: the caller's group kill (and its Keeper
	// entry) then covers it. Process.Kill then kills the process only.
	SharedGroup bool
	// Cgroup, when set, is the cgroup the process is cloned into (Linux
	// CLONE_INTO_CGROUP); Process.Kill kills and Wait removes it, unless
	// SharedCgroup.
	Cgroup *cgroup.Group
	// SharedCgroup: Cgroup is shared with other processes of the same
	// plugin (the commands of command tools) and outlives this one; its
	// owner removes it.
	SharedCgroup bool
	// User, when set, is the uid and gid the process runs as
	// (supplementary groups are not set). Only a root caller may set it.
	User *syscall.Credential
	// WaitDelay bounds how long Wait waits for the process's pipes to
	// close after it exited (a descendant holding them open); 0 waits for
	// as long as they stay open.
	WaitDelay time.Duration
	// Verify maps files (absolute paths) to the hex sha256 each must have
	// when the process starts: the host-made copies it runs or is given
	// (a plugin binary's copy, a declared program's verified copy, the
	// sandbox launcher's copy). Start hashes each right before the fork
	// and refuses on a difference (a *ChangedError), so a copy rewritten
	// after it was made, by a process sharing the host's user, does not
	// run. nil checks nothing.
	Verify map[string]string
}

// ChangedError is Start's refusal of a file of Spec.Verify whose bytes
// are not the ones the host made and checked.
type ChangedError struct {
	// File is the path of the file; Got and Want are the hex sha256 of
	// its bytes now and of the bytes it must have.
	File, Got, Want string
}

// Error says which program's copy was refused, without the host's own
// paths (it may reach a caller): "the copy the host runs of say.sh was
// rewritten ...". Detail names the copy.
func (e *ChangedError) Error() string {
	return fmt.Sprintf("the copy the host runs of %s was rewritten after the host checked it (sha256 %.12s is not %.12s), so it was not run; the host's log names the copy",
		filepath.Base(e.File), e.Got, e.Want)
}

// Detail names the copy and says what to do, for the host's log and
// status.
func (e *ChangedError) Detail() string {
	return fmt.Sprintf("%s was rewritten after the host made and checked it: sha256 %.12s is not %.12s; "+
		"something running as the host's user wrote to it (run plugins as another user with --plugin-user, or confine them with --sandbox)",
		e.File, e.Got, e.Want)
}

// verifyFiles checks each file of files (Spec.Verify) against its sha256.
// Errors: a *ChangedError, or the file cannot be read.
func verifyFiles(files map[string]string) error {
	for path, want := range files {
		got, err := FileSHA256(path)
		if err != nil {
			return fmt.Errorf("verify %s before it runs: %w", path, err)
		}
		if got != want {
			return &ChangedError{File: path, Got: got, Want: want}
		}
	}
	return nil
}

// FileSHA256 returns the hex sha256 of the file at path, read as a
// stream (plugin binaries are tens of MiB). Errors: the file cannot be
// opened or read.
func FileSHA256(path string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return "", err
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

// Cmd is a process prepared from a Spec, not yet started.
type Cmd struct {
	spec    Spec
	cmd     *exec.Cmd
	started func(*Process)      // Starter.Started
	refused func(*ChangedError) // Starter.Refused
}

// New prepares spec. Errors: an empty Path.
func New(spec Spec) (*Cmd, error) {
	if spec.Path == "" {
		return nil, errors.New("launcher: no program")
	}
	cmd := exec.Command(spec.Path, spec.Args...)
	if spec.Arg0 != "" {
		cmd.Args[0] = spec.Arg0
	}
	cmd.Dir = spec.Dir
	cmd.Env = spec.Env
	if cmd.Env == nil {
		cmd.Env = []string{}
	}
	cmd.Stdin, cmd.Stdout, cmd.Stderr = spec.Stdin, spec.Stdout, spec.Stderr
	cmd.ExtraFiles = spec.ExtraFiles
	cmd.WaitDelay = spec.WaitDelay
	cmd.SysProcAttr = procAttr(spec)
	return &Cmd{spec: spec, cmd: cmd}, nil
}

// StdinPipe is exec.Cmd.StdinPipe: call it before Start.
func (c *Cmd) StdinPipe() (io.WriteCloser, error) { return c.cmd.StdinPipe() }

// StdoutPipe is exec.Cmd.StdoutPipe: call it before Start; the reader
// closes when Wait returns.
func (c *Cmd) StdoutPipe() (io.ReadCloser, error) { return c.cmd.StdoutPipe() }

// StderrPipe is exec.Cmd.StderrPipe: call it before Start.
func (c *Cmd) StderrPipe() (io.ReadCloser, error) { return c.cmd.StderrPipe() }

// Path is the program the process runs.
func (c *Cmd) Path() string { return c.cmd.Path }

// Start starts the process from the spawner thread and returns its
// handle, once every file of Spec.Verify has its sha256. The caller's
// copies of Spec.ExtraFiles are closed either way; on failure the
// Spec's cgroup is removed. Errors: a *ChangedError naming a file of
// Spec.Verify; exec.Cmd.Start's as they are ("fork/exec PATH: no such
// file or directory", ...).
func (c *Cmd) Start() (*Process, error) {
	err := verifyFiles(c.spec.Verify)
	var changed *ChangedError
	if errors.As(err, &changed) && c.refused != nil {
		c.refused(changed)
	}
	if err == nil {
		err = spawn(c.cmd)
	}
	for _, f := range c.cmd.ExtraFiles {
		_ = f.Close() // the process's ends are its own now
	}
	if err != nil {
		if c.spec.Cgroup != nil && !c.spec.SharedCgroup {
			c.spec.Cgroup.Remove()
		}
		return nil, err
	}
	p := &Process{spec: c.spec, cmd: c.cmd, pid: c.cmd.Process.Pid, exited: make(chan struct{})}
	if c.started != nil {
		c.started(p)
	}
	return p, nil
}

// Starter starts the processes of a plugin served in the host's own
// process (a declared plugin: its MCP server program, its commands) as
// the host starts a plugin process: in the plugin's environment,
// confined by its policy, in its cgroup, known to the keeper. The zero
// value starts a Spec as it is.
type Starter struct {
	// Env is the plugin's environment, an allow-list the host built for
	// it (with its policy's variables and secrets): what its programs'
	// environments are made from, never the host's own.
	Env []string
	// Granted are the names of Env the host granted the plugin beyond
	// BaseEnv and LC_* (Granted: OPENTOOL_<PLUGIN>_*, --plugin-env names,
	// its policy's variables and secrets), which its programs inherit
	// (Allow.Names).
	Granted []string
	// Stderr receives what the plugin's programs write to stderr (the
	// host logs it under the plugin's name); nil discards it.
	Stderr io.Writer
	// Confine completes a Spec before it starts: the sandbox launcher in
	// front of the program (Wrap), the user, the cgroup. nil leaves it.
	// Errors: why the process may not start (it does not).
	Confine func(*Spec) error
	// Started is told of each process once it started (the keeper's
	// tracking of its process group). nil: nobody.
	Started func(*Process)
	// Refused is told of each start refused because a file of
	// Spec.Verify was rewritten (the host logs its Detail under the
	// plugin's name). nil: nobody.
	Refused func(*ChangedError)
}

// Command prepares spec as s says (Confine). Errors: Confine's, New's.
func (s *Starter) Command(spec Spec) (*Cmd, error) {
	if s != nil && s.Confine != nil {
		if err := s.Confine(&spec); err != nil {
			return nil, err
		}
	}
	c, err := New(spec)
	if err != nil {
		return nil, err
	}
	if s != nil {
		c.started, c.refused = s.Started, s.Refused
	}
	return c, nil
}

// Process is a started process.
type Process struct {
	spec     Spec
	cmd      *exec.Cmd
	pid      int
	exited   chan struct{}
	waitOnce sync.Once
	waitErr  error
}

// Pid is the process id (and, unless Spec.SharedGroup, its process
// group id).
func (p *Process) Pid() int { return p.pid }

// Wait waits for the process to exit and returns exec.Cmd.Wait's error
// (an *exec.ExitError for a non-zero status). It then kills what is left
// of the process group (the process's children; not with SharedGroup)
// and removes the cgroup. Safe to call from several goroutines; every
// call returns the same error.
func (p *Process) Wait() error {
	p.waitOnce.Do(func() {
		p.waitErr = p.cmd.Wait()
		p.killGroup()
		if p.spec.Cgroup != nil && !p.spec.SharedCgroup {
			p.spec.Cgroup.Remove() // what left the process group dies too
		}
		close(p.exited)
	})
	<-p.exited
	return p.waitErr
}

// Exited is closed once Wait has returned.
func (p *Process) Exited() <-chan struct{} { return p.exited }

// Status is how the process ended as the OS reported it ("exit status
// 0", "exit status 3", "signal: killed"), "" while it has not been waited
// for.
func (p *Process) Status() string {
	select {
	case <-p.exited:
	default:
		return ""
	}
	var ee *exec.ExitError
	switch {
	case p.waitErr == nil:
		return "exit status 0"
	case errors.As(p.waitErr, &ee):
		return ee.ProcessState.String()
	}
	return p.waitErr.Error()
}

// Kill SIGKILLs the process, its process group (unless SharedGroup) and
// its cgroup (when it has one). It does not wait. Errors: none once the
// process is gone.
func (p *Process) Kill() error {
	p.killGroup()
	if p.spec.Cgroup != nil && !p.spec.SharedCgroup {
		p.spec.Cgroup.Kill()
	}
	err := p.cmd.Process.Kill()
	if errors.Is(err, os.ErrProcessDone) {
		return nil
	}
	return err
}

// Terminate stops the process as the MCP stdio transport's shutdown
// asks: wait up to grace for it to exit by itself (the caller has closed
// its stdin), then SIGTERM (its group, unless SharedGroup), wait up to
// grace again, then Kill. It returns Wait's error; a process still not
// gone grace after the SIGKILL gives an error saying so.
func (p *Process) Terminate(grace time.Duration) error {
	go func() { _ = p.Wait() }()
	wait := func() bool {
		t := time.NewTimer(grace)
		defer t.Stop()
		select {
		case <-p.exited:
			return true
		case <-t.C:
			return false
		}
	}
	if wait() {
		return p.waitErr
	}
	p.signal(syscall.SIGTERM)
	if wait() {
		return p.waitErr
	}
	_ = p.Kill()
	if wait() {
		return p.waitErr
	}
	return fmt.Errorf("launcher: process %d did not exit after SIGKILL", p.pid)
}

// signal sends sig to the process group, or to the process alone with
// SharedGroup.
func (p *Process) signal(sig syscall.Signal) {
	if p.spec.SharedGroup {
		_ = p.cmd.Process.Signal(sig)
		return
	}
	if p.pid > 0 {
		_ = syscall.Kill(-p.pid, sig)
	}
}

// killGroup SIGKILLs the process group (errors, such as the group being
// gone, are ignored); nothing with SharedGroup.
func (p *Process) killGroup() {
	if !p.spec.SharedGroup && p.pid > 0 {
		_ = syscall.Kill(-p.pid, syscall.SIGKILL)
	}
}
