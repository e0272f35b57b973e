package mcpadapter

import (
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/opentool-host/opentool-host/internal/decl"
)

// transport is the MCP transport of the declared server: the command over
// stdio, or the URL over streamable HTTP with the declared headers.
// cmd is the server's process, nil for a URL.
func transport(l decl.Launch) (t mcp.Transport, cmd *exec.Cmd, err error) {
	if l.Server.URL != "" {
		return &mcp.StreamableClientTransport{Endpoint: l.Server.URL, HTTPClient: &http.Client{Transport: headers(l.Server.Headers)}}, nil, nil
	}
	if cmd, err = command(l); err != nil {
		return nil, nil, err
	}
	return &mcp.CommandTransport{Command: cmd}, cmd, nil
}

// command is the server's process: the declared command (a bare name is
// looked up in PATH, a relative path with a slash is relative to the
// declaration's folder) in Cwd (default that folder), with the adapter's
// environment minus the host's handshake variables, plus the declared
// env. It stays in the adapter's process group, which the host kills, and
// gets a parent-death signal (procattr_*.go). Its stderr is the
// adapter's, which the host logs under the plugin's name.
func command(l decl.Launch) (*exec.Cmd, error) {
	path := l.Server.Command
	if strings.Contains(path, "/") && !filepath.IsAbs(path) {
		path = filepath.Join(l.Dir, path)
	}
	if !strings.Contains(path, "/") {
		p, err := exec.LookPath(path)
		if err != nil {
			return nil, err
		}
		path = p
	}
	cmd := exec.Command(path, l.Server.Args...)
	cmd.Dir = l.Dir
	if l.Server.Cwd != "" {
		cmd.Dir = l.Server.Cwd
		if !filepath.IsAbs(cmd.Dir) {
			cmd.Dir = filepath.Join(l.Dir, cmd.Dir)
		}
	}
	cmd.Env = serverEnv(os.Environ(), l.Server.Env)
	cmd.Stderr = os.Stderr
	setProcAttr(cmd)
	return cmd, nil
}

// serverEnv is environ without the host-to-adapter variables (the
// launch, the go-plugin handshake) plus env.
func serverEnv(environ []string, env map[string]string) []string {
	out := make([]string, 0, len(environ)+len(env))
	for _, kv := range environ {
		k, _, _ := strings.Cut(kv, "=")
		if k == decl.EnvLaunch || k == "OPENTOOL_PLUGIN" || strings.HasPrefix(k, "PLUGIN_") {
			continue
		}
		if _, ok := env[k]; ok {
			continue
		}
		out = append(out, kv)
	}
	for k, v := range env {
		out = append(out, k+"="+v)
	}
	return out
}

// headers is an http.RoundTripper that adds the declared headers.
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
