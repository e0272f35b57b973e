package e2e_test

import (
	"context"
	"fmt"
	"net/http"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// logClient is an MCP client session on the host's /mcp with API key
// key that records the data of every notifications/message it receives.
type logClient struct {
	cs  *mcp.ClientSession
	mu  sync.Mutex
	got []string
	new chan struct{} // a value after each message (buffer 1)
	// resourceLists and toolLists get a value for each
	// notifications/resources/list_changed and tools/list_changed
	// (buffer 16).
	resourceLists, toolLists chan struct{}
}

// connectLogClient connects a log-recording MCP client with key; level,
// when set, is sent as logging/setLevel.
func connectLogClient(t *testing.T, hp *hostProc, key string, level mcp.LoggingLevel) *logClient {
	t.Helper()
	lc := &logClient{new: make(chan struct{}, 1), resourceLists: make(chan struct{}, 16), toolLists: make(chan struct{}, 16)}
	c := mcp.NewClient(&mcp.Implementation{Name: "logs-" + key, Version: "1"}, &mcp.ClientOptions{
		LoggingMessageHandler: func(_ context.Context, req *mcp.LoggingMessageRequest) {
			lc.mu.Lock()
			lc.got = append(lc.got, fmt.Sprint(req.Params.Data))
			lc.mu.Unlock()
			select {
			case lc.new <- struct{}{}:
			default:
			}
		},
		ResourceListChangedHandler: func(context.Context, *mcp.ResourceListChangedRequest) { signal(lc.resourceLists) },
		ToolListChangedHandler:     func(context.Context, *mcp.ToolListChangedRequest) { signal(lc.toolLists) },
	})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	tr := &mcp.StreamableClientTransport{Endpoint: hp.url + "/mcp", HTTPClient: &http.Client{Transport: bearer(key)}}
	// 2025-11-25: a session (logging/setLevel is not a method of the
	// sessionless 2026-07-28, whose requests carry their level).
	cs, err := c.Connect(ctx, tr, &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cs.Close() })
	if level != "" {
		if err := cs.SetLoggingLevel(ctx, &mcp.SetLoggingLevelParams{Level: level}); err != nil {
			t.Fatal(err)
		}
	}
	lc.cs = cs
	return lc
}

// signal puts a value on c unless it is full.
func signal(c chan struct{}) {
	select {
	case c <- struct{}{}:
	default:
	}
}

// waitFor waits until the client received message data.
func (lc *logClient) waitFor(t *testing.T, data string) []string {
	t.Helper()
	return lc.waitCount(t, data, 1)
}

// waitCount waits until the client received message data n times.
func (lc *logClient) waitCount(t *testing.T, data string, n int) []string {
	t.Helper()
	deadline := time.After(30 * time.Second)
	for {
		lc.mu.Lock()
		got := slices.Clone(lc.got)
		lc.mu.Unlock()
		seen := 0
		for _, g := range got {
			if g == data {
				seen++
			}
		}
		if seen >= n {
			return got
		}
		select {
		case <-lc.new:
		case <-deadline:
			t.Fatalf("no log message %q; got %q", data, got)
		}
	}
}

// TestMCPServerLogsOutsideCalls: what a declared MCP server of
// "sessions": "shared" logs in its own time, outside any call, reaches every MCP client session that asked
// for log messages, at its own level, and only those whose key may see the
// server (issue 32: through the host a client used to get only the
// messages sent during its own call).
func TestMCPServerLogsOutsideCalls(t *testing.T) {
	dir := t.TempDir()
	// "shared": one server session for every caller, whose messages
	// outside calls belong to no client (mcpsessions_e2e_test.go: each
	// client's own session, the default).
	msShared(t, msDeclare(t, dir, "notes", "--rich"))
	msShared(t, msDeclare(t, dir, "other", "--rich"))
	writeTestFile(t, filepath.Join(dir, "other.policy.json"), `{"prefix":"other_"}`)
	keys := filepath.Join(t.TempDir(), "keys.json")
	writeTestFile(t, keys, `{"keys":[{"name":"all","key":"ka","allow":["*"]},{"name":"other-only","key":"ko","allow":["plugin:other"]}]}`)
	hp := startHostProc(t, dir, "--api-keys-file", keys)

	info := connectLogClient(t, hp, "ka", "info")   // every message of notes
	errs := connectLogClient(t, hp, "ka", "error")  // notes' error only
	quiet := connectLogClient(t, hp, "ka", "")      // asked for none
	other := connectLogClient(t, hp, "ko", "debug") // may not see notes

	if out := llCall(t, info.cs, &mcp.CallToolParams{Name: "log_later", Arguments: map[string]any{"n": 3, "delay_ms": 20}}); !strings.Contains(out, "will log 3") {
		t.Fatalf("log_later = %q", out)
	}
	if got := info.waitFor(t, "later done"); !slices.Equal(got, []string{"later 1", "later 2", "later 3", "later done"}) {
		t.Errorf("the client at level info got %q", got)
	}
	if got := errs.waitFor(t, "later done"); !slices.Equal(got, []string{"later done"}) {
		t.Errorf("the client at level error got %q", got)
	}
	// The key that may not see notes: its own server's messages arrive,
	// none of notes' before them.
	if out := llCall(t, other.cs, &mcp.CallToolParams{Name: "other_log_later", Arguments: map[string]any{"n": 1, "delay_ms": 100}}); !strings.Contains(out, "will log 1") {
		t.Fatalf("other_log_later = %q", out)
	}
	if got := other.waitFor(t, "later done"); !slices.Equal(got, []string{"later 1", "later done"}) {
		t.Errorf("a key that may not see notes got %q", got)
	}
	// info gets other's "later done" too: its key sees every plugin.
	info.waitCount(t, "later done", 2)
	// quiet asked for no log messages and got none.
	quiet.mu.Lock()
	defer quiet.mu.Unlock()
	if len(quiet.got) != 0 {
		t.Errorf("a client that set no log level got %q", quiet.got)
	}
}

// TestMCPServerLogsOutsideCallsPerClient: what a declared MCP server of
// per-client sessions (the default) logs in its own time, outside any call,
// reaches the client whose session it is, at its level, and no other.
func TestMCPServerLogsOutsideCallsPerClient(t *testing.T) {
	dir := t.TempDir()
	msDeclare(t, dir, "notes", "--rich")
	hp := startHostProc(t, dir)

	info := connectLogClient(t, hp, "", "info")
	errs := connectLogClient(t, hp, "", "error")
	for _, lc := range []*logClient{info, errs} {
		// A call before: the client's own server session exists already.
		llCall(t, lc.cs, &mcp.CallToolParams{Name: "repeat", Arguments: map[string]any{"text": "hi"}})
		if out := llCall(t, lc.cs, &mcp.CallToolParams{Name: "log_later", Arguments: map[string]any{"n": 3, "delay_ms": 20}}); !strings.Contains(out, "will log 3") {
			t.Fatalf("log_later = %q", out)
		}
	}
	if got := info.waitFor(t, "later done"); !slices.Equal(got, []string{"later 1", "later 2", "later 3", "later done"}) {
		t.Errorf("the client at level info got %q", got)
	}
	if got := errs.waitFor(t, "later done"); !slices.Equal(got, []string{"later done"}) {
		t.Errorf("the client at level error got %q", got)
	}
}
