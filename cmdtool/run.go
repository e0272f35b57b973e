package cmdtool

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/opentool-host/opentool-host/internal/decl"
	"github.com/opentool-host/opentool-host/pluginsdk"
)

// baseEnv are the adapter's variables every command gets (beside LC_*
// and the declared names).
var baseEnv = []string{"PATH", "HOME", "LANG", "TZ", "TMPDIR"}

// stderrTail is how much of stderr a failed call's message carries, in
// bytes.
const stderrTail = 2048

// run runs argv for c with stdin and turns its outcome into the result.
func run(ctx context.Context, dir string, pinned map[string]string, c *decl.Command, argv []string, stdin string) ([]byte, error) {
	timeout := time.Duration(orDefault(c.TimeoutMS, decl.DefaultTimeoutMS)) * time.Millisecond
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	limit := int64(orDefault(int(c.MaxOutputBytes), decl.DefaultMaxOutputBytes))
	over := make(chan struct{})
	var once sync.Once
	overflow := func() { once.Do(func() { close(over) }) }
	stdout, stderr := &capped{max: limit, over: overflow}, &capped{max: limit, over: overflow}

	cmd, err := command(dir, pinned, c, argv)
	if err != nil {
		return nil, pluginsdk.ToolFailure("%v", err)
	}
	cmd.Stdin, cmd.Stdout, cmd.Stderr = strings.NewReader(stdin), stdout, stderr
	cmd.WaitDelay = time.Second // pipes held by an escaped child do not hold the call
	if err := cmd.Start(); err != nil {
		return nil, pluginsdk.ToolFailure("start %s: %v", argv[0], err)
	}
	pid := cmd.Process.Pid
	done := make(chan struct{})
	go func() {
		select {
		case <-ctx.Done():
		case <-over:
		case <-done:
			return
		}
		killGroup(pid)
	}()
	err = cmd.Wait()
	close(done)
	killGroup(pid) // children the command left behind die with it
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

// command is the exec.Cmd of argv: the program resolved (decl.Program,
// in the adapter's PATH), in c's working directory (decl.WorkDir), with
// the allowed environment, in a process group of its own with a
// parent-death signal (procattr_*.go). With a lock (pinned), a program
// whose bytes are not the pinned ones is refused, naming its path.
func command(dir string, pinned map[string]string, c *decl.Command, argv []string) (*exec.Cmd, error) {
	prog, err := decl.Program(dir, argv[0], os.Getenv("PATH"))
	if err != nil {
		return nil, err
	}
	if err := decl.CheckPinned(pinned, prog); err != nil {
		return nil, err
	}
	cmd := exec.Command(prog, argv[1:]...)
	cmd.Dir = decl.WorkDir(dir, c.Cwd)
	// The declared names, and the secrets the plugin's policy grants
	// (named by the host in EnvSecretNames).
	cmd.Env = allowedEnv(os.Environ(), slices.Concat(c.Env, strings.Split(os.Getenv(decl.EnvSecretNames), ",")))
	setProcAttr(cmd)
	return cmd, nil
}

// allowedEnv keeps baseEnv, LC_* and the names in extra (the declared
// env names and the secrets the policy grants).
func allowedEnv(environ, extra []string) []string {
	var out []string
	for _, kv := range environ {
		k, _, _ := strings.Cut(kv, "=")
		if k != decl.EnvLaunch && k != decl.EnvSecretNames && k != "" && (slices.Contains(baseEnv, k) || slices.Contains(extra, k) || strings.HasPrefix(k, "LC_")) {
			out = append(out, kv)
		}
	}
	return out
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
