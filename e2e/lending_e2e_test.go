package e2e_test

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/opentool-host/opentool-host/testkit"
)

// lendClients connects n MCP clients of /mcp, all alike (one identity:
// clientInfo "lending", no capability), and has each call mcp-notes'
// repeat (readOnlyHint) at once, every call answered with its own text.
func lendClients(t *testing.T, url string, n int) []*mcp.ClientSession {
	t.Helper()
	plain := &mcp.ClientOptions{Capabilities: &mcp.ClientCapabilities{}}
	clients := make([]*mcp.ClientSession, n)
	for i := range clients {
		clients[i] = lendConnect(t, url, plain)
	}
	var wg sync.WaitGroup
	errs := make(chan string, n)
	for i, cs := range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			text := fmt.Sprintf("client %d", i)
			res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "repeat", Arguments: map[string]any{"text": text}})
			switch {
			case err != nil:
				errs <- fmt.Sprintf("%s: %v", text, err)
			case res.IsError || len(res.Content) != 1 || res.Content[0].(*mcp.TextContent).Text != text:
				b, _ := json.Marshal(res)
				errs <- fmt.Sprintf("%s: %s", text, b)
			}
		}()
	}
	wg.Wait()
	close(errs)
	for e := range errs {
		t.Error("repeat of", e)
	}
	return clients
}

// lendDeclare declares mcp-notes as "notes" in dir, per client, with the
// members of extra ("sharedIdle", "reclaimIdle", "lendReads").
func lendDeclare(t *testing.T, dir string, extra map[string]any) {
	t.Helper()
	srv := map[string]any{"command": testkit.Build(t, "./examples/mcp-notes")}
	maps.Copy(srv, extra)
	b, _ := json.Marshal(map[string]any{"mcpServers": map[string]any{"notes": srv}})
	if err := os.WriteFile(filepath.Join(dir, "notes.mcp.json"), b, 0o644); err != nil {
		t.Fatal(err)
	}
}

// lendConnect connects one MCP client named "lending" with opts.
func lendConnect(t *testing.T, url string, opts *mcp.ClientOptions) *mcp.ClientSession {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "lending", Version: "1"}, opts).Connect(ctx, &mcp.StreamableClientTransport{Endpoint: url + "/mcp"}, &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
	if err != nil {
		t.Fatalf("MCP connect: %v", err)
	}
	t.Cleanup(func() { _ = cs.Close() })
	return cs
}

// waitServers waits until the host of hp runs want server processes
// (its keeper aside) and returns them.
func waitServers(t *testing.T, hp *hostProc, want int, why string) []int {
	t.Helper()
	var kids []int
	last := -1
	testkit.Eventually(t, 15*time.Second, fmt.Sprintf("%d server processes (%s); the last count is logged above", want, why), func() bool {
		if kids = msChildren(hp.cmd.Process.Pid); len(kids) != last {
			last = len(kids)
			t.Logf("%d server processes", last)
		}
		return len(kids) == want
	})
	return kids
}

// lendLogged waits until the host of hp logged a line containing what.
func lendLogged(t *testing.T, hp *hostProc, what string) {
	t.Helper()
	testkit.Eventually(t, 15*time.Second, "the host logs "+what, func() bool { return strings.Contains(hp.logs.String(), what) })
}

// TestMCPReadOnlyCallsAreLent (issue 42): clients alike of a per-client
// server (the default) that call a tool the server annotates
// readOnlyHint are lent the shared session: 8 of them, connected and
// calling at once, cost 2 server processes (the shared one and the
// first client's, made to list its identity's tools), not 9. What the
// server keeps stays each client's own: a client that adds a note is
// given a session of its own, and a lent client does not list it; once
// a call of another tool went to the shared session (add_note through
// /opentool/call, no MCP session), no client is lent it any more, so a
// client that only read so far does not list that note either. Without
// lending every client had a process of its own; without the end of
// lending at the shared session's first write, the last client listed
// the note the OpenTool caller added.
func TestMCPReadOnlyCallsAreLent(t *testing.T) {
	dir := t.TempDir()
	lendDeclare(t, dir, map[string]any{"reclaimIdle": "24h"}) // no retirement (TestMCPReadersRetireTheirSessions)
	hp := startHostProc(t, dir)
	clients := lendClients(t, hp.url, 8)
	waitServers(t, hp, 2, "8 clients that read: the shared session and the first client's")
	// Which of the 8 listed first is not known: three more clients alike,
	// lent the shared session, write and read.
	plain := &mcp.ClientOptions{Capabilities: &mcp.ClientCapabilities{}}
	writer, reader, later := lendConnect(t, hp.url, plain), lendConnect(t, hp.url, plain), lendConnect(t, hp.url, plain)
	for _, cs := range append(clients, reader, later) {
		if out, isErr := msCall(t, cs, "list_notes", nil); isErr || out != `{"notes":[]}` {
			t.Fatalf("a client that only read lists %s (isError %v); want no notes", out, isErr)
		}
	}
	waitServers(t, hp, 2, "11 clients that only read")

	if out, isErr := msCall(t, writer, "add_note", map[string]any{"title": "one's secret"}); isErr {
		t.Fatalf("add_note: %s", out)
	}
	if out, _ := msCall(t, writer, "list_notes", nil); !strings.Contains(out, "one's secret") {
		t.Fatalf("the writer lists %s; want its note", out)
	}
	waitServers(t, hp, 3, "a client that wrote has a session of its own")
	if out, isErr := msCall(t, reader, "list_notes", nil); isErr || !strings.Contains(out, `"notes"`) || strings.Contains(out, "one's secret") {
		t.Fatalf("a lent client lists %s (isError %v); want no note of another client", out, isErr)
	}

	st, _, body := httpDo(t, http.MethodPost, hp.url+"/opentool/call", "", `{"jsonrpc":"2.0","method":"add_note","params":{"title":"the shared session's note"},"id":1}`)
	if st != http.StatusOK || !strings.Contains(body, `"result"`) {
		t.Fatalf("add_note over /opentool/call: %d %s", st, body)
	}
	if out, isErr := msCall(t, later, "list_notes", nil); isErr || !strings.Contains(out, `"notes"`) || strings.Contains(out, "shared session's note") {
		t.Errorf("a client that only read lists %s (isError %v) after a write to the shared session; want its own session's notes", out, isErr)
	}
	waitServers(t, hp, 4, "the reader, lent no more, has a session of its own")
	lendLogged(t, hp, "read-only calls of client sessions without a session of their own now go to sessions of their own")
}

// TestMCPLendReadsFalse: "lendReads": false in the declaration gives
// each client a session of its own for every call, read-only ones too:
// 4 clients alike that call repeat cost 5 server processes, until the
// shared session, which no caller used, parks ("sharedIdle").
func TestMCPLendReadsFalse(t *testing.T) {
	dir := t.TempDir()
	lendDeclare(t, dir, map[string]any{"lendReads": false, "sharedIdle": "500ms"})
	hp := startHostProc(t, dir)
	lendClients(t, hp.url, 4)
	waitServers(t, hp, 4, `4 clients with "lendReads": false: one each, the shared session parked`)
}

// TestMCPLentCallAskedIsMadeAgain: a call lent the shared session
// during which the server asks the client something (mcp-notes --rich
// ask: elicitation, sampling, roots; annotated readOnlyHint) is made
// again on the client's own session, so that the answers are that
// client's: its elicitation answer, its sampling model and its roots,
// never the shared session's refusal. Lending then ends (logged).
func TestMCPLentCallAskedIsMadeAgain(t *testing.T) {
	dir := t.TempDir()
	msDeclare(t, dir, "notes", "--rich")
	hp := startHostProc(t, dir)
	opts := &mcp.ClientOptions{
		Capabilities: &mcp.ClientCapabilities{RootsV2: &mcp.RootCapabilities{}, Sampling: &mcp.SamplingCapabilities{},
			Elicitation: &mcp.ElicitationCapabilities{Form: &mcp.FormElicitationCapabilities{}}},
		ElicitationHandler: func(context.Context, *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"answer": "b's answer"}}, nil
		},
		CreateMessageHandler: func(context.Context, *mcp.CreateMessageRequest) (*mcp.CreateMessageResult, error) {
			return &mcp.CreateMessageResult{Model: "b-model", Role: "assistant", Content: &mcp.TextContent{Text: "b's sample"}}, nil
		},
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cl := mcp.NewClient(&mcp.Implementation{Name: "lending", Version: "1"}, opts)
	cl.AddRoots(&mcp.Root{URI: "file:///b-root"})
	b, err := cl.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: hp.url + "/mcp"}, &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	// A client alike lists first (a session of its own, made to list b's
	// identity), so that b has none of its own before its call.
	lister, err := mcp.NewClient(&mcp.Implementation{Name: "lending", Version: "1"}, opts).Connect(ctx, &mcp.StreamableClientTransport{Endpoint: hp.url + "/mcp"}, &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
	if err != nil {
		t.Fatal(err)
	}
	defer lister.Close()
	if _, err := lister.ListTools(ctx, nil); err != nil {
		t.Fatal(err)
	}
	res, err := b.CallTool(ctx, &mcp.CallToolParams{Name: "ask", Arguments: map[string]any{"question": "what?"}})
	if err != nil {
		t.Fatal(err)
	}
	out, _ := json.Marshal(res.StructuredContent)
	if res.IsError || !strings.Contains(string(out), "b's answer") || !strings.Contains(string(out), "b-model") || !strings.Contains(string(out), "file:///b-root") {
		raw, _ := json.Marshal(res)
		t.Errorf("ask of a lent client = %s; want its own answer, model and roots", raw)
	}
	lendLogged(t, hp, "the server sent a request (elicitation/create) during a call lent the shared session")
}

// TestMCPLentCallThatLogsIsMadeAgain: a call lent the shared session
// during which the server sends a log message (mcp-notes --rich steps,
// annotated readOnlyHint) is made again on the client's own session:
// the client gets the progress and the log messages of one run, its
// own session's, at the level it set, and the result.
func TestMCPLentCallThatLogsIsMadeAgain(t *testing.T) {
	dir := t.TempDir()
	msDeclare(t, dir, "notes", "--rich")
	hp := startHostProc(t, dir)
	lendClients(t, hp.url, 1) // the first of its identity: a session of its own, made to list
	var c llCollector
	opts := c.options()
	opts.Capabilities = &mcp.ClientCapabilities{}
	b := lendConnect(t, hp.url, opts)
	ctx := context.Background()
	if err := b.SetLoggingLevel(ctx, &mcp.SetLoggingLevelParams{Level: "info"}); err != nil {
		t.Fatal(err)
	}
	p := &mcp.CallToolParams{Name: "steps", Arguments: map[string]any{"n": 3}}
	p.SetProgressToken("tok")
	if out := llCall(t, b, p); !strings.Contains(out, "done 3") {
		t.Fatalf("steps = %s", out)
	}
	progress, logs := c.take(3, 3)
	want := "[tok 1/3 step 1 of 3 tok 2/3 step 2 of 3 tok 3/3 step 3 of 3]"
	if fmt.Sprint(progress) != want {
		t.Errorf("progress %q; want %s, once", progress, want)
	}
	if want := `[info steps {"step":1} info steps {"step":2} info steps {"step":3}]`; fmt.Sprint(logs) != want {
		t.Errorf("log messages %q; want %s, once", logs, want)
	}
	lendLogged(t, hp, "the server sent a log message during a call lent the shared session")
}

// TestMCPLendingResumesOnceParked: lending ended by a write to the shared
// session (add_note through /opentool/call) begins again once that
// session parks ("sharedIdle"): its next process is as a new session
// would be. Two clients alike connected after the park read on it (3
// server processes: the first client's, the one made while lending was
// off, and the shared one woken), and neither lists the note written on
// the process that parked. Without the renewal each had a session of its
// own (4 processes).
func TestMCPLendingResumesOnceParked(t *testing.T) {
	dir := t.TempDir()
	// No retirement (TestMCPReadersRetireTheirSessions); the shared
	// session parks 2 s after its last use, longer than the counts below
	// take once a call used it.
	lendDeclare(t, dir, map[string]any{"sharedIdle": "2s", "reclaimIdle": "24h"})
	hp := startHostProc(t, dir)
	lendClients(t, hp.url, 2)

	st, _, body := httpDo(t, http.MethodPost, hp.url+"/opentool/call", "", `{"jsonrpc":"2.0","method":"add_note","params":{"title":"the parked process's note"},"id":1}`)
	if st != http.StatusOK || !strings.Contains(body, `"result"`) {
		t.Fatalf("add_note over /opentool/call: %d %s", st, body)
	}
	lendLogged(t, hp, "now go to sessions of their own")
	plain := &mcp.ClientOptions{Capabilities: &mcp.ClientCapabilities{}}
	if out, isErr := msCall(t, lendConnect(t, hp.url, plain), "list_notes", nil); isErr || out != `{"notes":[]}` {
		t.Fatalf("a reader while lending is off lists %s (isError %v); want its own session's, no notes", out, isErr)
	}

	lendLogged(t, hp, "the shared session parked; read-only calls")
	waitServers(t, hp, 2, "the shared session parked: the first client's and the last reader's own")
	for i := range 2 {
		if out, isErr := msCall(t, lendConnect(t, hp.url, plain), "list_notes", nil); isErr || out != `{"notes":[]}` {
			t.Fatalf("reader %d after the park lists %s (isError %v); want no notes", i, out, isErr)
		}
	}
	// Each call returned: a session of its own, had either been given
	// one, would run by now.
	if kids := msChildren(hp.cmd.Process.Pid); len(kids) != 3 {
		t.Errorf("%d server processes after two reads once parked; want 3 (the shared session woken, lent to both)", len(kids))
	}
	lendLogged(t, hp, "MCP server's shared session started again")
}

// TestMCPReadersRetireTheirSessions: the first client of an identity,
// given a session of its own at its first listing, closes it once it
// has only read and gone unused for "reclaimIdle", the shared session's
// process running: two readers then cost one server process, and the
// first one's next read is lent the shared session. A client that wrote
// keeps its session, and its note, however long it idles: checked once
// a later reader of another identity retired, which the same checks
// found idle after it.
func TestMCPReadersRetireTheirSessions(t *testing.T) {
	dir := t.TempDir()
	// Sessions retire at the parking checks, every quarter of
	// sharedIdle; the shared session, unused for all of it, would park
	// and stop the retiring: 10 s is past anything the test waits for.
	lendDeclare(t, dir, map[string]any{"reclaimIdle": "1s", "sharedIdle": "10s"})
	hp := startHostProc(t, dir)
	const retired = "pristine and idle, closed"
	clients := lendClients(t, hp.url, 2)
	testkit.Eventually(t, 30*time.Second, "the first reader's session retires", func() bool { return strings.Count(hp.logs.String(), retired) >= 1 })
	waitServers(t, hp, 1, "two readers: the shared session alone")
	for i, cs := range clients {
		if out, isErr := msCall(t, cs, "list_notes", nil); isErr || out != `{"notes":[]}` {
			t.Fatalf("reader %d lists %s (isError %v); want no notes", i, out, isErr)
		}
	}
	if kids := msChildren(hp.cmd.Process.Pid); len(kids) != 1 {
		t.Errorf("%d server processes after the readers read again; want 1 (both lent the shared session)", len(kids))
	}

	plain := &mcp.ClientOptions{Capabilities: &mcp.ClientCapabilities{}}
	writer := lendConnect(t, hp.url, plain)
	if out, isErr := msCall(t, writer, "add_note", map[string]any{"title": "the writer's"}); isErr {
		t.Fatalf("add_note: %s", out)
	}
	kids := waitServers(t, hp, 2, "the writer has a session of its own")
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	other, err := mcp.NewClient(&mcp.Implementation{Name: "another reader", Version: "1"}, plain).Connect(ctx, &mcp.StreamableClientTransport{Endpoint: hp.url + "/mcp"}, &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = other.Close() })
	if out, isErr := msCall(t, other, "list_notes", nil); isErr || out != `{"notes":[]}` {
		t.Fatalf("another identity's reader lists %s (isError %v); want no notes", out, isErr)
	}
	testkit.Eventually(t, 30*time.Second, "the other identity's reader's session retires", func() bool { return strings.Count(hp.logs.String(), retired) >= 2 })
	if out, _ := msCall(t, writer, "list_notes", nil); !strings.Contains(out, "the writer's") {
		t.Errorf("the writer lists %s after idling; want its note, on its own session", out)
	}
	now := msChildren(hp.cmd.Process.Pid)
	slices.Sort(now)
	slices.Sort(kids)
	if !slices.Equal(now, kids) {
		t.Errorf("server processes %v; want %v (the shared one and the writer's)", now, kids)
	}
}
