package mcpadapter

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/opentool-host/opentool-host/host/tasks"
	"github.com/opentool-host/opentool-host/host/tasks/mcptasks"
)

// The Tasks-extension test server (taskServer): an MCP server built on
// the SDK, as a server of the extension would be (the extension's
// capability, tools/call answered with a CreateTaskResult, tasks/get and
// tasks/cancel as custom methods), whose tools/list marks tools with
// execution.taskSupport. The tests run it in process over streamable
// HTTP, and as a process over stdio: the test binary re-executed with
// FixtureEnv set (TestMain; the hashicorp/go-plugin helper-process
// pattern), which the host's tests (tasks_host_test.go) declare as an
// MCP server.
//
//	tool       taskSupport  behaviour
//	add        required     a task that completes after "polls" tasks/get
//	                        (default 3) with structuredContent {"sum": a+b,
//	                        "polls": N, "minGapMs": the shortest time between
//	                        the task's creation and a tasks/get, or two}
//	hang       required     a task that works until tasks/cancel
//	fail       required     a task that ends at the first tasks/get: "rpc"
//	                        failed -32603 "exploded", "params" failed -32602
//	                        "bad params", "tool" completed with isError
//	either     optional     answered at once: {"optIn": whether the request
//	                        declared the extension}
//	sometimes  (none)       -32021 without the opt-in; with it a task that
//	                        completes at the first tasks/get: {"asTask": true}
//	events     (none)       waits until "count" hang tasks were "created",
//	                        "polled" (a first tasks/get: the client has the
//	                        handle) or "cancelled" (tasks/cancel), and
//	                        returns their ids
//
// A tools/call of a required tool without the opt-in is answered -32021
// (extension, "Capability Negotiation"). tools/list has pages of two
// tools, so that the adapter's raw reading follows pages.

// FixtureEnv names the environment variable that makes the test binary
// the task server over stdio: "ext" declares the extension, "noext"
// does not (its tools behave the same); "mrtr" makes it the
// multi-round-trip server of sessionless_fixture_test.go instead.
const FixtureEnv = "OPENTOOL_TEST_TASK_SERVER"

// fixtureInterval is the pollIntervalMs of the server's tasks.
const fixtureInterval = 30 * time.Millisecond

// TestMain runs the tests, or, with FixtureEnv set, is the task server
// over stdio until its stdin closes.
func TestMain(m *testing.M) {
	if mode := os.Getenv(FixtureEnv); mode != "" {
		srv := newTaskServer(mode == "ext").srv
		if mode == "mrtr" {
			srv = newMRTRServer() // sessionless_fixture_test.go
		}
		if err := srv.Run(context.Background(), &mcp.StdioTransport{}); err != nil {
			fmt.Fprintln(os.Stderr, "task server:", err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// fixtureSupport is the execution.taskSupport of the server's tools.
var fixtureSupport = map[string]string{"add": mcptasks.TaskSupportRequired, "hang": mcptasks.TaskSupportRequired, "fail": mcptasks.TaskSupportRequired, "either": mcptasks.TaskSupportOptional}

// taskServer is the test server and what it saw.
type taskServer struct {
	srv *mcp.Server

	mu        sync.Mutex
	tasks     map[string]*fixtureTask
	created   []string      // hang tasks, in creation order
	polled    []string      // hang tasks polled once, in order
	cancelled []string      // tasks/cancel of a hang task, in order
	changed   chan struct{} // closed (and replaced) at each change
}

// fixtureTask is one task of the server.
type fixtureTask struct {
	tool   string
	args   map[string]any
	rec    tasks.Detailed
	polls  int
	last   time.Time     // creation, then each tasks/get
	minGap time.Duration // shortest time from last to a tasks/get
}

// newTaskServer returns the server; ext declares the extension.
func newTaskServer(ext bool) *taskServer {
	s := &taskServer{tasks: map[string]*fixtureTask{}, changed: make(chan struct{})}
	caps := &mcp.ServerCapabilities{Tools: &mcp.ToolCapabilities{}}
	if ext {
		caps.AddExtension(mcptasks.Extension, nil)
	}
	s.srv = mcp.NewServer(&mcp.Implementation{Name: "task-server", Version: "1.0.0"}, &mcp.ServerOptions{Capabilities: caps, PageSize: 2})
	object := json.RawMessage(`{"type":"object"}`)
	for _, name := range []string{"add", "hang", "fail", "sometimes"} {
		s.srv.AddTool(&mcp.Tool{Name: name, Description: "A task tool.", InputSchema: object}, func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return nil, fmt.Errorf("%s is served as a task only", name) // the middleware answers first
		})
	}
	s.srv.AddTool(&mcp.Tool{Name: "either", InputSchema: object}, func(_ context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return structured(map[string]any{"optIn": mcptasks.Allows(req.Params.Meta)}), nil
	})
	s.srv.AddTool(&mcp.Tool{Name: "events", InputSchema: object}, s.events)
	s.srv.AddReceivingMiddleware(s.middleware)
	if err := mcp.AddReceivingCustomMethod(s.srv, mcptasks.MethodGet, s.get); err != nil {
		panic(err)
	}
	if err := mcp.AddReceivingCustomMethod(s.srv, mcptasks.MethodCancel, s.cancel); err != nil {
		panic(err)
	}
	return s
}

// structured is a CallToolResult of v as structuredContent and its JSON
// text.
func structured(v any) *mcp.CallToolResult {
	b, _ := json.Marshal(v)
	return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: string(b)}}, StructuredContent: json.RawMessage(b)}
}

// fixtureTools is a tools/list result with execution members.
type fixtureTools struct {
	mcp.ResultBase
	Tools      []map[string]any `json:"tools"`
	NextCursor string           `json:"nextCursor,omitempty"`
}

// middleware adds execution.taskSupport to tools/list and answers a
// tools/call of a task tool with a task (or -32021).
func (s *taskServer) middleware(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		switch method {
		case "tools/list":
			res, err := next(ctx, method, req)
			if err != nil {
				return nil, err
			}
			lr := res.(*mcp.ListToolsResult)
			out := &fixtureTools{Tools: []map[string]any{}, NextCursor: lr.NextCursor}
			for _, t := range lr.Tools {
				b, _ := json.Marshal(t)
				var m map[string]any
				_ = json.Unmarshal(b, &m)
				if ts := fixtureSupport[t.Name]; ts != "" {
					m["execution"] = map[string]any{"taskSupport": ts}
				}
				out.Tools = append(out.Tools, m)
			}
			return out, nil
		case "tools/call":
			p := req.(*mcp.CallToolRequest).Params
			if fixtureSupport[p.Name] != mcptasks.TaskSupportRequired && p.Name != "sometimes" {
				return next(ctx, method, req)
			}
			if !mcptasks.Allows(p.Meta) {
				return nil, mcptasks.MissingCapability("tools/call of " + p.Name)
			}
			var args map[string]any
			_ = json.Unmarshal(p.Arguments, &args)
			return &mcptasks.TaskResult{ResultType: mcptasks.ResultTypeTask, Detailed: s.create(p.Name, args)}, nil
		}
		return next(ctx, method, req)
	}
}

// create stores a working task of tool.
func (s *taskServer) create(tool string, args map[string]any) tasks.Detailed {
	now := time.Now()
	s.mu.Lock()
	defer s.mu.Unlock()
	id := fmt.Sprintf("task-%d", len(s.tasks)+1)
	stamp := now.UTC().Format(time.RFC3339Nano)
	t := &fixtureTask{tool: tool, args: args, last: now, rec: tasks.Detailed{
		TaskID: id, Status: tasks.Working, CreatedAt: stamp, LastUpdatedAt: stamp,
		TTLMs: 60000, PollIntervalMs: fixtureInterval.Milliseconds(),
	}}
	s.tasks[id] = t
	if tool == "hang" {
		s.created = append(s.created, id)
		s.broadcast()
	}
	return t.rec
}

// broadcast wakes the waiters of events; s.mu is held.
func (s *taskServer) broadcast() {
	close(s.changed)
	s.changed = make(chan struct{})
}

// get serves tasks/get: it counts the poll and advances the task.
func (s *taskServer) get(_ context.Context, _ *mcp.ServerSession, p *mcptasks.TaskParams) (*mcptasks.TaskResult, error) {
	if !mcptasks.Allows(p.Meta) {
		return nil, mcptasks.MissingCapability(mcptasks.MethodGet)
	}
	now := time.Now()
	s.mu.Lock()
	defer s.mu.Unlock()
	t := s.tasks[p.TaskID]
	if t == nil {
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: "Failed to retrieve task: Task not found"}
	}
	if gap := now.Sub(t.last); t.polls == 0 || gap < t.minGap {
		t.minGap = gap
	}
	t.last = now
	t.polls++
	if t.tool == "hang" && t.polls == 1 {
		s.polled = append(s.polled, p.TaskID)
		s.broadcast()
	}
	if t.rec.Status == tasks.Working {
		t.advance()
	}
	return &mcptasks.TaskResult{ResultType: mcptasks.ResultTypeComplete, Detailed: t.rec}, nil
}

// advance ends the task when its time has come.
func (t *fixtureTask) advance() {
	switch t.tool {
	case "add":
		polls := 3
		if n, ok := t.args["polls"].(float64); ok {
			polls = int(n)
		}
		if t.polls < polls {
			return
		}
		a, _ := t.args["a"].(float64)
		b, _ := t.args["b"].(float64)
		t.complete(structured(map[string]any{"sum": a + b, "polls": t.polls, "minGapMs": t.minGap.Milliseconds()}))
	case "sometimes":
		t.complete(structured(map[string]any{"asTask": true}))
	case "fail":
		switch t.args["how"] {
		case "rpc":
			t.rec.Status, t.rec.StatusMessage, t.rec.Error = tasks.Failed, "exploded", json.RawMessage(`{"code":-32603,"message":"exploded"}`)
		case "params":
			t.rec.Status, t.rec.Error = tasks.Failed, json.RawMessage(`{"code":-32602,"message":"bad params"}`)
		default:
			t.complete(&mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "tool said no"}}, IsError: true})
		}
	}
}

// complete ends the task with res.
func (t *fixtureTask) complete(res *mcp.CallToolResult) {
	t.rec.Status = tasks.Completed
	t.rec.Result, _ = json.Marshal(res)
}

// cancel serves tasks/cancel.
func (s *taskServer) cancel(_ context.Context, _ *mcp.ServerSession, p *mcptasks.TaskParams) (*mcptasks.AckResult, error) {
	if !mcptasks.Allows(p.Meta) {
		return nil, mcptasks.MissingCapability(mcptasks.MethodCancel)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	t := s.tasks[p.TaskID]
	if t == nil {
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: "Failed to retrieve task: Task not found"}
	}
	if t.rec.Status == tasks.Working {
		t.rec.Status, t.rec.StatusMessage = tasks.Cancelled, "cancelled at the client's request"
	}
	if t.tool == "hang" {
		s.cancelled = append(s.cancelled, p.TaskID)
		s.broadcast()
	}
	return &mcptasks.AckResult{ResultType: mcptasks.ResultTypeComplete}, nil
}

// wait waits until at least n hang tasks were created (event
// "created"), polled ("polled") or cancelled ("cancelled"), and returns
// their ids, or ctx's error.
func (s *taskServer) wait(ctx context.Context, event string, n int) ([]string, error) {
	for {
		s.mu.Lock()
		ids := append([]string(nil), map[string][]string{"created": s.created, "polled": s.polled, "cancelled": s.cancelled}[event]...)
		ch := s.changed
		s.mu.Unlock()
		if len(ids) >= n {
			return ids, nil
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return nil, fmt.Errorf("%d hang tasks %s, want %d: %w", len(ids), event, n, ctx.Err())
		}
	}
}

// events serves the events tool (wait, bounded by 20 s).
func (s *taskServer) events(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	var args struct {
		Event string `json:"event"`
		Count int    `json:"count"`
	}
	if err := json.Unmarshal(req.Params.Arguments, &args); err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	ids, err := s.wait(ctx, args.Event, args.Count)
	if err != nil {
		return nil, err
	}
	return structured(map[string]any{"ids": ids}), nil
}
