package e2e_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/opentool-host/opentool-host/testkit"
)

// The MCP world through the host (issue 22): an MCP client of the host's
// /mcp gets from an MCP server behind the host what it gets from the
// server directly, and Go SDK plugins can say the same things.

// llRich starts a host serving examples/mcp-notes --rich as plugin notes
// and the rich test plugin, with extra run flags, and returns it.
func llRich(t *testing.T, extra ...string) *hostProc {
	t.Helper()
	dir := t.TempDir()
	msDeclare(t, dir, "notes", "--rich")
	testkit.InstallPlugin(t, dir, "rich", "./testkit/plugins/rich")
	return startHostProc(t, dir, extra...)
}

// llDirect connects an MCP client to mcp-notes --rich over stdio, with
// opts (nil: none).
func llDirect(t *testing.T, opts *mcp.ClientOptions) *mcp.ClientSession {
	t.Helper()
	bin := testkit.Build(t, "./examples/mcp-notes")
	return llConnect(t, &mcp.CommandTransport{Command: exec.Command(bin, "--rich")}, opts)
}

// llHost connects an MCP client to the host's /mcp, with opts.
func llHost(t *testing.T, hp *hostProc, opts *mcp.ClientOptions) *mcp.ClientSession {
	t.Helper()
	return llConnect(t, &mcp.StreamableClientTransport{Endpoint: hp.url + "/mcp"}, opts)
}

// llConnect connects a client speaking MCP 2025-11-25 (the revision of
// the conformance suite, where servers send requests during a call).
func llConnect(t *testing.T, tr mcp.Transport, opts *mcp.ClientOptions) *mcp.ClientSession {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "lossless", Version: "1"}, opts).Connect(ctx, tr, &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
	if err != nil {
		t.Fatalf("MCP connect: %v", err)
	}
	t.Cleanup(func() { _ = cs.Close() })
	return cs
}

// llCall calls tool name with args (and params' other members) and
// returns the result as JSON.
func llCall(t *testing.T, cs *mcp.ClientSession, params *mcp.CallToolParams) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	res, err := cs.CallTool(ctx, params)
	if err != nil {
		t.Fatalf("tools/call %s: %v", params.Name, err)
	}
	b, err := json.Marshal(res)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestMCPResultsAsReturned(t *testing.T) {
	hp := llRich(t)
	direct := llDirect(t, nil)
	through := llHost(t, hp, nil)

	// Every kind of content block, with annotations and _meta, as the
	// server returned it. (Before: structuredContent {"content": [...],
	// "text": ...} and one text block of that JSON.)
	want := llCall(t, direct, &mcp.CallToolParams{Name: "snapshot"})
	if got := llCall(t, through, &mcp.CallToolParams{Name: "snapshot"}); got != want {
		t.Fatalf("snapshot through the host:\n%s\nwant (directly):\n%s", got, want)
	}
	// A structured result and an isError one, the same both ways.
	llCall(t, direct, &mcp.CallToolParams{Name: "add_note", Arguments: map[string]any{"title": "t"}})
	llCall(t, through, &mcp.CallToolParams{Name: "add_note", Arguments: map[string]any{"title": "t"}})
	for _, p := range []*mcp.CallToolParams{
		{Name: "get_note", Arguments: map[string]any{"id": 1}},
		{Name: "get_note", Arguments: map[string]any{"id": 9}},
		{Name: "repeat", Arguments: map[string]any{"text": "plain"}},
	} {
		if got, want := llCall(t, through, p), llCall(t, direct, p); got != want {
			t.Errorf("%s %v through the host:\n%s\nwant (directly):\n%s", p.Name, p.Arguments, got, want)
		}
	}

	// OpenTool callers keep the documented projection.
	_, m := rpc(t, hp.url, `{"jsonrpc":"2.0","method":"snapshot","id":1}`)
	res, _ := m["result"].(map[string]any)
	if blocks, _ := res["content"].([]any); len(blocks) != 6 || res["text"] != "a snapshot" {
		t.Fatalf("/opentool/call snapshot = %v, want {content: 6 blocks, text: \"a snapshot\"}", m)
	}
	if _, m := rpc(t, hp.url, `{"jsonrpc":"2.0","method":"get_note","params":{"id":9},"id":2}`); fmt.Sprint(m["error"]) != "map[code:500 message:no note 9]" {
		t.Fatalf("/opentool/call of an isError result = %v", m)
	}

	// A Go SDK plugin's content blocks (pluginsdk.ResultFunc).
	got := llCall(t, through, &mcp.CallToolParams{Name: "picture", Arguments: map[string]any{"caption": "a dot"}})
	wantPic := `{"content":[{"type":"text","text":"a dot"},{"type":"image","mimeType":"image/png","data":"iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJ","annotations":{"audience":["user"]}}]}`
	if got != wantPic {
		t.Fatalf("picture over /mcp:\n%s\nwant\n%s", got, wantPic)
	}
	_, m = rpc(t, hp.url, `{"jsonrpc":"2.0","method":"picture","params":{"caption":"a dot"},"id":3}`)
	if b, _ := json.Marshal(m["result"]); !bytes.Contains(b, []byte(`"text":"a dot"`)) || !bytes.Contains(b, []byte(`"type":"image"`)) {
		t.Fatalf("/opentool/call picture = %s, want the projection {content, text}", b)
	}
}

// llBearer is an http.Client sending "Authorization: Bearer KEY".
func llBearer(key string) *http.Client { return &http.Client{Transport: msBearer(key)} }

// llCollector gathers the notifications a client receives.
type llCollector struct {
	mu       sync.Mutex
	progress []string
	logs     []string
}

func (c *llCollector) options() *mcp.ClientOptions {
	return &mcp.ClientOptions{
		ProgressNotificationHandler: func(_ context.Context, r *mcp.ProgressNotificationClientRequest) {
			c.mu.Lock()
			defer c.mu.Unlock()
			c.progress = append(c.progress, fmt.Sprintf("%v %v/%v %s", r.Params.ProgressToken, r.Params.Progress, r.Params.Total, r.Params.Message))
		},
		LoggingMessageHandler: func(_ context.Context, r *mcp.LoggingMessageRequest) {
			c.mu.Lock()
			defer c.mu.Unlock()
			b, _ := json.Marshal(r.Params.Data)
			c.logs = append(c.logs, fmt.Sprintf("%s %s %s", r.Params.Level, r.Params.Logger, b))
		},
	}
}

// take returns what was gathered and clears it, once it holds at least
// np progress and nl log notifications or 5 s passed. (The SDK's client
// handles notifications in a goroutine of its own, so the last ones may
// come in just after the call's result.)
func (c *llCollector) take(np, nl int) (progress, logs []string) {
	deadline := time.Now().Add(5 * time.Second)
	for {
		c.mu.Lock()
		if (len(c.progress) >= np && len(c.logs) >= nl) || time.Now().After(deadline) {
			progress, logs = c.progress, c.logs
			c.progress, c.logs = nil, nil
			c.mu.Unlock()
			return progress, logs
		}
		c.mu.Unlock()
		time.Sleep(5 * time.Millisecond)
	}
}

func TestMCPNotificationsRelayed(t *testing.T) {
	for _, transport := range []string{"data-channel", "grpc"} {
		t.Run(transport, func(t *testing.T) {
			flags := []string{"--mcp-sessions"}
			if transport == "grpc" {
				flags = append(flags, "--plugin-transport", "grpc")
			}
			testNotificationsRelayed(t, llRich(t, flags...))
		})
	}
}

// testNotificationsRelayed is TestMCPNotificationsRelayed on host hp.
func testNotificationsRelayed(t *testing.T, hp *hostProc) {
	var dc, hc llCollector
	direct := llDirect(t, dc.options())
	through := llHost(t, hp, hc.options())
	ctx := context.Background()

	// The same progress (with the caller's own token) and the same log
	// messages at the level the client set, before the result.
	for _, level := range []mcp.LoggingLevel{"info", "debug"} {
		for _, cs := range []*mcp.ClientSession{direct, through} {
			if err := cs.SetLoggingLevel(ctx, &mcp.SetLoggingLevelParams{Level: level}); err != nil {
				t.Fatal(err)
			}
		}
		p := &mcp.CallToolParams{Name: "steps", Arguments: map[string]any{"n": 3}}
		p.SetProgressToken("tok-" + string(level))
		n := map[mcp.LoggingLevel]int{"info": 3, "debug": 6}[level]
		llCall(t, direct, p)
		llCall(t, through, p)
		wantP, wantL := dc.take(3, n)
		gotP, gotL := hc.take(3, n)
		if len(wantP) != 3 || fmt.Sprint(gotP) != fmt.Sprint(wantP) {
			t.Errorf("level %s: progress through the host %q, directly %q", level, gotP, wantP)
		}
		if len(wantL) != n || fmt.Sprint(gotL) != fmt.Sprint(wantL) {
			t.Errorf("level %s: log messages through the host %q, directly %q", level, gotL, wantL)
		}
	}
	// Without a progress token: no progress.
	llCall(t, through, &mcp.CallToolParams{Name: "steps", Arguments: map[string]any{"n": 2}})
	time.Sleep(200 * time.Millisecond)
	if p, l := hc.take(0, 4); len(p) != 0 || len(l) != 4 {
		t.Errorf("without a progress token: progress %q (want none), log messages %q (want 4)", p, l)
	}

	// A Go SDK plugin's progress and log messages (pluginsdk.Progress, Log).
	p := &mcp.CallToolParams{Name: "count", Arguments: map[string]any{"n": 2}}
	p.SetProgressToken(42)
	llCall(t, through, p)
	gotP, gotL := hc.take(2, 2)
	if want := []string{"42 1/2 1 of 2", "42 2/2 2 of 2"}; fmt.Sprint(gotP) != fmt.Sprint(want) {
		t.Errorf("count progress %q, want %q", gotP, want)
	}
	if want := []string{`info count "at 1"`, `info count "at 2"`}; fmt.Sprint(gotL) != fmt.Sprint(want) {
		t.Errorf("count log messages %q, want %q", gotL, want)
	}

	// /opentool/streamCall gets progress events between its items.
	resp, err := http.Post(hp.url+"/opentool/streamCall", "application/json", strings.NewReader(`{"jsonrpc":"2.0","method":"ticks","params":{"n":2},"id":1}`))
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	var events []string
	for _, line := range strings.Split(string(body), "\n") {
		if ev, ok := strings.CutPrefix(line, "event:"); ok {
			events = append(events, ev)
		}
	}
	if want := "[start progress data progress data done]"; fmt.Sprint(events) != want || !strings.Contains(string(body), `data:{"progress":2,"total":2,"message":"tick 2"}`) {
		t.Errorf("streamCall events %v, want %s:\n%s", events, want, body)
	}
}

// llAsker is a client that answers the server's questions: elicitation
// (accept, answer "yes: QUESTION"), sampling (model "m1", "sampled:
// PROMPT") and roots (file:///srv/notes).
func llAsker() *mcp.ClientOptions {
	return &mcp.ClientOptions{
		ElicitationHandler: func(_ context.Context, r *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"answer": "yes: " + r.Params.Message}}, nil
		},
		CreateMessageHandler: func(_ context.Context, r *mcp.CreateMessageRequest) (*mcp.CreateMessageResult, error) {
			text := ""
			if tc, ok := r.Params.Messages[0].Content.(*mcp.TextContent); ok {
				text = tc.Text
			}
			return &mcp.CreateMessageResult{Model: "m1", Role: "assistant", Content: &mcp.TextContent{Text: "sampled: " + text}}, nil
		},
	}
}

// llAskerClient connects c (llAsker's options) to tr, with the root
// file:///srv/notes.
func llAskerClient(t *testing.T, tr mcp.Transport) *mcp.ClientSession {
	t.Helper()
	c := mcp.NewClient(&mcp.Implementation{Name: "asker", Version: "1"}, llAsker())
	c.AddRoots(&mcp.Root{URI: "file:///srv/notes", Name: "notes"})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cs, err := c.Connect(ctx, tr, &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cs.Close() })
	return cs
}

func TestMCPClientRequestsRelayed(t *testing.T) {
	for _, transport := range []string{"data-channel", "grpc"} {
		t.Run(transport, func(t *testing.T) {
			flags := []string{"--mcp-sessions"}
			if transport == "grpc" {
				flags = append(flags, "--plugin-transport", "grpc")
			}
			testClientRequestsRelayed(t, llRich(t, flags...))
		})
	}
}

// testClientRequestsRelayed is TestMCPClientRequestsRelayed on host hp.
func testClientRequestsRelayed(t *testing.T, hp *hostProc) {
	bin := testkit.Build(t, "./examples/mcp-notes")
	direct := llAskerClient(t, &mcp.CommandTransport{Command: exec.Command(bin, "--rich")})
	through := llAskerClient(t, &mcp.StreamableClientTransport{Endpoint: hp.url + "/mcp"})

	// elicitation/create, sampling/createMessage and roots/list from the
	// server during the call reach this client; its answers go back.
	ask := &mcp.CallToolParams{Name: "ask", Arguments: map[string]any{"question": "ok?"}}
	want := llCall(t, direct, ask)
	if !strings.Contains(want, `"answer":"yes: ok?"`) || !strings.Contains(want, `"sample":"sampled: ok?"`) || !strings.Contains(want, `"roots":["file:///srv/notes"]`) {
		t.Fatalf("ask directly = %s", want)
	}
	if got := llCall(t, through, ask); got != want {
		t.Fatalf("ask through the host:\n%s\nwant (directly):\n%s", got, want)
	}
	// A Go SDK plugin's question (pluginsdk.Elicit).
	if got := llCall(t, through, &mcp.CallToolParams{Name: "confirm", Arguments: map[string]any{"question": "sure?"}}); !strings.Contains(got, `"answer":"yes: sure?"`) {
		t.Fatalf("confirm = %s", got)
	}

	// A client without the capabilities: with a session of its own the
	// server knows it and does not ask; through the shared session the
	// host refuses the server's request, saying why.
	plain := llHost(t, hp, &mcp.ClientOptions{Capabilities: &mcp.ClientCapabilities{}})
	if got := llCall(t, plain, ask); !strings.Contains(got, `"isError":true`) || !strings.Contains(got, "client does not support elicitation") && !strings.Contains(got, "did not declare the elicitation capability") {
		t.Fatalf("ask from a client without elicitation = %s", got)
	}
	// An OpenTool caller cannot answer either.
	if _, m := rpc(t, hp.url, `{"jsonrpc":"2.0","method":"ask","params":{"question":"q"},"id":1}`); !strings.Contains(fmt.Sprint(m["error"]), "is not an MCP client that can answer it") {
		t.Fatalf("ask over /opentool/call = %v", m)
	}
	// Stateless /mcp (--mcp-stateless) has no session for the question.
	stateless := llRich(t, "--mcp-stateless")
	sl := llAskerClient(t, &mcp.StreamableClientTransport{Endpoint: stateless.url + "/mcp"})
	if got := llCall(t, sl, ask); !strings.Contains(got, `"isError":true`) || !strings.Contains(got, "--mcp-stateless") {
		t.Fatalf("ask over stateless /mcp = %s", got)
	}
}

// llJSON is v as JSON.
func llJSON(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// llCatalog lists what cs serves beyond tools: resources, templates and
// prompts, as JSON.
func llCatalog(t *testing.T, cs *mcp.ClientSession) (resources, templates, prompts string) {
	t.Helper()
	ctx := context.Background()
	rs, err := cs.ListResources(ctx, nil)
	if err != nil {
		t.Fatalf("resources/list: %v", err)
	}
	ts, err := cs.ListResourceTemplates(ctx, nil)
	if err != nil {
		t.Fatalf("resources/templates/list: %v", err)
	}
	ps, err := cs.ListPrompts(ctx, nil)
	if err != nil {
		t.Fatalf("prompts/list: %v", err)
	}
	return llJSON(t, rs.Resources), llJSON(t, ts.ResourceTemplates), llJSON(t, ps.Prompts)
}

func TestMCPCatalogServed(t *testing.T) {
	dir := t.TempDir()
	// "shared": the tool calls that change the catalog reach the session
	// the catalog is listed from.
	msShared(t, msDeclare(t, dir, "notes", "--rich"))
	msShared(t, msDeclare(t, dir, "twin", "--rich")) // the same URIs and prompt: refused, or prefixed
	keys := filepath.Join(t.TempDir(), "keys.json")
	if err := os.WriteFile(keys, []byte(`{"keys":[{"name":"all","key":"k-all","allow":["*"]},{"name":"notes","key":"k-notes","allow":["plugin:notes"]},{"name":"narrow","key":"k-narrow","allow":["add_note","snapshot"]}]}`), 0o600); err != nil {
		t.Fatal(err)
	}
	hp := startHostProc(t, dir, "--mcp-sessions", "--prefix-collisions", "--api-keys-file", keys)
	var updated, listChanged sync.WaitGroup
	updated.Add(1)
	listChanged.Add(1)
	var onceU, onceL sync.Once
	opts := &mcp.ClientOptions{
		ResourceUpdatedHandler: func(_ context.Context, r *mcp.ResourceUpdatedNotificationRequest) {
			if r.Params.URI == "notes://readme" {
				onceU.Do(updated.Done)
			}
		},
		ResourceListChangedHandler: func(context.Context, *mcp.ResourceListChangedRequest) { onceL.Do(listChanged.Done) },
	}
	through := llConnect(t, &mcp.StreamableClientTransport{Endpoint: hp.url + "/mcp", HTTPClient: llBearer("k-all")}, opts)
	direct := llDirect(t, nil)
	ctx := context.Background()

	// The lists: each item as the server lists it, once (the twin's
	// duplicates refused), its prompt served prefixed.
	dr, dt, dp := llCatalog(t, direct)
	hr, ht, hpr := llCatalog(t, through)
	if hr != dr || ht != dt {
		t.Fatalf("resources through the host:\n%s %s\nwant (directly):\n%s %s", hr, ht, dr, dt)
	}
	wantPrompts := strings.TrimSuffix(dp, "]") + "," + strings.Replace(strings.TrimPrefix(dp, "["), `"name":"summarize"`, `"name":"twin__summarize"`, 1)
	if hpr != wantPrompts {
		t.Fatalf("prompts through the host:\n%s\nwant:\n%s", hpr, wantPrompts)
	}
	if !strings.Contains(hp.logs.String(), "MCP resource conflict") {
		t.Errorf("the twin's refused resources are not logged")
	}

	// Reads, prompts and completion: the same results.
	for _, uri := range []string{"notes://readme", "notes://logo"} {
		hres, err := through.ReadResource(ctx, &mcp.ReadResourceParams{URI: uri})
		if err != nil {
			t.Fatalf("read %s through the host: %v", uri, err)
		}
		dres, _ := direct.ReadResource(ctx, &mcp.ReadResourceParams{URI: uri})
		if llJSON(t, hres) != llJSON(t, dres) {
			t.Errorf("read %s through the host %s, directly %s", uri, llJSON(t, hres), llJSON(t, dres))
		}
	}
	gp := &mcp.GetPromptParams{Name: "summarize", Arguments: map[string]string{"topic": "cats", "style": "terse"}}
	hg, err := through.GetPrompt(ctx, gp)
	if err != nil {
		t.Fatal(err)
	}
	dg, _ := direct.GetPrompt(ctx, gp)
	if llJSON(t, hg) != llJSON(t, dg) {
		t.Errorf("prompts/get through the host %s, directly %s", llJSON(t, hg), llJSON(t, dg))
	}
	if tg, err := through.GetPrompt(ctx, &mcp.GetPromptParams{Name: "twin__summarize", Arguments: map[string]string{"topic": "dogs"}}); err != nil || !strings.Contains(llJSON(t, tg), "notes on dogs") {
		t.Errorf("the prefixed twin prompt: %v, %v", tg, err)
	}
	cp := &mcp.CompleteParams{Ref: &mcp.CompleteReference{Type: "ref/prompt", Name: "summarize"}, Argument: mcp.CompleteParamsArgument{Name: "topic", Value: "no"}}
	hc, err := through.Complete(ctx, cp)
	if err != nil {
		t.Fatal(err)
	}
	if dc, _ := direct.Complete(ctx, cp); llJSON(t, hc) != llJSON(t, dc) || !strings.Contains(llJSON(t, hc), `["nothing","notes"]`) {
		t.Errorf("completion through the host %s, directly %s", llJSON(t, hc), llJSON(t, dc))
	}
	if _, err := through.ReadResource(ctx, &mcp.ReadResourceParams{URI: "notes://none"}); llCode(err) != mcp.CodeResourceNotFound {
		t.Errorf("an unknown resource: %v, want code %d", err, mcp.CodeResourceNotFound)
	}

	// A note added: the server's new resource reaches the list
	// (list_changed), and the template reads it.
	llCall(t, through, &mcp.CallToolParams{Name: "add_note", Arguments: map[string]any{"title": "first"}})
	llWait(t, &listChanged, "notifications/resources/list_changed")
	testkit.Eventually(t, 10*time.Second, "notes://note/1 listed", func() bool {
		r, _, _ := llCatalog(t, through)
		return strings.Contains(r, "notes://note/1")
	})
	if res, err := through.ReadResource(ctx, &mcp.ReadResourceParams{URI: "notes://note/1"}); err != nil || !strings.Contains(llJSON(t, res), `\"title\":\"first\"`) {
		t.Errorf("read notes://note/1: %v, %v", llJSON(t, res), err)
	}

	// Subscribed, the client hears of the server's updates.
	if err := through.Subscribe(ctx, &mcp.SubscribeParams{URI: "notes://readme"}); err != nil {
		t.Fatal(err)
	}
	if got := llCall(t, through, &mcp.CallToolParams{Name: "touch", Arguments: map[string]any{"uri": "notes://readme"}}); !strings.Contains(got, "subscribed: true") {
		t.Fatalf("touch after subscribe = %s (the subscription did not reach the server)", got)
	}
	llWait(t, &updated, "notifications/resources/updated")
	if err := through.Unsubscribe(ctx, &mcp.UnsubscribeParams{URI: "notes://readme"}); err != nil {
		t.Fatal(err)
	}
	if got := llCall(t, through, &mcp.CallToolParams{Name: "touch", Arguments: map[string]any{"uri": "notes://readme"}}); !strings.Contains(got, "subscribed: false") {
		t.Fatalf("touch after unsubscribe = %s", got)
	}

	// Per API key: the whole plugin, or nothing of it.
	notesKey := llConnect(t, &mcp.StreamableClientTransport{Endpoint: hp.url + "/mcp", HTTPClient: llBearer("k-notes")}, nil)
	if r, _, p := llCatalog(t, notesKey); !strings.Contains(r, "notes://readme") || strings.Contains(p, "twin__") {
		t.Errorf("key plugin:notes sees resources %s, prompts %s", r, p)
	}
	narrow := llConnect(t, &mcp.StreamableClientTransport{Endpoint: hp.url + "/mcp", HTTPClient: llBearer("k-narrow")}, nil)
	if r, tm, p := llCatalog(t, narrow); r != "[]" || tm != "[]" || p != "[]" {
		t.Errorf("a key allowed two functions sees resources %s, templates %s, prompts %s", r, tm, p)
	}
	if _, err := narrow.ReadResource(ctx, &mcp.ReadResourceParams{URI: "notes://readme"}); llCode(err) != mcp.CodeResourceNotFound {
		t.Errorf("a key allowed two functions reads notes://readme: %v, want code %d", err, mcp.CodeResourceNotFound)
	}
	if _, err := narrow.GetPrompt(ctx, gp); err == nil {
		t.Errorf("a key allowed two functions gets the prompt")
	}
}

// llCode is the JSON-RPC error code of err, 0 for none.
func llCode(err error) int64 {
	var je *jsonrpc.Error
	if errors.As(err, &je) {
		return je.Code
	}
	return 0
}

// llWait waits up to 10 s for wg, naming what it waits for.
func llWait(t *testing.T, wg *sync.WaitGroup, what string) {
	t.Helper()
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatalf("no %s within 10 s", what)
	}
}

// TestMCPCallLatency measures tools/call of mcp-notes' repeat from a Go SDK
// client: directly over stdio, through `opentool-host mcp` over stdio (the
// host's adapter in between), and through a host's /mcp over HTTP, in the
// same run; it logs the medians and 90th percentiles (issue 22's closing
// note) and checks nothing but that the calls succeed.
func TestMCPCallLatency(t *testing.T) {
	if testing.Short() {
		t.Skip("measurement")
	}
	const n = 300
	notes := testkit.Build(t, "./examples/mcp-notes")
	bin := testkit.Build(t, "./cmd/opentool-host")
	dir := t.TempDir()
	msDeclare(t, dir, "notes")
	hp := startHostProc(t, dir, "--mcp-sessions")
	clients := []struct {
		name string
		cs   *mcp.ClientSession
	}{
		{"directly (stdio)", llConnect(t, &mcp.CommandTransport{Command: exec.Command(notes)}, nil)},
		{"through opentool-host mcp (stdio)", llConnect(t, &mcp.CommandTransport{Command: exec.Command(bin, "mcp", "--dir", dir, "--state-dir", t.TempDir())}, nil)},
		{"through /mcp (HTTP, sessions)", llHost(t, hp, nil)},
	}
	p := &mcp.CallToolParams{Name: "repeat", Arguments: map[string]any{"text": "hi"}}
	for _, c := range clients {
		for range 20 { // warm up
			llCall(t, c.cs, p)
		}
	}
	ds := make([][]time.Duration, len(clients))
	for range n { // interleaved, so that the machine's load is shared
		for k, c := range clients {
			start := time.Now()
			llCall(t, c.cs, p)
			ds[k] = append(ds[k], time.Since(start))
		}
	}
	for k, c := range clients {
		d := ds[k]
		sort.Slice(d, func(i, j int) bool { return d[i] < d[j] })
		t.Logf("tools/call repeat %s: p50 %v, p90 %v (%d calls)", c.name, d[n/2].Round(time.Microsecond), d[n*9/10].Round(time.Microsecond), n)
	}
}
