package e2e_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/opentool-host/opentool-host/testkit"
)

// TestMCPRootedClientOneProcess: one client that declares roots (the Go
// SDK's default client) of a per-client server runs one server process
// once the shared session went unused for "sharedIdle" (parked: /health
// shows no pid); an /opentool/call of the server's tool then starts the
// shared session again and is answered; parked again, a
// tools/list_changed the server sends on the client's own session has
// the tools listed on the shared session (started again for it).
func TestMCPRootedClientOneProcess(t *testing.T) {
	dir := t.TempDir()
	sessDeclare(t, dir, "who", map[string]any{"sharedIdle": "300ms"})
	hp := startHostProc(t, dir)
	host := hp.cmd.Process.Pid
	shared := msServerPID(t, hp.url, host, "who")
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cl := mcp.NewClient(&mcp.Implementation{Name: "rooted", Version: "1"}, nil)
	cs, err := cl.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: hp.url + "/mcp"}, &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = cs.Close() }()
	out, isErr := msCall(t, cs, "whoami", nil)
	var w whoami
	if isErr || json.Unmarshal([]byte(out), &w) != nil || w.Client != "rooted" {
		t.Fatalf("whoami = %s (isError %v), want the client's own session", out, isErr)
	}
	parked := func(what string) {
		t.Helper()
		testkit.Eventually(t, 15*time.Second, what, func() bool {
			kids := msChildren(host)
			return len(kids) == 1 && kids[0] == w.PID && pluginPIDs(t, hp.url)["who"] == 0
		})
		if !alive(w.PID) {
			t.Fatalf("the client's own server process %d ended", w.PID)
		}
	}
	parked("one server process (the client's own) for one client with roots")
	if alive(shared) {
		t.Errorf("the shared session's process %d still runs", shared)
	}
	idle := "no line"
	for l := range strings.Lines(hp.logs.String()) {
		if strings.Contains(l, "shared session idle") {
			idle = strings.TrimSpace(l)
			break
		}
	}
	if want := fmt.Sprintf("pid=%d", shared); !strings.Contains(idle, want) {
		t.Errorf("the log's line of the parking says %q; want the process that stops (%s)", idle, want)
	}
	st, _, body := httpDo(t, http.MethodPost, hp.url+"/opentool/call", "", `{"jsonrpc":"2.0","method":"whoami","params":{},"id":1}`)
	if st != 200 || !strings.Contains(body, `opentool-host-mcp-adapter`) {
		t.Fatalf("/opentool/call whoami with the shared session parked: %d %s", st, body)
	}
	parked("the shared session parked again after the call")
	if out, isErr := msCall(t, cs, "retool", map[string]any{"whoami": "require_n"}); isErr {
		t.Fatalf("retool: %s", out)
	}
	testkit.Eventually(t, 15*time.Second, "the shared session started again to list the tools after list_changed", func() bool {
		return pluginPIDs(t, hp.url)["who"] != 0
	})
	parked("parked once more")
}
