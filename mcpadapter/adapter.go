package mcpadapter

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os/exec"
	"strings"
	"sync"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/opentool-host/opentool-host/internal/decl"
	"github.com/opentool-host/opentool-host/opentool"
	"github.com/opentool-host/opentool-host/pluginsdk"
)

// loadMargin is how long before the host's Load deadline the adapter
// gives up waiting for initialize, so that the host gets the reason and
// not its own timeout.
const loadMargin = 500 * time.Millisecond

// Adapter is a pluginsdk.Tool whose functions are the tools of one MCP
// server. It connects in the background (Connect); Load waits for the
// connection.
type Adapter struct {
	launch  decl.Launch
	log     hclog.Logger
	changed chan struct{}
	started time.Time

	ready chan struct{} // closed when the connection attempt ended
	cmd   *exec.Cmd     // the server's process; nil for a URL
	cs    *mcp.ClientSession
	err   error // why the connection failed (set before ready closes)

	mu   sync.RWMutex
	conv converted
}

var (
	_ pluginsdk.Tool            = (*Adapter)(nil)
	_ pluginsdk.JSONCaller      = (*Adapter)(nil)
	_ pluginsdk.DocumentWatcher = (*Adapter)(nil)
)

// New returns an Adapter for the declared server l, not yet connected.
func New(l decl.Launch, log hclog.Logger) *Adapter {
	return &Adapter{launch: l, log: log, changed: make(chan struct{}, 1), ready: make(chan struct{}), started: time.Now()}
}

// Connect starts the server (or reaches the remote one), initializes the
// MCP session and lists its tools, within initTimeout. It returns the
// session, or the error also given to Load. Call it once.
func (a *Adapter) Connect(ctx context.Context, initTimeout time.Duration) (*mcp.ClientSession, error) {
	defer close(a.ready)
	tr, cmd, err := transport(a.launch)
	if err != nil {
		a.err = fmt.Errorf("MCP server %q: %w", a.launch.Name, err)
		return nil, a.err
	}
	a.cmd = cmd
	c := mcp.NewClient(&mcp.Implementation{Name: "opentool-host-adapter", Version: "1"}, &mcp.ClientOptions{
		ToolListChangedHandler: func(context.Context, *mcp.ToolListChangedRequest) { go a.refresh() },
	})
	ictx, cancel := context.WithTimeout(ctx, initTimeout)
	defer cancel()
	cs, err := c.Connect(ictx, tr, nil)
	if err != nil {
		if ictx.Err() != nil {
			err = fmt.Errorf("MCP server %q did not answer initialize within %v", a.launch.Name, initTimeout)
		} else {
			err = fmt.Errorf("MCP server %q: initialize: %w", a.launch.Name, err)
		}
		a.err = err
		return nil, err
	}
	a.cs = cs
	if err := a.list(ictx); err != nil {
		a.err = err
		_ = cs.Close()
		return nil, err
	}
	return cs, nil
}

// refresh lists the tools again after notifications/tools/list_changed
// and reports the change to the host.
func (a *Adapter) refresh() {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := a.list(ctx); err != nil {
		a.log.Error("listing tools after list_changed failed; serving the previous list", "server", a.launch.Name, "error", err)
		return
	}
	select {
	case a.changed <- struct{}{}:
	default:
	}
}

// list lists every tool (all pages) and converts them.
func (a *Adapter) list(ctx context.Context) error {
	var tools []*mcp.Tool
	for t, err := range a.cs.Tools(ctx, nil) {
		if err != nil {
			return fmt.Errorf("MCP server %q: tools/list: %w", a.launch.Name, err)
		}
		tools = append(tools, t)
	}
	conv := convert(a.launch.Name, tools)
	for name, why := range conv.dropped {
		a.log.Warn("MCP tool not served: it cannot be expressed in OpenTool", "server", a.launch.Name, "tool", name, "reason", why)
	}
	a.mu.Lock()
	a.conv = conv
	a.mu.Unlock()
	return nil
}

// Load implements pluginsdk.Tool: the converted tool list, once the
// server has answered initialize. Errors: the connection's error, or
// that the server has not answered by shortly before ctx's deadline.
func (a *Adapter) Load(ctx context.Context) (*opentool.OpenTool, error) {
	wait := ctx
	if d, ok := ctx.Deadline(); ok {
		var cancel context.CancelFunc
		wait, cancel = context.WithDeadline(ctx, d.Add(-loadMargin))
		defer cancel()
	}
	select {
	case <-a.ready:
	case <-wait.Done():
		return nil, pluginsdk.ToolFailure("MCP server %q did not answer initialize within %v", a.launch.Name, time.Since(a.started).Round(100*time.Millisecond))
	}
	if a.err != nil {
		return nil, pluginsdk.ToolFailure("%v", a.err)
	}
	a.mu.RLock()
	defer a.mu.RUnlock()
	return a.conv.doc, nil
}

// DocumentChanged implements pluginsdk.DocumentWatcher: a value after
// each list_changed whose new list loaded.
func (a *Adapter) DocumentChanged() <-chan struct{} { return a.changed }

// Call implements pluginsdk.Tool by way of CallJSON.
func (a *Adapter) Call(ctx context.Context, name string, args map[string]any) (map[string]any, error) {
	b, err := json.Marshal(args)
	if err != nil {
		return nil, pluginsdk.InvalidArguments("arguments: %v", err)
	}
	out, err := a.CallJSON(ctx, name, b)
	if err != nil {
		return nil, err
	}
	var m map[string]any
	return m, json.Unmarshal(out, &m)
}

// CallJSON implements pluginsdk.JSONCaller: tools/call of the MCP tool
// served as name. ctx's end reaches the server as notifications/cancelled.
// Errors: 404 unknown function; 400 when the server answered -32602;
// 500 for an isError result (its text) and every other failure.
func (a *Adapter) CallJSON(ctx context.Context, name string, args []byte) ([]byte, error) {
	select {
	case <-a.ready: // a.cs and a.err are set
	default:
		return nil, pluginsdk.FunctionNotFound(name)
	}
	a.mu.RLock()
	tool, ok := a.conv.names[name]
	a.mu.RUnlock()
	if !ok || a.cs == nil {
		return nil, pluginsdk.FunctionNotFound(name)
	}
	if len(bytes.TrimSpace(args)) == 0 {
		args = []byte("{}")
	}
	res, err := a.cs.CallTool(ctx, &mcp.CallToolParams{Name: tool, Arguments: json.RawMessage(args)})
	if err != nil {
		var je *jsonrpc.Error
		if errors.As(err, &je) && je.Code == jsonrpc.CodeInvalidParams {
			return nil, pluginsdk.InvalidArguments("%s", je.Message)
		}
		return nil, pluginsdk.ToolFailure("MCP server %q: %v", a.launch.Name, err)
	}
	return resultJSON(res)
}

// resultJSON is the OpenTool result of a tools/call result: its
// structuredContent when that is an object, else {"content": [BLOCKS],
// "text": TEXT} with TEXT the text blocks joined by newlines. An isError
// result is a 500 error with that text.
func resultJSON(res *mcp.CallToolResult) ([]byte, error) {
	var texts []string
	for _, c := range res.Content {
		if tc, ok := c.(*mcp.TextContent); ok {
			texts = append(texts, tc.Text)
		}
	}
	text := strings.Join(texts, "\n")
	if res.IsError {
		if text == "" {
			text = "the MCP tool reported an error"
		}
		return nil, pluginsdk.ToolFailure("%s", text)
	}
	if res.StructuredContent != nil {
		b, err := json.Marshal(res.StructuredContent)
		if err == nil && bytes.HasPrefix(bytes.TrimSpace(b), []byte("{")) {
			return b, nil
		}
	}
	content := res.Content
	if content == nil {
		content = []mcp.Content{}
	}
	return json.Marshal(map[string]any{"content": content, "text": text})
}
