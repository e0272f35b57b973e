package e2e_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/opentool-host/opentool-host/testkit"
)

// sessDeclare declares server name as testkit/plugins/sessionmcp
// with the entry's extra members.
func sessDeclare(t *testing.T, dir, name string, extra map[string]any) {
	t.Helper()
	srv := map[string]any{"command": testkit.Build(t, "./testkit/plugins/sessionmcp")}
	for k, v := range extra {
		srv[k] = v
	}
	b, _ := json.Marshal(map[string]any{"mcpServers": map[string]any{name: srv}})
	if err := os.WriteFile(filepath.Join(dir, name+".mcp.json"), b, 0o644); err != nil {
		t.Fatal(err)
	}
}

// sessClient is one MCP client of the host's /mcp with its own roots,
// capabilities and the log messages it received.
type sessClient struct {
	cs   *mcp.ClientSession
	mu   sync.Mutex
	logs []string
	got  chan string // each log message's data
}

// sessConnect connects a client named name with roots and, when ext is
// set, the capability extension ext.
func sessConnect(t *testing.T, url, name, root, ext string) *sessClient {
	t.Helper()
	c := &sessClient{got: make(chan string, 100)}
	opts := &mcp.ClientOptions{
		LoggingMessageHandler: func(_ context.Context, req *mcp.LoggingMessageRequest) {
			s, _ := req.Params.Data.(string)
			c.mu.Lock()
			c.logs = append(c.logs, s)
			c.mu.Unlock()
			c.got <- s
		},
	}
	if ext != "" {
		opts.Capabilities = &mcp.ClientCapabilities{RootsV2: &mcp.RootCapabilities{ListChanged: true}}
		opts.Capabilities.AddExtension(ext, map[string]any{"mimeTypes": []string{"text/html;profile=mcp-app"}})
	}
	cl := mcp.NewClient(&mcp.Implementation{Name: name, Version: "1"}, opts)
	cl.AddRoots(&mcp.Root{URI: root})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cs, err := cl.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: url + "/mcp"}, &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cs.Close() })
	c.cs = cs
	return c
}

// whoami is what the server's whoami answered c.
type whoami struct {
	PID        int      `json:"pid"`
	Client     string   `json:"client"`
	Extensions []string `json:"extensions"`
	Roots      []string `json:"roots"`
	Level      string   `json:"level"`
}

func (c *sessClient) whoami(t *testing.T) whoami {
	t.Helper()
	out, isErr := msCall(t, c.cs, "whoami", nil)
	var w whoami
	if isErr || json.Unmarshal([]byte(out), &w) != nil {
		t.Fatalf("whoami = %s (isError %v)", out, isErr)
	}
	return w
}

// waitLog waits for log message marker at c.
func (c *sessClient) waitLog(t *testing.T, marker string) {
	t.Helper()
	timeout := time.After(15 * time.Second)
	for {
		select {
		case s := <-c.got:
			if s == marker {
				return
			}
		case <-timeout:
			t.Fatalf("log message %q never arrived", marker)
		}
	}
}

func (c *sessClient) received() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return slices.Clone(c.logs)
}

// TestMCPClientSessionsOwnUpstream: two MCP client sessions through a
// declared MCP server each reach it as themselves (clientInfo,
// capabilities with an extension, roots, log level), log messages sent
// outside calls reach only the session whose server sent them, the bound
// holds by reclaiming the least recently used idle session, DELETE ends the session's server process, and a
// kill of the plugin's server ends the others.
func TestMCPClientSessionsOwnUpstream(t *testing.T) {
	dir := t.TempDir()
	// sharedIdle never: the shared process, killed below, keeps running
	// (unused, it would park once a client has its own).
	sessDeclare(t, dir, "who", map[string]any{"maxSessions": 2, "reclaimIdle": "0s", "sharedIdle": "never"})
	hp := startHostProc(t, dir)
	shared := msServerPID(t, hp.url, hp.cmd.Process.Pid, "who")

	a := sessConnect(t, hp.url, "client-a", "file:///a", "io.modelcontextprotocol/ui")
	b := sessConnect(t, hp.url, "client-b", "file:///b", "")
	ctx := context.Background()
	if err := a.cs.SetLoggingLevel(ctx, &mcp.SetLoggingLevelParams{Level: "debug"}); err != nil {
		t.Fatal(err)
	}
	if err := b.cs.SetLoggingLevel(ctx, &mcp.SetLoggingLevelParams{Level: "info"}); err != nil {
		t.Fatal(err)
	}
	wa, wb := a.whoami(t), b.whoami(t)
	if wa.Client != "client-a" || !slices.Equal(wa.Extensions, []string{"io.modelcontextprotocol/ui"}) || !slices.Equal(wa.Roots, []string{"file:///a"}) || wa.Level != "debug" {
		t.Errorf("client a's server saw %+v", wa)
	}
	if wb.Client != "client-b" || len(wb.Extensions) != 0 || !slices.Equal(wb.Roots, []string{"file:///b"}) || wb.Level != "info" {
		t.Errorf("client b's server saw %+v", wb)
	}
	if wa.PID == wb.PID || wa.PID == shared || wb.PID == shared {
		t.Fatalf("server processes: a %d, b %d, shared %d: want three", wa.PID, wb.PID, shared)
	}
	if w := a.whoami(t); w.PID != wa.PID {
		t.Fatalf("a's second call went to pid %d, first to %d", w.PID, wa.PID)
	}

	// Log messages outside calls: each to its own client only. The host
	// relays one server's messages in order, so b's "b1" would reach a
	// before "a2".
	for _, step := range []struct {
		c      *sessClient
		marker string
	}{{a, "a1"}, {b, "b1"}, {a, "a2"}} {
		if out, isErr := msCall(t, step.c.cs, "emit", map[string]any{"marker": step.marker}); isErr {
			t.Fatalf("emit: %s", out)
		}
		step.c.waitLog(t, step.marker)
	}
	if got := a.received(); slices.Contains(got, "b1") {
		t.Errorf("client a received b's log message: %v", got)
	}
	if got := b.received(); slices.Contains(got, "a1") || slices.Contains(got, "a2") {
		t.Errorf("client b received a's log messages: %v", got)
	}

	// The bound (maxSessions 2): a third session gets the place of the
	// least recently used idle one (b's), whose server process ends.
	c := sessConnect(t, hp.url, "client-c", "file:///c", "")
	wc := c.whoami(t)
	if wc.Client != "client-c" || wc.PID == wa.PID || wc.PID == wb.PID || wc.PID == shared {
		t.Fatalf("c's server saw %+v (a %d, b %d, shared %d)", wc, wa.PID, wb.PID, shared)
	}
	testkit.Eventually(t, 15*time.Second, "b's server process exits when its place is reclaimed", func() bool { return zombieOrGone(wb.PID) })

	// DELETE of a's session ends a's server process.
	if err := a.cs.Close(); err != nil {
		t.Fatal(err)
	}
	testkit.Eventually(t, 15*time.Second, "a's server process exits after DELETE", func() bool { return zombieOrGone(wa.PID) })
	nb := b.whoami(t)
	if nb.Client != "client-b" || nb.PID == wb.PID {
		t.Fatalf("b after its place was reclaimed: %+v (its first server %d)", nb, wb.PID)
	}
	wb = nb

	// The plugin's server killed: the plugin restarts, and the client
	// sessions' own servers are ended with it.
	if err := syscall.Kill(shared, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	testkit.Eventually(t, 15*time.Second, "b's and c's servers end with the plugin", func() bool {
		return zombieOrGone(wb.PID) && zombieOrGone(wc.PID)
	})
	testkit.Eventually(t, 20*time.Second, "who restarted", func() bool {
		pid := pluginPIDs(t, hp.url)["who"]
		return pid != 0 && pid != shared
	})
	if w := b.whoami(t); w.PID == wb.PID || w.Client != "client-b" {
		t.Fatalf("b after the restart: %+v", w)
	}
}

// TestMCPListingSessionsHoldNoServer (issue 32): a client session's
// tools/list shows it its own server session's tools, yet sessions that
// only list do not each hold a server process: four client sessions
// alike (clientInfo, capabilities) list the tools of a server declared
// with maxSessions 2, and one server process besides the shared one
// runs (made for the first, whose list the others are shown), none is
// refused for the limit, and each still gets a session of its own at
// its first call (a third one the place of the least recently used).
func TestMCPListingSessionsHoldNoServer(t *testing.T) {
	dir := t.TempDir()
	// sharedIdle never: the shared process is counted below (unused, it
	// would park once a client has its own).
	sessDeclare(t, dir, "who", map[string]any{"maxSessions": 2, "reclaimIdle": "0s", "sharedIdle": "never"})
	hp := startHostProc(t, dir)
	shared := msServerPID(t, hp.url, hp.cmd.Process.Pid, "who")
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var clients []*sessClient
	for i := range 4 {
		c := sessConnect(t, hp.url, "alike", "file:///same", "")
		res, err := c.cs.ListTools(ctx, nil)
		if err != nil || !slices.ContainsFunc(res.Tools, func(tl *mcp.Tool) bool { return tl.Name == "whoami" }) {
			t.Fatalf("client %d: tools/list: %v %v", i, err, res)
		}
		clients = append(clients, c)
	}
	if kids := msChildren(hp.cmd.Process.Pid); len(kids) != 2 || !slices.Contains(kids, shared) {
		t.Errorf("server processes after four sessions listed: %v (shared %d), want the shared one and one more", kids, shared)
	}
	if strings.Contains(hp.logs.String(), "the client's own list of the server failed") {
		t.Errorf("a listing session was refused its own list:\n%s", hp.logs.String())
	}
	// The first two sessions to call get their own server; a third gets
	// the place of the least recently used idle one.
	a, b := clients[0].whoami(t), clients[1].whoami(t)
	if a.PID == b.PID || a.PID == shared || b.PID == shared {
		t.Errorf("the first two calling sessions' servers: %d and %d (shared %d), want two of their own", a.PID, b.PID, shared)
	}
	if c := clients[2].whoami(t); c.PID == a.PID || c.PID == b.PID || c.PID == shared || c.Client != "alike" {
		t.Errorf("a third calling session: %+v (a %d, b %d, shared %d), want a server of its own", c, a.PID, b.PID, shared)
	}
}

// TestMCPPromptsFromTheClientsOwnSession: a prompts/get of a client
// session that has a session of its own with a per-client server (made at
// its first call) is answered by that session, so the server answers it
// as it knows that client (its clientInfo); one without, by the shared
// session, and none is made for it.
func TestMCPPromptsFromTheClientsOwnSession(t *testing.T) {
	dir := t.TempDir()
	sessDeclare(t, dir, "who", nil)
	hp := startHostProc(t, dir)
	shared := msServerPID(t, hp.url, hp.cmd.Process.Pid, "who")
	prompt := func(c *sessClient) string {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		res, err := c.cs.GetPrompt(ctx, &mcp.GetPromptParams{Name: "whoami"})
		if err != nil || len(res.Messages) != 1 {
			t.Fatalf("prompts/get whoami: %v %+v", err, res)
		}
		tc, _ := res.Messages[0].Content.(*mcp.TextContent)
		if tc == nil {
			t.Fatalf("prompts/get whoami: %+v, want a text message", res.Messages[0])
		}
		return tc.Text
	}

	a := sessConnect(t, hp.url, "client-a", "file:///a", "")
	b := sessConnect(t, hp.url, "client-b", "file:///b", "")
	if w := a.whoami(t); w.Client != "client-a" || w.PID == shared {
		t.Fatalf("client-a's call: %+v (shared pid %d), want its own session", w, shared)
	}
	if got := prompt(a); got != "client-a" {
		t.Errorf("client-a's prompts/get after its call: %q, want client-a (its own session's)", got)
	}
	if got := prompt(b); got == "client-b" || got == "" {
		t.Errorf("client-b's prompts/get before any call: %q, want the shared session's client", got)
	}
	if kids := msChildren(hp.cmd.Process.Pid); len(kids) != 2 {
		t.Errorf("server processes: %v, want the shared one and client-a's (b's prompt made none)", kids)
	}
}

// TestMCPClientStateStaysItsOwn: what a declared server keeps per session
// (mcp-notes' notes, in its process) is its MCP client's alone, though
// the clients declare no capability at all: b does not list the note a
// added. Before, clients without roots, sampling or elicitation were
// served by the shared session, and b listed a's note.
func TestMCPClientStateStaysItsOwn(t *testing.T) {
	dir := t.TempDir()
	msDeclare(t, dir, "notes")
	hp := startHostProc(t, dir)
	plain := &mcp.ClientOptions{Capabilities: &mcp.ClientCapabilities{}}
	a := llConnect(t, &mcp.StreamableClientTransport{Endpoint: hp.url + "/mcp"}, plain)
	b := llConnect(t, &mcp.StreamableClientTransport{Endpoint: hp.url + "/mcp"}, plain)
	if out, isErr := msCall(t, a, "add_note", map[string]any{"title": "a's secret", "body": "for a"}); isErr {
		t.Fatalf("add_note of a: %s", out)
	}
	if out, _ := msCall(t, a, "list_notes", nil); !strings.Contains(out, "a's secret") {
		t.Fatalf("a lists %s; want its note", out)
	}
	if out, isErr := msCall(t, b, "list_notes", nil); isErr || !strings.Contains(out, `"notes"`) || strings.Contains(out, "a's secret") {
		t.Errorf("b lists %s (isError %v); want its own notes, without a's", out, isErr)
	}
}

// TestKeyCallersStateStaysTheirOwn: through /opentool/call (no MCP
// session), what the callers of one API key leave with a per-client
// server (the default) is not the other key's: each key's callers are
// served by an upstream session of that key's own (mcpadapter
// keySession), while two calls of one key share theirs.
func TestKeyCallersStateStaysTheirOwn(t *testing.T) {
	dir := t.TempDir()
	msDeclare(t, dir, "notes")
	const keyA, keyB = "key-a-0123456789abcdef", "key-b-0123456789abcdef"
	hp := startHostProc(t, dir, "--api-key", keyA, "--api-key", keyB)
	call := func(key, fn, params string) string {
		t.Helper()
		st, _, body := httpDo(t, http.MethodPost, hp.url+"/opentool/call", key, `{"jsonrpc":"2.0","method":"`+fn+`","params":`+params+`,"id":1}`)
		if st != http.StatusOK || !strings.Contains(body, `"result"`) {
			t.Fatalf("%s with key %s: %d %s", fn, key[:5], st, body)
		}
		return body
	}
	call(keyA, "add_note", `{"title":"a's secret","body":"for a"}`)
	if out := call(keyA, "list_notes", `{}`); !strings.Contains(out, "a's secret") {
		t.Fatalf("key a lists %s; want its note", out)
	}
	if out := call(keyB, "list_notes", `{}`); !strings.Contains(out, `"notes"`) || strings.Contains(out, "a's secret") {
		t.Errorf("key b lists %s; want its own notes, without a's", out)
	}
}

// TestKeyCallersSessionEndsWithTheKey: the callers of two keys of a keys
// file without an MCP session (/opentool/call) are served by a server
// process each, neither the shared session's; the file reloaded with
// one key's allow changed (its grant revoked), that key's process ends
// while the other's runs on, and the key's next call is served by a new
// one.
func TestKeyCallersSessionEndsWithTheKey(t *testing.T) {
	dir := t.TempDir()
	sessDeclare(t, dir, "who", nil)
	const keyA, keyB = "key-a-0123456789abcdef", "key-b-0123456789abcdef"
	keys := func(allowA string) string {
		return `{"keys":[{"name":"a","key":"` + keyA + `","allow":` + allowA + `},{"name":"b","key":"` + keyB + `","allow":["*"]}]}`
	}
	keysFile := filepath.Join(t.TempDir(), "keys.json")
	if err := os.WriteFile(keysFile, []byte(keys(`["*"]`)), 0o600); err != nil {
		t.Fatal(err)
	}
	hp := startHostProc(t, dir, "--api-keys-file", keysFile)
	shared := pluginPIDs(t, hp.url, keyB)["who"]
	a, b := openToolWhoami(t, hp.url, keyA), openToolWhoami(t, hp.url, keyB)
	if a.PID == b.PID || a.PID == shared || b.PID == shared {
		t.Fatalf("key a served by pid %d, key b by %d, the shared session is %d: want a process per key", a.PID, b.PID, shared)
	}
	if again := openToolWhoami(t, hp.url, keyA); again.PID != a.PID {
		t.Errorf("key a's second call served by pid %d, its first by %d: want its session kept", again.PID, a.PID)
	}
	replaceFile(t, keysFile, keys(`["whoami"]`))
	testkit.Eventually(t, 15*time.Second, "key a's server process to end with its grant", func() bool { return zombieOrGone(a.PID) })
	if !alive(b.PID) {
		t.Errorf("key b's server process %d ended with key a's grant", b.PID)
	}
	if next := openToolWhoami(t, hp.url, keyA); next.PID == a.PID || next.PID == b.PID {
		t.Errorf("key a's call after the reload served by pid %d (before %d, key b's %d): want a new process", next.PID, a.PID, b.PID)
	}
}

// openToolWhoami calls the whoami tool of testkit/plugins/sessionmcp
// over /opentool/call with key.
func openToolWhoami(t *testing.T, url, key string) whoami {
	t.Helper()
	st, _, body := httpDo(t, http.MethodPost, url+"/opentool/call", key, `{"jsonrpc":"2.0","method":"whoami","params":{},"id":1}`)
	var res struct {
		Result struct {
			Text string `json:"text"`
		} `json:"result"`
	}
	var w whoami
	if st != http.StatusOK || json.Unmarshal([]byte(body), &res) != nil || json.Unmarshal([]byte(res.Result.Text), &w) != nil || w.PID == 0 {
		t.Fatalf("whoami with key %s: %d %s", key[:5], st, body)
	}
	return w
}

// TestOneKeyCallersShareTheSharedSession: with one API key in force,
// every caller is one party: its callers without an MCP session are
// served by the shared session, at no server process more.
func TestOneKeyCallersShareTheSharedSession(t *testing.T) {
	dir := t.TempDir()
	sessDeclare(t, dir, "who", nil)
	const key = "only-key-0123456789abcdef"
	hp := startHostProc(t, dir, "--api-key", key)
	shared := pluginPIDs(t, hp.url, key)["who"]
	if w := openToolWhoami(t, hp.url, key); w.PID != shared {
		t.Errorf("the one key's /opentool/call served by pid %d; want the shared session's %d", w.PID, shared)
	}
	if kids := msChildren(hp.cmd.Process.Pid); len(kids) != 1 {
		t.Errorf("server processes %v; want the shared session's alone", kids)
	}
}

// TestKeyCallersReadWhatTheirCallsLeft: with --mcp-stateless (no MCP
// session), a key's resources/read goes to the upstream session its
// calls went to: key a reads the note its add_note stored there (mcp-notes
// --rich: notes://note/ID), while key b, whose calls made no session,
// reads from the shared session, where a's note is not. Before, every
// sessionless read went to the shared session, and a could not read its
// own note.
func TestKeyCallersReadWhatTheirCallsLeft(t *testing.T) {
	dir := t.TempDir()
	msDeclare(t, dir, "notes", "--rich")
	const keyA, keyB = "key-a-0123456789abcdef", "key-b-0123456789abcdef"
	hp := startHostProc(t, dir, "--api-key", keyA, "--api-key", keyB, "--mcp-stateless")
	a, b := connectMCP(t, hp.url, keyA), connectMCP(t, hp.url, keyB)
	res, err := mcpCall(t, a, "add_note", map[string]any{"title": "a's secret"})
	if err != nil || res.IsError {
		t.Fatalf("add_note: %v %v", res, err)
	}
	var note struct {
		ID int `json:"id"`
	}
	raw, _ := json.Marshal(res.StructuredContent)
	if json.Unmarshal(raw, &note) != nil || note.ID == 0 {
		t.Fatalf("add_note returned %s", raw)
	}
	uri := fmt.Sprintf("notes://note/%d", note.ID)
	read := func(cs *mcp.ClientSession) (string, error) {
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		r, err := cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: uri})
		if err != nil {
			return "", err
		}
		out, _ := json.Marshal(r)
		return string(out), nil
	}
	if out, err := read(a); err != nil || !strings.Contains(out, "a's secret") {
		t.Errorf("key a reads %s: %s, %v; want its note", uri, out, err)
	}
	if out, _ := read(b); strings.Contains(out, "a's secret") {
		t.Errorf("key b reads %s: %s; want no note of a's", uri, out)
	}
}
