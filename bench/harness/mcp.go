package harness

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// MCP load: the load generator speaks MCP streamable HTTP itself (one
// POST per message, headers and SSE framing as the 2025-11-25 revision
// has them), so that what it measures is the server's side, as for
// /opentool/call; and, for the floor of an MCP server behind the host, it
// runs a Go SDK client of the server over stdio (MCPLoad.Stdio).

// MCPProtocolVersion is the MCP revision the load generator speaks over
// HTTP (the revision of the conformance suite, with initialize).
const MCPProtocolVersion = "2025-11-25"

// MCPLoad makes a LoadRequest a series of MCP tools/call requests.
type MCPLoad struct {
	// Sessions: each client opens one session (initialize, then
	// notifications/initialized) on its warm-up call and sends every
	// tools/call of the following runs with its Mcp-Session-Id. Without
	// it every tools/call is a POST of its own (a stateless server).
	Sessions bool `json:"sessions,omitempty"`
	// Stdio, when set, is the command (argv) of an MCP server: the load
	// generator starts it once and calls it with a Go SDK client over
	// stdio, Clients calls at a time on that one session (URL and Body
	// are not used).
	Stdio []string `json:"stdio,omitempty"`
	// SDK, when set, makes each client a Go SDK client session of URL
	// (streamable HTTP, its standalone GET stream included, as an MCP
	// client application has), connected at its client's first call and
	// kept from one run to the next of the same URL and Clients until a
	// LoadRequest with Close: each call is a CallTool of Tool with Args
	// (Body is not used). A call that fails (an error, an isError result,
	// no text Contains, a client that cannot connect) is counted in
	// LoadResult.Failed and its client goes on; the client connects
	// again at its next call when it could not. A run ends within
	// SDKRunTimeout: calls left then fail at once.
	SDK bool `json:"sdk,omitempty"`
	// Tool and Args are the tool called over stdio or with SDK and its
	// arguments.
	Tool string          `json:"tool,omitempty"`
	Args json.RawMessage `json:"args,omitempty"`
}

// SDKRunTimeout bounds one run of MCPLoad.SDK calls, so that a server
// that stops answering does not hold the benchmark.
const SDKRunTimeout = 2 * time.Minute

// MCPCallBody returns the JSON-RPC tools/call request of tool with
// arguments args (a JSON object) and the numeric id.
func MCPCallBody(tool string, args []byte, id int) []byte {
	b := make([]byte, 0, len(args)+len(tool)+96)
	b = append(b, `{"jsonrpc":"2.0","id":`...)
	b = strconv.AppendInt(b, int64(id), 10)
	b = append(b, `,"method":"tools/call","params":{"name":`...)
	b = strconv.AppendQuote(b, tool)
	b = append(b, `,"arguments":`...)
	b = append(b, args...)
	return append(b, `}}`...)
}

var (
	mcpAccept = []string{"application/json, text/event-stream"}
	mcpVer    = []string{MCPProtocolVersion}
)

// mcpPost sends one MCP message and reads the response into *buf; it
// returns the status, the body (aliasing *buf) and the Mcp-Session-Id
// the server gave.
func mcpPost(ctx context.Context, c *http.Client, url, session string, body []byte, buf *bytes.Buffer) (int, []byte, string, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		return 0, nil, "", err
	}
	req.Header["Content-Type"] = jsonCT
	req.Header["Accept"] = mcpAccept
	req.Header["Mcp-Protocol-Version"] = mcpVer
	if session != "" {
		req.Header["Mcp-Session-Id"] = []string{session}
	}
	resp, err := c.Do(req)
	if err != nil {
		return 0, nil, "", err
	}
	defer resp.Body.Close()
	buf.Reset()
	if _, err := buf.ReadFrom(resp.Body); err != nil {
		return resp.StatusCode, nil, "", err
	}
	return resp.StatusCode, buf.Bytes(), resp.Header.Get("Mcp-Session-Id"), nil
}

// mcpInitialize opens a session at url and returns its id.
func mcpInitialize(ctx context.Context, c *http.Client, url string, buf *bytes.Buffer) (string, error) {
	init := []byte(`{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"` + MCPProtocolVersion +
		`","capabilities":{},"clientInfo":{"name":"opentool-bench","version":"1"}}}`)
	st, resp, sid, err := mcpPost(ctx, c, url, "", init, buf)
	switch {
	case err != nil:
		return "", err
	case st != http.StatusOK:
		return "", fmt.Errorf("initialize: HTTP %d: %.200s", st, resp)
	case sid == "":
		return "", fmt.Errorf("initialize: no Mcp-Session-Id (a stateless server?): %.200s", resp)
	}
	st, resp, _, err = mcpPost(ctx, c, url, sid, []byte(`{"jsonrpc":"2.0","method":"notifications/initialized"}`), buf)
	if err != nil {
		return "", err
	}
	if st != http.StatusAccepted {
		return "", fmt.Errorf("notifications/initialized: HTTP %d: %.200s", st, resp)
	}
	return sid, nil
}

// runMCPHTTP runs req (an MCP tools/call over HTTP) with c; sessions
// holds each client's session id, kept from one run to the next.
func runMCPHTTP(c *http.Client, req *LoadRequest, sessions []string) LoadResult {
	ctx := context.Background()
	bufs := make([]bytes.Buffer, req.Clients)
	return RunLocal(req.Clients, req.N, req.Warm, func(w int) error {
		if req.MCP.Sessions && sessions[w] == "" {
			sid, err := mcpInitialize(ctx, c, req.URL, &bufs[w])
			if err != nil {
				return err
			}
			sessions[w] = sid
		}
		st, resp, _, err := mcpPost(ctx, c, req.URL, sessions[w], req.Body, &bufs[w])
		switch {
		case err != nil:
			return err
		case st != http.StatusOK:
			return fmt.Errorf("HTTP %d: %.200s", st, resp)
		case bytes.Contains(resp, []byte(`"isError":true`)) || !bytes.Contains(resp, []byte(req.Contains)):
			return fmt.Errorf("response %.300s does not contain %q", resp, req.Contains)
		}
		return nil
	})
}

// stdioClient is a Go SDK client session with an MCP server over stdio.
type stdioClient struct {
	cs *mcp.ClientSession
}

var (
	stdioMu      sync.Mutex
	stdioClients = map[string]*stdioClient{}
)

// stdioSession returns the session with the server argv runs, starting
// it on first use.
func stdioSession(argv []string) (*mcp.ClientSession, error) {
	stdioMu.Lock()
	defer stdioMu.Unlock()
	key := fmt.Sprint(argv)
	if c := stdioClients[key]; c != nil {
		return c.cs, nil
	}
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Stderr = io.Discard
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "opentool-bench", Version: "1"}, nil).
		Connect(context.Background(), &mcp.CommandTransport{Command: cmd}, &mcp.ClientSessionOptions{ProtocolVersion: MCPProtocolVersion})
	if err != nil {
		return nil, fmt.Errorf("MCP server %s over stdio: %w", argv[0], err)
	}
	stdioClients[key] = &stdioClient{cs: cs}
	return cs, nil
}

// closeStdio ends every stdio session (and its server).
func closeStdio() {
	stdioMu.Lock()
	defer stdioMu.Unlock()
	for k, c := range stdioClients {
		_ = c.cs.Close()
		delete(stdioClients, k)
	}
}

// runMCPStdio runs req's calls over the stdio session of req.MCP.Stdio.
func runMCPStdio(req *LoadRequest) LoadResult {
	cs, err := stdioSession(req.MCP.Stdio)
	if err != nil {
		return LoadResult{Err: err.Error()}
	}
	ctx := context.Background()
	return RunLocal(req.Clients, req.N, req.Warm, func(int) error {
		return callTool(ctx, cs, req)
	})
}

// callTool calls req.MCP.Tool with req.MCP.Args on cs and checks the
// result: no isError, a first content block of text that contains
// req.Contains (any text when "").
func callTool(ctx context.Context, cs *mcp.ClientSession, req *LoadRequest) error {
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: req.MCP.Tool, Arguments: req.MCP.Args})
	if err != nil {
		return err
	}
	if res.IsError || len(res.Content) == 0 {
		if len(res.Content) > 0 {
			if t, ok := res.Content[0].(*mcp.TextContent); ok {
				return fmt.Errorf("tools/call: an error result: %.300s", t.Text)
			}
		}
		return errors.New("tools/call: an error result or no content")
	}
	if t, ok := res.Content[0].(*mcp.TextContent); !ok || !strings.Contains(t.Text, req.Contains) {
		return fmt.Errorf("tools/call: content %v, want the text %q", res.Content[0], req.Contains)
	}
	return nil
}

// sdkClients are the Go SDK client sessions of one URL and number of
// clients (MCPLoad.SDK), one per client, nil until it connects.
type sdkClients struct {
	url      string
	hc       *http.Client
	sessions []*mcp.ClientSession
}

// newSDKClients returns clients not yet connected to url; their HTTP
// client keeps two connections per session (a POST and the standalone
// GET stream) and bounds no request, so that the GET streams last; with
// authorization ("" for none) as every request's Authorization header.
func newSDKClients(url string, clients int, authorization string) *sdkClients {
	return &sdkClients{url: url, hc: WithAuthorization(NewHTTPClient(2*clients, 0), authorization), sessions: make([]*mcp.ClientSession, clients)}
}

// runMCPSDK runs req (MCPLoad.SDK) on s's sessions.
func runMCPSDK(s *sdkClients, req *LoadRequest) LoadResult {
	ctx, cancel := context.WithTimeout(context.Background(), SDKRunTimeout)
	defer cancel()
	return RunLocal(req.Clients, req.N, req.Warm, func(w int) error {
		if s.sessions[w] == nil {
			cs, err := mcp.NewClient(&mcp.Implementation{Name: "opentool-bench", Version: "1"}, nil).
				Connect(ctx, &mcp.StreamableClientTransport{Endpoint: s.url, HTTPClient: s.hc}, &mcp.ClientSessionOptions{ProtocolVersion: MCPProtocolVersion})
			if err != nil {
				return &CountedFailure{Err: fmt.Errorf("connect: %w", err)}
			}
			s.sessions[w] = cs
		}
		if err := callTool(ctx, s.sessions[w], req); err != nil {
			return &CountedFailure{Err: err}
		}
		return nil
	})
}

// closeSDK ends the sessions in sdk of url (every one when url is "")
// and forgets them.
func closeSDK(sdk map[string]*sdkClients, url string) {
	for k, s := range sdk {
		if url != "" && s.url != url {
			continue
		}
		for _, cs := range s.sessions {
			if cs != nil {
				_ = cs.Close()
			}
		}
		s.hc.CloseIdleConnections()
		delete(sdk, k)
	}
}
