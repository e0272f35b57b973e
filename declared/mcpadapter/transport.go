package mcpadapter

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/opentool-host/opentool-host/internal/wire"
	"github.com/opentool-host/opentool-host/process/launcher"
	"github.com/opentool-host/opentool-host/protocol/decl"
	"github.com/opentool-host/opentool-host/protocol/mcpmethod"
)

// transport is the MCP transport of the declared server: the command
// over stdio (MCP "Transports", stdio), or the URL with the declared
// headers and OAuth client oc (remoteTransport), telling lost when the
// server cannot be reached (reach). proc is the command's process, nil
// for a URL. Errors: oc's, the command's.
func transport(l decl.Launch, o Options, lost func(error), oc oauthClient) (t mcp.Transport, proc *process, err error) {
	if l.Server.URL != "" {
		if oc.err != nil {
			return nil, nil, oc.err
		}
		return remoteTransport(l.Server, lost, oc.h), nil, nil
	}
	spec, err := command(l, o.Starter.Env, o.Starter.Granted, o)
	if err != nil {
		return nil, nil, err
	}
	cmd, err := o.Starter.Command(spec)
	if err != nil {
		return nil, nil, err
	}
	proc = &process{cmd: cmd, grace: o.TerminateGrace, started: make(chan struct{}), ended: make(chan struct{})}
	return proc, proc, nil
}

// command is the server's launcher.Spec: the declared command line as
// decl.Launch.Exec makes it (the program resolved with the server's PATH,
// the declared one, else the plugin's; with a lock, the verified copies
// of the program and of the files its arguments name) in Cwd (relative to
// the declaration's folder; default that folder), with serverEnv's
// environment (from environ, the plugin's) and stderr to
// o.Starter.Stderr (its copy bounded by o.TerminateGrace after the exit).
// It leads a process group of its own and gets the launcher's
// parent-death signal; o.Starter confines it.
func command(l decl.Launch, environ, granted []string, o Options) (launcher.Spec, error) {
	env := serverEnv(environ, granted, l.Server.Env)
	e, err := l.Exec(append([]string{l.Server.Command}, l.Server.Args...), l.Server.Cwd, launcher.Lookup(env, "PATH"))
	if err != nil {
		return launcher.Spec{}, err
	}
	return launcher.Spec{
		Path: e.Path, Arg0: e.Arg0, Args: e.Args, Dir: decl.WorkDir(l.Dir, l.Server.Cwd), Env: env, Verify: e.Verify,
		Stderr: o.Starter.Stderr,
		// A grandchild holding stderr open must not keep Wait (and so the
		// session's Close) from returning once the server has exited.
		WaitDelay: o.TerminateGrace,
	}, nil
}

// serverEnv is the launcher's allow-list of environ (the plugin's
// environment, launcher.Starter.Env): launcher.BaseEnv, LC_* and the
// names the host granted the plugin (launcher.Starter.Granted); then the
// declared env, whose names win, appended in name order.
func serverEnv(environ, granted []string, env map[string]string) []string {
	kept := launcher.Env(environ, launcher.Allow{Names: granted})
	out := make([]string, 0, len(kept)+len(env))
	for _, kv := range kept {
		k, _, _ := strings.Cut(kv, "=")
		if _, declared := env[k]; !declared {
			out = append(out, kv)
		}
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

// process is a command server's process: the mcp.Transport that starts
// it (over stdio, newline-delimited JSON) and what the adapter needs to
// know of it: when it started, and how it ended.
type process struct {
	cmd     *launcher.Cmd
	proc    *launcher.Process // set before started closes
	grace   time.Duration     // Options.TerminateGrace
	started chan struct{}     // closed once the process runs
	ended   chan struct{}     // closed once the connection's Close waited for it
	waitErr error             // the process's Wait error; set before ended closes
	once    sync.Once
	// tap, when set, sees each message the server sends as the SDK reads
	// it, and takes the ones it reports true for (relay.tap).
	tap func(jsonrpc.Message) bool
}

// pid is the process id once started, else 0. Nil-safe.
func (p *process) pid() int {
	if p == nil || !p.hasStarted() {
		return 0
	}
	return p.proc.Pid()
}

// Connect implements mcp.Transport: it starts the process.
func (p *process) Connect(ctx context.Context) (mcp.Connection, error) {
	stdout, err := p.cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	stdin, err := p.cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	if p.proc, err = p.cmd.Start(); err != nil {
		return nil, err
	}
	close(p.started)
	// The connection is closed by closing stdin, not stdout (MCP
	// "Transports", stdio shutdown): stopper does that, then stops it.
	// A line longer than maxLine ends the session: the host never
	// buffers more of one message.
	conn, err := (&mcp.IOTransport{Reader: outputOf(stdout), Writer: &stopper{WriteCloser: stdin, p: p}, MaxLineLength: maxLine}).Connect(ctx)
	if err != nil {
		return nil, err
	}
	if p.tap != nil {
		conn = &tapConn{Connection: conn, tap: p.tap}
	}
	return noteConn(ctx, newRawConn(conn)), nil
}

// serverOutput is a command server's stdout as its connection reads it.
// Its Close does nothing: the connection is closed by closing stdin (MCP
// "Transports", stdio shutdown; stopper). It keeps the pipe's
// SetReadDeadline, with which the SDK (patches/go-sdk 0005) reads each
// message on the goroutine reading the connection, with no goroutine
// handing it over, and ends a read in progress when the connection
// closes.
type serverOutput struct{ *os.File }

// Close implements io.Closer: it does nothing.
func (serverOutput) Close() error { return nil }

// outputOf is stdout as the connection reads it: a serverOutput for an
// *os.File (exec's pipe), else stdout with a Close that does nothing.
func outputOf(stdout io.ReadCloser) io.ReadCloser {
	if f, ok := stdout.(*os.File); ok {
		return serverOutput{f}
	}
	return io.NopCloser(stdout)
}

// maxLine is the longest line a command server may send, in bytes: one
// message of the plugin transport (wire.MaxMessageSize). The SDK's
// reader holds no more of one message (mcp.IOTransport.MaxLineLength):
// past it the session ends, and the server with it.
const maxLine = wire.MaxMessageSize

// tapConn hands each message read to tap before the SDK sees it, and
// drops those tap takes. The SDK handles the responses to its requests
// as it reads them but the notifications in a goroutine of their own, so
// a call's result could overtake the server's last progress or log
// messages for it; read here, they reach the caller first, in the order
// the server sent them.
type tapConn struct {
	mcp.Connection
	tap func(jsonrpc.Message) bool
}

// Read implements mcp.Connection.
func (c *tapConn) Read(ctx context.Context) (jsonrpc.Message, error) {
	for {
		msg, err := c.Connection.Read(ctx)
		if err != nil || !c.tap(msg) {
			return msg, err
		}
	}
}

// kill kills a started process with its process group and cgroup.
// Nil-safe.
func (p *process) kill() {
	if p != nil && p.hasStarted() {
		_ = p.proc.Kill()
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

// endedWithin reports whether the process has been waited for, waiting
// up to d.
func (p *process) endedWithin(d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-p.ended:
		return true
	case <-t.C:
		return false
	}
}

// status is how the process ended, as the OS reported it ("exit status
// 3", "signal: killed"), or why that is unknown.
func (p *process) status() string {
	st := "status unknown: not waited for"
	switch {
	case !p.hasEnded():
	case p.proc.Status() != "":
		st = p.proc.Status()
	default:
		st = "status unknown: " + p.waitErr.Error()
	}
	return st
}

// stopper is the server's stdin; closing it shuts the server down as MCP
// "Transports" (stdio) asks (launcher.Process.Terminate: the server gets
// grace to exit, then SIGTERM, then SIGKILL) and records how it ended.
type stopper struct {
	io.WriteCloser
	p *process
}

// Close implements io.Closer.
func (s *stopper) Close() error {
	_ = s.WriteCloser.Close()
	s.p.once.Do(func() {
		s.p.waitErr = s.p.proc.Terminate(s.p.grace)
		close(s.p.ended)
	})
	<-s.p.ended
	var ee *exec.ExitError
	if errors.As(s.p.waitErr, &ee) {
		return nil // the server's status is status's, not a transport error
	}
	return s.p.waitErr
}

// remoteTransport is the transport of a server declared by URL, with its
// headers: the HTTP+SSE transport of MCP 2024-11-05
// (mcp.SSEClientTransport) for "type": "sse"; else streamable HTTP, as a
// *remote that knows its fallback (sseFallback), with OAuth handler h
// (nil: none; the SDK then asks it for a token on every request and to
// authorize on a 401 or 403, MCP "Authorization"). Every request goes
// through reach, which tells lost when the server cannot be reached.
func remoteTransport(s decl.MCPServer, lost func(error), h auth.OAuthHandler) mcp.Transport {
	rt := reach{next: headers(s.Headers), lost: lost}
	sse := &sseTransport{SSEClientTransport: &mcp.SSEClientTransport{Endpoint: s.URL, HTTPClient: &http.Client{Transport: rt}}}
	if s.Transport == decl.TransportSSE {
		return sse
	}
	probe := &firstPOST{next: rawResponses{next: rt}}
	return &remote{
		Transport: &mcp.StreamableClientTransport{Endpoint: s.URL, HTTPClient: &http.Client{Transport: probe}, OAuthHandler: h},
		sse:       sse,
		probe:     probe,
	}
}

// remote is the streamable-HTTP transport of a server declared by URL
// without "type": "sse", and the SSE transport to try when it is an
// older server.
type remote struct {
	mcp.Transport
	sse   mcp.Transport
	probe *firstPOST
}

// sseFallback returns the transport to try after a connection over t
// failed with err: the SSE transport of the same URL when t is a *remote
// whose first POST was answered with a 4xx status, as an HTTP+SSE server
// of MCP 2024-11-05 answers it (MCP "Transports", Backwards
// Compatibility: "If it fails with an HTTP 4xx status code (e.g., 405
// Method Not Allowed or 404 Not Found)", issue a GET and expect an
// endpoint event), and not with a JSON-RPC error in its body, which only
// a streamable-HTTP server sends (one refusing the revision asked, a
// 2026-07-28 server's 400: revisionRefused); nil otherwise, and for a
// 401 or 403, the refusal of a server that needs authorization (MCP
// "Authorization"; authError says so).
func sseFallback(t mcp.Transport, err error) mcp.Transport {
	r, ok := t.(*remote)
	if !ok || err == nil || errors.As(err, new(*jsonrpc.Error)) {
		return nil
	}
	if code := r.probe.code.Load(); code >= 400 && code < 500 && !refusedAuth(code) {
		return r.sse
	}
	return nil
}

// sseTransport is mcp.SSEClientTransport whose event stream outlives the
// context of Connect. The SDK's transport opens its GET stream with
// Connect's context, which for the adapter is the connection attempt's
// (bounded by Options.InitTimeout and ended once the session is up): the
// stream would end with it. Here that context bounds Connect only; the
// stream ends when the connection is closed.
type sseTransport struct {
	*mcp.SSEClientTransport
}

// Connect implements mcp.Transport.
func (t *sseTransport) Connect(ctx context.Context) (mcp.Connection, error) {
	lctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	stop := context.AfterFunc(ctx, cancel) // ctx ends during Connect: give up the GET
	conn, err := t.SSEClientTransport.Connect(lctx)
	if !stop() {
		err = errors.Join(ctx.Err(), err)
		if conn != nil {
			_ = conn.Close()
		}
	}
	if err != nil {
		cancel()
		return nil, err
	}
	return noteConn(ctx, newRawConn(&sseConn{Connection: conn, cancel: cancel})), nil
}

// sseConn is a connection of sseTransport: closing it ends its stream.
type sseConn struct {
	mcp.Connection
	cancel context.CancelFunc
}

// Close implements mcp.Connection.
func (c *sseConn) Close() error {
	err := c.Connection.Close()
	c.cancel()
	return err
}

// firstPOST is an http.RoundTripper that records the status of the
// first response to a POST.
type firstPOST struct {
	next http.RoundTripper
	code atomic.Int32
}

// RoundTrip implements http.RoundTripper.
func (f *firstPOST) RoundTrip(r *http.Request) (*http.Response, error) {
	resp, err := f.next.RoundTrip(r)
	if err == nil && r.Method == http.MethodPost {
		f.code.CompareAndSwap(0, int32(resp.StatusCode))
	}
	return resp, err
}

// headers is an http.RoundTripper adding the declared headers to every
// request, the routing headers of the Tasks extension to a tasks/*
// request (taskRoute), and to a POST without them the standard headers a
// client sends (standardHeaders).
type headers map[string]string

// RoundTrip implements http.RoundTripper.
func (h headers) RoundTrip(r *http.Request) (*http.Response, error) {
	route, routed := r.Context().Value(routeKey{}).(taskRoute)
	std := standardHeaders(r)
	if len(h) > 0 || routed || len(std) > 0 {
		r = r.Clone(r.Context())
		for k, v := range std {
			r.Header.Set(k, v)
		}
		for k, v := range h {
			r.Header.Set(k, v)
		}
		if routed {
			r.Header.Set("Mcp-Method", route.method)
			r.Header.Set("Mcp-Name", route.taskID)
		}
	}
	return http.DefaultTransport.RoundTrip(r)
}

// standardHeaders is what r, a POST of a JSON-RPC request or
// notification that has no Mcp-Method header, lacks of the standard
// headers of SEP-2243 (MCP 2026-07-28, "Transports", Streamable HTTP:
// Standard Headers): Mcp-Method, the message's method; Mcp-Name, the
// name of a tools/call or prompts/get, the uri of a resources/read. The
// SDK sets them itself in sessions of 2026-07-28 and later (and then
// nothing is added); a server of an earlier revision ignores them, and
// one of 2026-07-28 asks for them on every POST, initialize included. A
// value that is not printable ASCII is left out (the SDK sends such a
// name as it is, which no HTTP request may carry). Nil for any other
// request, or a body that is not such a message.
func standardHeaders(r *http.Request) map[string]string {
	if r.Method != http.MethodPost || r.GetBody == nil || r.Header.Get("Mcp-Method") != "" {
		return nil
	}
	body, err := r.GetBody()
	if err != nil {
		return nil
	}
	defer body.Close()
	var msg struct {
		Method string `json:"method"`
		Params struct {
			Name string `json:"name"`
			URI  string `json:"uri"`
		} `json:"params"`
	}
	if json.NewDecoder(body).Decode(&msg) != nil || !headerSafe(msg.Method) || msg.Method == "" {
		return nil
	}
	std := map[string]string{"Mcp-Method": msg.Method}
	name := ""
	switch msg.Method {
	case mcpmethod.ToolsCall, mcpmethod.PromptsGet:
		name = msg.Params.Name
	case mcpmethod.ResourcesRead:
		name = msg.Params.URI
	}
	if name != "" && headerSafe(name) {
		std["Mcp-Name"] = name
	}
	return std
}

// headerSafe reports whether s is printable ASCII without leading or
// trailing white space: a header value sent as it is (SEP-2243).
func headerSafe(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < 0x21 || s[i] > 0x7e {
			if s[i] != ' ' || i == 0 || i == len(s)-1 {
				return false
			}
		}
	}
	return true
}

// reach is an http.RoundTripper that tells lost when the server cannot
// be reached: a request whose connection cannot be made (a dial error:
// refused, no route, DNS), or a response stream broken by an error other
// than its end after which a new connection cannot be made within
// probeTimeout either (the server went away; a stream the server merely
// closed is the SDK's to resume, SEP-1699). Requests given up by their
// context tell nothing.
type reach struct {
	next http.RoundTripper
	lost func(error)
}

// probeTimeout bounds the connection reach tries after a broken stream.
const probeTimeout = time.Second

// RoundTrip implements http.RoundTripper.
func (t reach) RoundTrip(r *http.Request) (*http.Response, error) {
	resp, err := t.next.RoundTrip(r)
	var oe *net.OpError
	switch {
	case err != nil && r.Context().Err() == nil && errors.As(err, &oe) && oe.Op == "dial":
		t.lost(err)
	case err == nil:
		resp.Body = &watchedBody{ReadCloser: resp.Body, ctx: r.Context(), addr: hostPort(r.URL), lost: t.lost}
	}
	return resp, err
}

// hostPort is u's host:port, the scheme's port when it names none.
func hostPort(u *url.URL) string {
	if u.Port() != "" {
		return u.Host
	}
	port := "80"
	if u.Scheme == "https" {
		port = "443"
	}
	return net.JoinHostPort(u.Hostname(), port)
}

// watchedBody is a response body of reach: a read error other than the
// body's end, while neither the request's context ended nor the body
// was closed, makes it try a new connection to addr, and tell lost when
// that fails too.
type watchedBody struct {
	io.ReadCloser
	ctx    context.Context
	addr   string
	lost   func(error)
	closed atomic.Bool
	probed atomic.Bool
}

// Read implements io.Reader.
func (b *watchedBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	if err != nil && err != io.EOF && b.ctx.Err() == nil && !b.closed.Load() && b.probed.CompareAndSwap(false, true) {
		if derr := probe(b.ctx, b.addr); derr != nil {
			b.lost(fmt.Errorf("%v; a new connection: %w", err, derr))
		}
	}
	return n, err
}

// probe makes a TCP connection to addr (host:port) and closes it, within
// probeTimeout; its error says the server cannot be reached.
func probe(ctx context.Context, addr string) error {
	c, err := (&net.Dialer{Timeout: probeTimeout}).DialContext(ctx, "tcp", addr)
	if err != nil {
		return err
	}
	return c.Close()
}

// Close implements io.Closer.
func (b *watchedBody) Close() error {
	b.closed.Store(true)
	return b.ReadCloser.Close()
}
