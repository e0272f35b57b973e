package cmdtool

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os/exec"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/opentool-host/opentool-host/pluginsdk"
	"github.com/opentool-host/opentool-host/process/launcher"
	"github.com/opentool-host/opentool-host/protocol/decl"
)

// stderrTail is how much of stderr a failed call's message carries, in
// bytes.
const stderrTail = 2048

// run runs argv for c with stdin and turns its outcome into the result.
func run(ctx context.Context, l decl.Launch, s *launcher.Starter, c *decl.Command, argv []string, stdin string) ([]byte, error) {
	timeout := time.Duration(orDefault(c.TimeoutMS, decl.DefaultTimeoutMS)) * time.Millisecond
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	limit := int64(orDefault(int(c.MaxOutputBytes), decl.DefaultMaxOutputBytes))
	over := make(chan struct{})
	var once sync.Once
	overflow := func() { once.Do(func() { close(over) }) }
	stdout, stderr := &capped{max: limit, over: overflow}, &capped{max: limit, over: overflow}

	spec, err := command(l, c, argv, s.Env, s.Granted)
	if err != nil {
		return nil, pluginsdk.ToolFailure("%v", err)
	}
	spec.Stdin, spec.Stdout, spec.Stderr = strings.NewReader(stdin), stdout, stderr
	spec.WaitDelay = time.Second // pipes held by an escaped child do not hold the call
	cmd, err := s.Command(spec)
	var proc *launcher.Process
	if err == nil {
		proc, err = cmd.Start()
	}
	if err != nil {
		return nil, pluginsdk.ToolFailure("start %s: %v", argv[0], err)
	}
	go func() {
		select {
		case <-ctx.Done():
		case <-over:
		case <-proc.Exited():
			return
		}
		_ = proc.Kill()
	}()
	// Wait kills the children the command left behind (its process group).
	err = proc.Wait()
	return outcome(ctx, c, argv[0], timeout, limit, err, stdout, stderr, over)
}

// outcome is the result or error of a finished run.
func outcome(ctx context.Context, c *decl.Command, prog string, timeout time.Duration, limit int64, err error, stdout, stderr *capped, over chan struct{}) ([]byte, error) {
	select {
	case <-over:
		return nil, pluginsdk.ToolFailure("%s wrote more than %d bytes; it was killed", prog, limit)
	default:
	}
	if ctx.Err() != nil {
		if errors.Is(ctx.Err(), context.DeadlineExceeded) {
			return nil, pluginsdk.ToolFailure("%s did not finish within %v; it was killed with its children", prog, timeout)
		}
		return nil, ctx.Err()
	}
	code := 0
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		code = ee.ExitCode()
	} else if err != nil {
		return nil, pluginsdk.ToolFailure("%s: %v", prog, err)
	}
	if !okExit(c, code) {
		return nil, pluginsdk.ToolFailure("%s exited with status %d: %s", prog, code, tail(stderr.String()))
	}
	if c.Output == "json" {
		out := bytes.TrimSpace(stdout.buf.Bytes())
		if len(out) == 0 || out[0] != '{' || !json.Valid(out) {
			return nil, pluginsdk.ToolFailure("%s did not print one JSON object", prog)
		}
		return out, nil
	}
	return json.Marshal(map[string]any{"stdout": stdout.String(), "stderr": stderr.String(), "exit_code": code})
}

// command is the launcher.Spec of argv: the command line as l.Exec
// makes it (the program resolved in the plugin's PATH; with a lock, the
// verified copies of the program and of the files its arguments name,
// refused when a file on disk is not the pinned one, naming its path),
// in c's working directory (decl.WorkDir), with the launcher's
// allow-list of environ (the plugin's environment,
// launcher.Starter.Env): the declared names and what the host granted
// the plugin (launcher.Starter.Granted: its policy's variables and
// secrets, ...).
// The launcher gives it a process group of its own and a parent-death
// signal.
func command(l decl.Launch, c *decl.Command, argv, environ, granted []string) (launcher.Spec, error) {
	e, err := l.Exec(argv, c.Cwd, launcher.Lookup(environ, "PATH"))
	if err != nil {
		return launcher.Spec{}, err
	}
	env := launcher.Env(environ, launcher.Allow{Names: slices.Concat(c.Env, granted)})
	return launcher.Spec{Path: e.Path, Arg0: e.Arg0, Args: e.Args, Dir: decl.WorkDir(l.Dir, c.Cwd), Env: env, Verify: e.Verify}, nil
}

// capped is an io.Writer that keeps up to max bytes and calls over once
// past it.
type capped struct {
	mu   sync.Mutex
	buf  bytes.Buffer
	max  int64
	over func()
}

// Write implements io.Writer; past the cap it reports an error (the
// command is then killed).
func (c *capped) Write(p []byte) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if int64(c.buf.Len()+len(p)) > c.max {
		c.over()
		return 0, fmt.Errorf("output larger than %d bytes", c.max)
	}
	return c.buf.Write(p)
}

// String returns what was kept.
func (c *capped) String() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.buf.String()
}

// tail is the end of s, at most stderrTail bytes, trimmed.
func tail(s string) string {
	s = strings.TrimSpace(s)
	if len(s) > stderrTail {
		s = "..." + s[len(s)-stderrTail:]
	}
	if s == "" {
		return "(no stderr)"
	}
	return s
}

// okExit reports whether exit status code is a result for c.
func okExit(c *decl.Command, code int) bool {
	if len(c.OKExitCodes) == 0 {
		return code == 0
	}
	return slices.Contains(c.OKExitCodes, code)
}

// orDefault is v, or def when v is 0.
func orDefault(v, def int) int {
	if v == 0 {
		return def
	}
	return v
}
