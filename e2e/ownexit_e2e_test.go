package e2e_test

import (
	"context"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/opentool-host/opentool-host/frontend/mcpapi"
)

// TestMCPClientsOwnServerExitRestarts: a client session with roots (so
// a server process of its own, testkit/plugins/sessionmcp) whose own
// server process is killed during a call gets that call's end as the
// plugin's exit (plugin_exited, retryable, naming the process's exit
// status), and the next call of the SAME session is served by a new own
// process that knows it as the first did (clientInfo, roots, log
// level); a second kill is survived the same way (the restart backoff
// lets the second restart through), and each exit is logged and
// counted on /health (client_restarts).
func TestMCPClientsOwnServerExitRestarts(t *testing.T) {
	dir := t.TempDir()
	sessDeclare(t, dir, "who", nil)
	hp := startHostProc(t, dir)
	shared := msServerPID(t, hp.url, hp.cmd.Process.Pid, "who")
	a := sessConnect(t, hp.url, "client-a", "file:///a", "")
	if err := a.cs.SetLoggingLevel(context.Background(), &mcp.SetLoggingLevelParams{Level: "info"}); err != nil {
		t.Fatal(err)
	}
	w := a.whoami(t)
	if w.PID == shared || w.Client != "client-a" {
		t.Fatalf("a's server saw %+v (shared %d): want one of its own", w, shared)
	}
	for round := range 2 {
		ended := make(chan *mcp.CallToolResult, 1)
		go func() {
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			res, err := a.cs.CallTool(ctx, &mcp.CallToolParams{Name: "hang", Arguments: map[string]any{}})
			if err != nil {
				t.Errorf("hang: %v", err)
			}
			ended <- res
		}()
		a.waitLog(t, "hanging")
		if err := syscall.Kill(w.PID, syscall.SIGKILL); err != nil {
			t.Fatal(err)
		}
		var res *mcp.CallToolResult
		select {
		case res = <-ended:
		case <-time.After(30 * time.Second):
			t.Fatalf("round %d: the call in flight at the kill never ended", round)
		}
		if res == nil {
			t.FailNow()
		}
		meta, _ := res.Meta[mcpapi.ErrorMetaKey].(map[string]any)
		text := ""
		if len(res.Content) == 1 {
			text = res.Content[0].(*mcp.TextContent).Text
		}
		t.Logf("round %d: the call in flight: %s %v", round, text, meta)
		if !res.IsError || meta["kind"] != "plugin_exited" || meta["retryable"] != true || meta["status"] != "signal: killed" || !strings.Contains(text, "own server process exited") {
			t.Fatalf("round %d: the call in flight at the kill of the client's own server: %s %v; want plugin_exited, retryable, status signal: killed, naming the client's own process", round, text, meta)
		}
		n := a.whoami(t) // at once: the session that ended is forgotten before the call's error
		if n.PID == w.PID || n.PID == shared || n.Client != "client-a" || !slices.Equal(n.Roots, []string{"file:///a"}) || n.Level != "info" {
			t.Fatalf("round %d: the next call after the kill of %d: %+v (shared %d); want a new own server that knows client-a", round, w.PID, n, shared)
		}
		w = n
	}
	if got := strings.Count(hp.logs.String(), "a client session's own server process exited"); got != 2 {
		t.Errorf("the exits were logged %d times, want 2:\n%s", got, hp.logs.String())
	}
	if p := health(t, hp.url).plugin("who"); p.ClientRestarts != 2 || p.State != "ready" {
		t.Errorf("/health: who is %s with client_restarts %d, want ready and 2", p.State, p.ClientRestarts)
	}
}
