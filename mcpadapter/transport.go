package mcpadapter

import (
	"context"
	"errors"
	"net/http"
	"os"
	"os/exec"
	"sort"
	"strings"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/opentool-host/opentool-host/internal/decl"
	"github.com/opentool-host/opentool-host/internal/wire"
)

// transport is the MCP transport of the declared server: the command
// over stdio (MCP "Transports", stdio), or the URL over streamable HTTP
// with the declared headers. proc is the command's process, nil for a
// URL.
func transport(l decl.Launch, o Options) (t mcp.Transport, proc *process, err error) {
	if l.Server.URL != "" {
		return &mcp.StreamableClientTransport{Endpoint: l.Server.URL, HTTPClient: &http.Client{Transport: headers(l.Server.Headers)}}, nil, nil
	}
	cmd, err := command(l, os.Environ(), o)
	if err != nil {
		return nil, nil, err
	}
	proc = &process{cmd: cmd, started: make(chan struct{}), ended: make(chan struct{})}
	return &commandTransport{inner: mcp.CommandTransport{Command: cmd, TerminateDuration: o.TerminateGrace}, proc: proc}, proc, nil
}

// command is the server's process: the declared command (decl.Program:
// the server's PATH is the declared one, else the adapter's)
// in Cwd (relative to the declaration's folder; default that folder),
// with serverEnv's environment and stderr to o.Stderr (its copy bounded
// by o.TerminateGrace after the exit). It stays in the
// adapter's process group, which the host kills as a whole, and gets a
// parent-death signal (procattr_*.go).
func command(l decl.Launch, environ []string, o Options) (*exec.Cmd, error) {
	env := serverEnv(environ, l.Server.Env)
	path, err := decl.Program(l.Dir, l.Server.Command, lookupEnv(env, "PATH"))
	if err != nil {
		return nil, err
	}
	if err := decl.CheckPinned(l.Pinned, path); err != nil {
		return nil, err
	}
	cmd := exec.Command(path, l.Server.Args...)
	cmd.Dir = decl.WorkDir(l.Dir, l.Server.Cwd)
	cmd.Env = env
	cmd.Stderr = o.Stderr
	// A grandchild holding stderr open must not keep Wait (and so the
	// session's Close) from returning once the server has exited.
	cmd.WaitDelay = o.TerminateGrace
	setProcAttr(cmd)
	return cmd, nil
}

// serverEnv is environ without the host-to-adapter variables (the
// launch, go-plugin's PLUGIN_* and the magic cookie) plus env, whose
// names win; env's entries are appended in name order.
func serverEnv(environ []string, env map[string]string) []string {
	out := make([]string, 0, len(environ)+len(env))
	for _, kv := range environ {
		k, _, _ := strings.Cut(kv, "=")
		if k == decl.EnvLaunch || k == wire.Handshake.MagicCookieKey || strings.HasPrefix(k, "PLUGIN_") {
			continue
		}
		if _, ok := env[k]; ok {
			continue
		}
		out = append(out, kv)
	}
	keys := make([]string, 0, len(env))
	for k := range env {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		out = append(out, k+"="+env[k])
	}
	return out
}

// lookupEnv is the value of k in env (KEY=VALUE entries; the last wins).
func lookupEnv(env []string, k string) string {
	v := ""
	for _, kv := range env {
		if key, val, ok := strings.Cut(kv, "="); ok && key == k {
			v = val
		}
	}
	return v
}

// process is a command server's process as the adapter sees it through
// mcp.CommandTransport, which starts it and waits for it: when it
// started, and how it ended.
type process struct {
	cmd     *exec.Cmd
	started chan struct{} // closed once cmd.Process is set
	ended   chan struct{} // closed once the connection's Close waited for it
	waitErr error         // cmd.Wait's error; set before ended closes
	once    sync.Once
}

// kill kills a started process (not its children: they are in the
// adapter's process group, which the host kills). Nil-safe.
func (p *process) kill() {
	if p != nil && p.hasStarted() {
		_ = p.cmd.Process.Kill()
	}
}

// hasStarted reports whether the process was started; true for nil (a
// URL: nothing to start).
func (p *process) hasStarted() bool {
	if p == nil {
		return true
	}
	select {
	case <-p.started:
		return true
	default:
		return false
	}
}

// hasEnded reports whether the process has been waited for; false for
// nil.
func (p *process) hasEnded() bool {
	if p == nil {
		return false
	}
	select {
	case <-p.ended:
		return true
	default:
		return false
	}
}

// status is how the process ended, as the OS reported it ("exit status
// 3", "signal: killed"), or why that is unknown.
func (p *process) status() string {
	if !p.hasEnded() {
		return "status unknown: not waited for"
	}
	var ee *exec.ExitError
	switch {
	case p.waitErr == nil:
		return "exit status 0"
	case errors.As(p.waitErr, &ee):
		return ee.ProcessState.String()
	}
	return "status unknown: " + p.waitErr.Error()
}

// setEnded records cmd.Wait's error (the first Close's) and closes ended.
func (p *process) setEnded(err error) {
	p.once.Do(func() {
		p.waitErr = err
		close(p.ended)
	})
}

// commandTransport is mcp.CommandTransport reporting to proc when the
// process started and how it ended.
type commandTransport struct {
	inner mcp.CommandTransport
	proc  *process
}

// Connect implements mcp.Transport: it starts the process.
func (t *commandTransport) Connect(ctx context.Context) (mcp.Connection, error) {
	c, err := t.inner.Connect(ctx)
	if err != nil {
		return nil, err
	}
	close(t.proc.started)
	return &waitedConn{Connection: c, proc: t.proc}, nil
}

// waitedConn is the stdio connection; its Close (closing stdin, then
// waiting for the process, then SIGTERM, then SIGKILL, as
// mcp.CommandTransport does) records the process's end.
type waitedConn struct {
	mcp.Connection
	proc *process
}

// Close implements mcp.Connection.
func (c *waitedConn) Close() error {
	err := c.Connection.Close()
	c.proc.setEnded(err)
	return err
}

// headers is an http.RoundTripper adding the declared headers to every
// request.
type headers map[string]string

// RoundTrip implements http.RoundTripper.
func (h headers) RoundTrip(r *http.Request) (*http.Response, error) {
	if len(h) > 0 {
		r = r.Clone(r.Context())
		for k, v := range h {
			r.Header.Set(k, v)
		}
	}
	return http.DefaultTransport.RoundTrip(r)
}
