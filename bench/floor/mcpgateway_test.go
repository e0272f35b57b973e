package floor

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// serverEnv makes the test binary, re-executed, a Go SDK MCP server over
// stdio with one tool, repeat {text} → the text (TestMain).
const serverEnv = "OPENTOOL_FLOOR_TEST_MCP_SERVER"

func TestMain(m *testing.M) {
	if os.Getenv(serverEnv) != "" {
		s := mcp.NewServer(&mcp.Implementation{Name: "floor-test", Version: "1"}, nil)
		type in struct {
			Text string `json:"text"`
		}
		mcp.AddTool(s, &mcp.Tool{Name: "repeat"}, func(_ context.Context, _ *mcp.CallToolRequest, a in) (*mcp.CallToolResult, any, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: a.Text}}}, nil, nil
		})
		if err := s.Run(context.Background(), &mcp.StdioTransport{}); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// post sends body to the gateway at url and returns the status and body.
func post(t *testing.T, url, body string) (int, string, http.Header) {
	t.Helper()
	resp, err := http.Post(url, "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, string(b), resp.Header
}

// TestMCPGateway runs the bare gateway in front of a real Go SDK server
// (this binary re-executed): initialize, concurrent calls each answered
// under its own id, a notification, a body that is not JSON-RPC, and a
// server that went away.
func TestMCPGateway(t *testing.T) {
	t.Setenv(serverEnv, "1")
	g, err := StartMCPGateway([]string{os.Args[0]}, "2025-11-25")
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(g)
	defer srv.Close()

	st, body, h := post(t, srv.URL, `{"jsonrpc":"2.0","id":"init","method":"initialize","params":{}}`)
	if st != http.StatusOK || h.Get("Mcp-Session-Id") != "floor" || !strings.Contains(body, `"id":"init"`) || !strings.Contains(body, `"protocolVersion":"2025-11-25"`) {
		t.Fatalf("initialize: %d %s %v", st, body, h)
	}
	var wg sync.WaitGroup
	for i := range 32 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			st, body, _ := post(t, srv.URL, fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"repeat","arguments":{"text":"t%d"}}}`, 1000+i, i))
			if st != http.StatusOK || !strings.HasPrefix(body, fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"result":`, 1000+i)) || !strings.Contains(body, fmt.Sprintf(`"text":"t%d"`, i)) {
				t.Errorf("call %d: %d %s", i, st, body)
			}
		}()
	}
	wg.Wait()
	if st, body, _ := post(t, srv.URL, `{"jsonrpc":"2.0","id":7,"method":"no/such"}`); st != http.StatusOK || !strings.Contains(body, `"id":7,"error":`) {
		t.Errorf("an unknown method: %d %s, want the server's error under id 7", st, body)
	}
	if st, _, _ := post(t, srv.URL, `{"jsonrpc":"2.0","method":"notifications/initialized"}`); st != http.StatusAccepted {
		t.Errorf("a notification: %d, want 202", st)
	}
	if st, _, _ := post(t, srv.URL, `[1,2]`); st != http.StatusBadRequest {
		t.Errorf("not a JSON-RPC request: %d, want 400", st)
	}
	g.Close()
	if st, body, _ := post(t, srv.URL, `{"jsonrpc":"2.0","id":8,"method":"tools/list"}`); st != http.StatusBadGateway {
		t.Errorf("after the server went away: %d %s, want 502", st, body)
	}
}
