package mcpapi_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/opentool-host/opentool-host/frontend/mcpapi"
	"github.com/opentool-host/opentool-host/host/tasks"
	"github.com/opentool-host/opentool-host/testkit"
)

// TestStdioCoreTasks: a Server connected through Server.Stdio (as
// opentool-host mcp connects it) over a pipe, spoken to in raw
// newline-delimited JSON-RPC: a tools/call with params.task is answered
// with a CreateTaskResult, notifications/tasks/status follows when the
// task completes, and tasks/list in the extension's dialect (_meta opts
// in) is refused with -32601 and the host's own message, which the SDK
// would have replaced by "method not found"; the extension's tools/call
// and tasks/get are served on the same connection.
func TestStdioCoreTasks(t *testing.T) {
	h := testkit.StartHost(t, nil, "./testkit/plugins/faulty")
	tm, err := tasks.NewManager(tasks.Config{PollInterval: 100 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(tm.Close)
	s := mcpapi.New(h, mcpapi.Config{Logger: testkit.Logger(t), Tasks: tm})
	toServer, clientOut := io.Pipe()
	clientIn, fromServer := io.Pipe()
	ss, err := s.MCP().Connect(context.Background(), s.Stdio(&mcp.IOTransport{Reader: toServer, Writer: fromServer}), nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = ss.Close(); clientOut.Close(); fromServer.Close() })

	lines := make(chan map[string]json.RawMessage, 16)
	go func() {
		sc := bufio.NewScanner(clientIn)
		sc.Buffer(make([]byte, 1<<20), 1<<20)
		for sc.Scan() {
			var m map[string]json.RawMessage
			if json.Unmarshal(sc.Bytes(), &m) == nil {
				lines <- m
			}
		}
		close(lines)
	}()
	send := func(msg string) {
		t.Helper()
		if _, err := io.WriteString(clientOut, msg+"\n"); err != nil {
			t.Fatal(err)
		}
	}
	// next returns the next message whose id or method is want.
	next := func(want string) map[string]json.RawMessage {
		t.Helper()
		timeout := time.After(30 * time.Second)
		for {
			select {
			case m, ok := <-lines:
				if !ok {
					t.Fatalf("the server's output ended before %s", want)
				}
				if string(m["id"]) == want || string(m["method"]) == `"`+want+`"` {
					return m
				}
			case <-timeout:
				t.Fatalf("no %s within 30 s", want)
			}
		}
	}

	send(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}`)
	if init := next("1"); !strings.Contains(string(init["result"]), `"tasks":{"list":{},"cancel":{},"requests":{"tools":{"call":{}}}}`) {
		t.Fatalf("initialize: %s, want capabilities.tasks", init["result"])
	}
	send(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	send(`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"sleep","arguments":{"ms":50},"task":{}}}`)
	var created struct {
		Task struct {
			TaskID, Status string
		} `json:"task"`
	}
	if m := next("2"); json.Unmarshal(m["result"], &created) != nil || created.Task.TaskID == "" || created.Task.Status != "working" {
		t.Fatalf("tools/call with params.task: %s %s, want a CreateTaskResult", m["result"], m["error"])
	}
	var note struct {
		TaskID, Status string
	}
	if m := next("notifications/tasks/status"); json.Unmarshal(m["params"], &note) != nil || note.TaskID != created.Task.TaskID || note.Status != "completed" {
		t.Fatalf("notifications/tasks/status %s, want %s completed", m["params"], created.Task.TaskID)
	}
	send(`{"jsonrpc":"2.0","id":3,"method":"tasks/list","params":{"_meta":{"io.modelcontextprotocol/clientCapabilities":{"extensions":{"io.modelcontextprotocol/tasks":{}}}}}}`)
	if m := next("3"); !strings.Contains(string(m["error"]), `"code":-32601`) || !strings.Contains(string(m["error"]), "core tasks of MCP 2025-11-25") {
		t.Fatalf("tasks/list in the extension's dialect: %s %s, want -32601 naming the core tasks", m["result"], m["error"])
	}
	send(`{"jsonrpc":"2.0","id":4,"method":"tasks/list","params":{}}`)
	if m := next("4"); !strings.Contains(string(m["result"]), created.Task.TaskID) {
		t.Fatalf("tasks/list: %s %s, want %s", m["result"], m["error"], created.Task.TaskID)
	}

	// The extension's dialect on the same connection (--task-after 0 here:
	// a task at once), polled with tasks/get to its result.
	send(`{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"sleep","arguments":{"ms":50},` + optIn + `}}`)
	var ext struct {
		ResultType, TaskID, Status string
		Result                     json.RawMessage
	}
	if m := next("5"); json.Unmarshal(m["result"], &ext) != nil || ext.ResultType != "task" || ext.TaskID == "" {
		t.Fatalf("tools/call with the extension's opt-in: %s %s, want a task", m["result"], m["error"])
	}
	for id := 6; ext.Status != "completed"; id++ {
		if id > 6+300 {
			t.Fatalf("extension task %s still %s after 300 polls", ext.TaskID, ext.Status)
		}
		send(fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tasks/get","params":{"taskId":%q,%s}}`, id, ext.TaskID, optIn))
		if m := next(fmt.Sprint(id)); json.Unmarshal(m["result"], &ext) != nil || ext.Status == "failed" || ext.Status == "cancelled" {
			t.Fatalf("tasks/get: %s %s", m["result"], m["error"])
		}
		if ext.Status == "working" {
			time.Sleep(10 * time.Millisecond) // the poll interval of a client, not a wait for an outcome
		}
	}
	if !strings.Contains(string(ext.Result), `"slept_ms":50`) {
		t.Fatalf("the extension task's result: %s", ext.Result)
	}
}
