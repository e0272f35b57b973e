package e2e_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/opentool-host/opentool-host/testkit"
)

// hostileModes are the attacks of testkit/plugins/hostilemcp, one
// declared server each.
var hostileModes = []string{"bigline", "deep", "badutf8", "notify", "requests", "garbage", "exit", "hang"}

// TestHostileMCPServers: declared MCP servers, for which the host is the
// MCP client in its own process, attack it (a 1 GiB line, JSON nested a
// million deep, invalid UTF-8, a storm of notifications, a storm of
// requests, garbage, an exit, a hang). Each attack is bounded to its
// server: the neighbour plugin serves throughout, the host's memory stays
// far below what the attacks send, the server is killed and restarted
// where it broke the protocol, and the caller gets a clear error.
func TestHostileMCPServers(t *testing.T) {
	dir := t.TempDir()
	testkit.InstallPlugin(t, dir, "calculator", "./plugins/calculator")
	bin := testkit.Build(t, "./testkit/plugins/hostilemcp")
	for _, m := range hostileModes {
		// "shared": the attacks and the stats that count them reach one
		// server process (each MCP client session has its own otherwise).
		b, _ := json.Marshal(map[string]any{"mcpServers": map[string]any{m: map[string]any{"command": bin, "args": []string{m}, "sessions": "shared"}}})
		writeTestFile(t, filepath.Join(dir, m+".mcp.json"), string(b))
		timeout := 3000 // hang's call times out
		if m == "requests" {
			timeout = 60000 // 10,000 round trips on a busy machine
		}
		writeTestFile(t, filepath.Join(dir, m+".policy.json"), fmt.Sprintf(`{"prefix":"%s_","timeout_ms":%d}`, m, timeout))
	}
	hp := startHostProc(t, dir)
	neighbour := func(when string) {
		t.Helper()
		if _, m := rpc(t, hp.url, `{"jsonrpc":"2.0","method":"add","params":{"a":2,"b":3},"id":9}`); fmt.Sprint(m["result"]) != "map[result:5]" {
			t.Fatalf("the neighbour plugin %s: %v", when, m)
		}
	}
	attack := func(m string) (map[string]any, []byte) {
		t.Helper()
		resp, err := http.Post(hp.url+"/opentool/call", "application/json", strings.NewReader(`{"jsonrpc":"2.0","method":"`+m+`_attack","id":1}`))
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		raw, _ := io.ReadAll(resp.Body)
		var r map[string]any
		if err := json.Unmarshal(raw, &r); err != nil {
			t.Fatalf("%s: the host's answer is not JSON: %v: %q", m, err, raw)
		}
		return r, raw
	}
	// pong waits until server m answers ping (again), and returns what.
	pong := func(m string) string {
		t.Helper()
		var text string
		testkit.Eventually(t, 30*time.Second, m+" answers ping", func() bool {
			_, r := rpc(t, hp.url, `{"jsonrpc":"2.0","method":"`+m+`_ping","id":2}`)
			text = fmt.Sprint(r["result"])
			return strings.Contains(text, "pong")
		})
		return text
	}
	for _, m := range hostileModes {
		pong(m)
	}

	t.Run("bigline", func(t *testing.T) {
		pid := pluginPIDs(t, hp.url)["bigline"]
		r, _ := attack("bigline")
		if r["error"] == nil {
			t.Fatalf("a 1 GiB line answered %v", r)
		}
		neighbour("after a 1 GiB line")
		testkit.Eventually(t, 30*time.Second, "bigline restarted", func() bool {
			now := pluginPIDs(t, hp.url)["bigline"]
			return now != 0 && now != pid
		})
		pong("bigline")
		if !strings.Contains(hp.logs.String(), "frame exceeded the configured maximum line length") {
			t.Errorf("the host did not say why it killed the server:\n%s", tailOf(hp.logs.String(), 40))
		}
	})
	t.Run("deep", func(t *testing.T) {
		r, _ := attack("deep")
		if r["error"] == nil {
			t.Fatalf("JSON nested a million deep answered %v", r)
		}
		neighbour("after deeply nested JSON")
		pong("deep")
	})
	t.Run("badutf8", func(t *testing.T) {
		r, raw := attack("badutf8")
		if !utf8.Valid(raw) {
			t.Fatalf("the host passed on bytes that are not UTF-8: %q", raw)
		}
		if !strings.Contains(fmt.Sprint(r["result"]), "bytes") {
			t.Fatalf("badutf8 = %v", r)
		}
	})
	t.Run("notify", func(t *testing.T) {
		if r, _ := attack("notify"); !strings.Contains(fmt.Sprint(r["result"]), "storm") {
			t.Fatalf("notify = %v", r)
		}
		neighbour("during a storm of 50,000 notifications")
		// A pong that counts them all was written after the last one.
		testkit.Eventually(t, 60*time.Second, "the storm read", func() bool { return strings.Contains(pong("notify"), "notified=50000") })
		if n := strings.Count(hp.logs.String(), "spam "); n > 1000 {
			t.Errorf("the host logged %d of the server's 50,000 log messages; its log is not bounded", n)
		}
	})
	t.Run("requests", func(t *testing.T) {
		// An OpenTool caller answers no requests: every one is refused.
		if r, _ := attack("requests"); !strings.Contains(fmt.Sprint(r["result"]), "sent 10000") {
			t.Fatalf("requests = %v", r)
		}
		neighbour("during a storm of 10,000 requests")
		testkit.Eventually(t, 30*time.Second, "every request answered", func() bool {
			return strings.Contains(pong("requests"), "answered=0 refused=10000")
		})
		// An MCP client that takes its time: at most 16 of the server's
		// requests wait for it at once; the rest are refused at once.
		var waiting, most, answered atomic.Int64
		release := make(chan struct{})
		var once sync.Once
		open := func() { once.Do(func() { close(release) }) }
		t.Cleanup(open)
		c := mcp.NewClient(&mcp.Implementation{Name: "slow", Version: "1"}, &mcp.ClientOptions{
			CreateMessageHandler: func(ctx context.Context, _ *mcp.CreateMessageRequest) (*mcp.CreateMessageResult, error) {
				n := waiting.Add(1)
				defer waiting.Add(-1)
				for {
					m := most.Load()
					if n <= m || most.CompareAndSwap(m, n) {
						break
					}
				}
				select {
				case <-release:
				case <-ctx.Done():
					return nil, ctx.Err()
				}
				answered.Add(1)
				return &mcp.CreateMessageResult{Role: "assistant", Content: &mcp.TextContent{Text: "ok"}, Model: "m"}, nil
			},
		})
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		defer cancel()
		// 2025-11-25: a session carries the server's requests to the client.
		cs, err := c.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: hp.url + "/mcp"}, &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
		if err != nil {
			t.Fatal(err)
		}
		defer cs.Close()
		done := make(chan error, 1)
		go func() {
			_, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "requests_attack"})
			done <- err
		}()
		testkit.Eventually(t, 30*time.Second, "the client holds requests", func() bool { return waiting.Load() > 0 })
		neighbour("while a client holds the server's requests")
		open()
		if err := <-done; err != nil {
			t.Fatalf("requests_attack over MCP: %v", err)
		}
		if m := most.Load(); m > 16 {
			t.Errorf("the client held %d of the server's requests at once; the host lets 16 wait", m)
		}
		// Every request is answered: 16 at most with the client's result
		// while it held them, the others refused at once.
		testkit.Eventually(t, 30*time.Second, "every request answered", func() bool {
			st := pong("requests")
			var a, r int
			_, err := fmt.Sscanf(st[strings.Index(st, "answered="):], "answered=%d refused=%d", &a, &r)
			return err == nil && a+r == 20000 && a >= 1
		})
	})
	t.Run("garbage", func(t *testing.T) {
		if r, _ := attack("garbage"); r["error"] == nil {
			t.Fatalf("garbage answered %v", r)
		}
		neighbour("after garbage")
		pong("garbage")
	})
	t.Run("exit", func(t *testing.T) {
		r, _ := attack("exit")
		if !strings.Contains(fmt.Sprint(r["error"]), "exited") {
			t.Fatalf("exit = %v", r)
		}
		neighbour("after a server exited")
		pong("exit")
	})
	t.Run("hang", func(t *testing.T) {
		r, _ := attack("hang")
		if !strings.Contains(fmt.Sprint(r["error"]), "timed out") && !strings.Contains(fmt.Sprint(r["error"]), "deadline") {
			t.Fatalf("hang = %v", r)
		}
		neighbour("after a hang")
		pong("hang")
	})

	// What the attacks sent (over 1 GiB, millions of messages) never
	// reached the host's memory.
	if hwm := vmKB(t, hp.cmd.Process.Pid, "VmHWM"); hwm > 400<<10 {
		t.Errorf("the host's peak RSS is %d MiB", hwm>>10)
	}
}

// vmKB reads field (VmHWM, VmRSS) of /proc/PID/status, in KiB.
func vmKB(t *testing.T, pid int, field string) int {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, field+":"); ok {
			n, _ := strconv.Atoi(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")))
			return n
		}
	}
	t.Fatalf("no %s in /proc/%d/status", field, pid)
	return 0
}

// tailOf is the last n lines of s.
func tailOf(s string, n int) string {
	lines := strings.Split(s, "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}
