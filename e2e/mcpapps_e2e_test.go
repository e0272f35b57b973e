package e2e_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"iter"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/opentool-host/opentool-host/testkit"
)

// Definitions verbatim (issue 32) with real npm MCP servers: what an MCP
// client of the host's /mcp is listed and read is what the server gives
// it directly, member for member (canonical JSON), as the Go SDK client
// receives it on the wire (rawRecorder); and an MCP Apps server
// (@modelcontextprotocol/ext-apps' basic-server-vanillajs example)
// shows its UI tool through the host only to a client that declares the
// UI extension. The servers come with the conformance suite's npm
// dependencies (scripts/deps-conformance.sh) and its Node 22.

// npmServer returns a Node >= 22 and the conformance suite's
// node_modules with pkgs installed, or skips the test saying how to get
// them.
func npmServer(t *testing.T, who string, pkgs ...string) (node, modules string) {
	t.Helper()
	modules = filepath.Join(testkit.RepoRoot(t), "conformance", "node_modules")
	for _, pkg := range pkgs {
		if _, err := os.Stat(filepath.Join(modules, filepath.FromSlash(pkg), "package.json")); err != nil {
			t.Skipf("run make deps-conformance: %s is not installed in %s (%v)", pkg, modules, err)
		}
	}
	return testkit.Node(t, modules, who), modules
}

// rawRecorder is an mcp.Transport whose connection keeps the result of
// each response it reads as the peer wrote it, by the method of its
// request, in order: what the SDK's types would drop stays.
type rawRecorder struct {
	mcp.Transport
	mu      sync.Mutex
	methods map[jsonrpc.ID]string
	results map[string][]json.RawMessage
}

// record wraps tr.
func record(tr mcp.Transport) *rawRecorder {
	return &rawRecorder{Transport: tr, methods: map[jsonrpc.ID]string{}, results: map[string][]json.RawMessage{}}
}

// Connect implements mcp.Transport.
func (r *rawRecorder) Connect(ctx context.Context) (mcp.Connection, error) {
	c, err := r.Transport.Connect(ctx)
	if err != nil {
		return nil, err
	}
	return &recordedConn{Connection: c, r: r}, nil
}

// take returns and forgets the results of method so far.
func (r *rawRecorder) take(method string) []json.RawMessage {
	r.mu.Lock()
	defer r.mu.Unlock()
	res := r.results[method]
	delete(r.results, method)
	return res
}

// recordedConn is a connection of a rawRecorder.
type recordedConn struct {
	mcp.Connection
	r *rawRecorder
}

// Write implements mcp.Connection.
func (c *recordedConn) Write(ctx context.Context, msg jsonrpc.Message) error {
	if req, ok := msg.(*jsonrpc.Request); ok && req.IsCall() {
		c.r.mu.Lock()
		c.r.methods[req.ID] = req.Method
		c.r.mu.Unlock()
	}
	return c.Connection.Write(ctx, msg)
}

// Read implements mcp.Connection.
func (c *recordedConn) Read(ctx context.Context) (jsonrpc.Message, error) {
	msg, err := c.Connection.Read(ctx)
	if resp, ok := msg.(*jsonrpc.Response); ok && resp.Error == nil {
		c.r.mu.Lock()
		if m, ok := c.r.methods[resp.ID]; ok {
			c.r.results[m] = append(c.r.results[m], bytes.Clone(resp.Result))
			delete(c.r.methods, resp.ID)
		}
		c.r.mu.Unlock()
	}
	return msg, err
}

// rawClient is a Go SDK MCP client whose results are also kept raw.
type rawClient struct {
	cs  *mcp.ClientSession
	rec *rawRecorder
}

// rawConnect connects a client named name with capabilities caps (nil:
// the SDK's default) over tr, speaking MCP 2025-11-25.
func rawConnect(t *testing.T, name string, tr mcp.Transport, caps *mcp.ClientCapabilities) *rawClient {
	t.Helper()
	return rawConnectIn(t, "2025-11-25", name, tr, caps)
}

// rawConnectIn is rawConnect speaking MCP revision version, which the
// server must answer with.
func rawConnectIn(t *testing.T, version, name string, tr mcp.Transport, caps *mcp.ClientCapabilities) *rawClient {
	t.Helper()
	rec := record(tr)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: name, Version: "1"}, &mcp.ClientOptions{Capabilities: caps}).Connect(ctx, rec, &mcp.ClientSessionOptions{ProtocolVersion: version})
	if err != nil {
		t.Fatalf("MCP connect (%s): %v", name, err)
	}
	if got := cs.InitializeResult().ProtocolVersion; got != version {
		t.Fatalf("MCP connect (%s): the server answered in %s, want %s", name, got, version)
	}
	t.Cleanup(func() { _ = cs.Close() })
	return &rawClient{cs: cs, rec: rec}
}

// list lists method's items through the SDK (every page) and returns
// them raw, each as canonical JSON by its key member (name, uri,
// uriTemplate).
func (c *rawClient) list(t *testing.T, method, member, key string) map[string]string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	var err error
	switch method {
	case "tools/list":
		err = drain(c.cs.Tools(ctx, nil))
	case "resources/list":
		err = drain(c.cs.Resources(ctx, nil))
	case "resources/templates/list":
		err = drain(c.cs.ResourceTemplates(ctx, nil))
	case "prompts/list":
		err = drain(c.cs.Prompts(ctx, nil))
	}
	if err != nil {
		t.Fatalf("%s: %v", method, err)
	}
	out := map[string]string{}
	for _, page := range c.rec.take(method) {
		var p map[string]json.RawMessage
		var items []map[string]any
		if err := json.Unmarshal(page, &p); err != nil || json.Unmarshal(p[member], &items) != nil {
			t.Fatalf("%s: a page without %s: %s (%v)", method, member, page, err)
		}
		for _, it := range items {
			k, _ := it[key].(string)
			out[k] = testkit.CanonicalJSON(t, it)
		}
	}
	return out
}

// drain reads seq to its end and returns its first error.
func drain[T any](seq iter.Seq2[T, error]) error {
	for _, err := range seq {
		if err != nil {
			return err
		}
	}
	return nil
}

// last returns the raw result of c's last request method, decoded.
func (c *rawClient) last(t *testing.T, method string) map[string]any {
	t.Helper()
	res := c.rec.take(method)
	if len(res) == 0 {
		t.Fatalf("%s: no result recorded", method)
	}
	var m map[string]any
	if err := json.Unmarshal(res[len(res)-1], &m); err != nil {
		t.Fatal(err)
	}
	return m
}

// sameLists compares the lists of direct (the server's own) and through
// (the host's /mcp): every item of each, by key, as canonical JSON.
func sameLists(t *testing.T, direct, through *rawClient, lists [][3]string) {
	t.Helper()
	for _, l := range lists {
		want, got := direct.list(t, l[0], l[1], l[2]), through.list(t, l[0], l[1], l[2])
		for k, w := range want {
			if got[k] != w {
				t.Errorf("%s: %s through the host\n%s\nwant the server's own\n%s", l[0], k, got[k], w)
			}
		}
		for k := range got {
			if _, ok := want[k]; !ok {
				t.Errorf("%s: %s through the host, not from the server directly", l[0], k)
			}
		}
	}
}

// sameCall makes request method (what names its subject) of direct,
// the server itself, and of through, the host's /mcp, with do, and
// returns the result through the host (decoded); a result that is not
// the server's own (testkit.SameMCPResult) is an error of t.
func sameCall(t *testing.T, direct, through *rawClient, method, what string, do func(cs *mcp.ClientSession) error) map[string]any {
	t.Helper()
	for _, cl := range []*rawClient{direct, through} {
		if err := do(cl.cs); err != nil {
			t.Fatalf("%s %s: %v", method, what, err)
		}
	}
	want, got := direct.last(t, method), through.last(t, method)
	if !testkit.SameMCPResult(t, got, want) {
		t.Errorf("%s %s through the host\n%s\nwant the server's own\n%s", method, what, testkit.CanonicalJSON(t, got), testkit.CanonicalJSON(t, want))
	}
	return got
}

// uiCaps are the capabilities of an MCP Apps host (ext-apps:
// extensions["io.modelcontextprotocol/ui"].mimeTypes).
func uiCaps() *mcp.ClientCapabilities {
	c := &mcp.ClientCapabilities{}
	c.AddExtension("io.modelcontextprotocol/ui", map[string]any{"mimeTypes": []string{"text/html;profile=mcp-app"}})
	return c
}

// TestMCPAppsThroughHost (issue 32): an MCP Apps server, ext-apps'
// basic-server-vanillajs example whose UI tool get-time is registered
// only for clients that declare the UI extension (getUiCapability;
// testkit/plugins/mcpapps), behind the host: a Go SDK client that
// declares io.modelcontextprotocol/ui is listed get-time through /mcp,
// one that does not is not (and gets the text-only tool either way),
// each exactly as the server lists it to such a client directly
// (tools/list, resources/list, canonical JSON); the tool's
// _meta.ui.resourceUri names the ui:// resource, and resources/read of
// it (mimeType text/html;profile=mcp-app) is the server's own; the UI
// client calls get-time through the host.
func TestMCPAppsThroughHost(t *testing.T) {
	t.Parallel() // waits on Node servers and clients most of its time: beside the other Node tests
	node, script, hp := appsHost(t)

	const uiURI = "ui://get-time/mcp-app.html"
	lists := [][3]string{{"tools/list", "tools", "name"}, {"resources/list", "resources", "uri"}}
	for _, c := range []struct {
		name string
		caps *mcp.ClientCapabilities
		want []string // the tools listed
	}{
		{"ui-client", uiCaps(), []string{"format-time", "get-time", "get-time-text"}},
		{"text-client", nil, []string{"format-time", "get-time-text"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			direct := rawConnect(t, c.name, &mcp.CommandTransport{Command: exec.Command(node, script)}, c.caps)
			through := rawConnect(t, c.name, &mcp.StreamableClientTransport{Endpoint: hp.url + "/mcp"}, c.caps)
			tools := through.list(t, "tools/list", "tools", "name")
			var names []string
			for n := range tools {
				names = append(names, n)
			}
			slices.Sort(names)
			if !slices.Equal(names, c.want) {
				t.Fatalf("tools through the host: %v, want %v", names, c.want)
			}
			sameLists(t, direct, through, lists)

			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			got := sameCall(t, direct, through, "resources/read", uiURI, func(cs *mcp.ClientSession) error {
				_, err := cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: uiURI})
				return err
			})
			if contents, _ := got["contents"].([]any); len(contents) != 1 || contents[0].(map[string]any)["mimeType"] != "text/html;profile=mcp-app" {
				t.Errorf("resources/read %s: %s, want one text/html;profile=mcp-app content", uiURI, testkit.CanonicalJSON(t, got))
			}
			if c.caps == nil {
				return
			}
			var def struct {
				Meta struct {
					UI struct {
						ResourceURI string `json:"resourceUri"`
					} `json:"ui"`
				} `json:"_meta"`
			}
			if err := json.Unmarshal([]byte(tools["get-time"]), &def); err != nil || def.Meta.UI.ResourceURI != uiURI {
				t.Errorf("get-time's _meta.ui.resourceUri through the host: %s (%v), want %s", tools["get-time"], err, uiURI)
			}
			res, err := through.cs.CallTool(ctx, &mcp.CallToolParams{Name: "get-time"})
			if err != nil || res.IsError {
				t.Fatalf("get-time through the host: %v %+v", err, res)
			}
			if sc, _ := res.StructuredContent.(map[string]any); sc["time"] == nil {
				t.Errorf("get-time through the host: structuredContent %v, want the time", res.StructuredContent)
			}
		})
	}
}

// appsHost starts a host serving the MCP Apps example server
// (testkit/plugins/mcpapps/server.mjs) declared as apps.mcp.json, with
// --watch=false and the flags extra, and returns the Node and the script
// that run the server, and the host.
func appsHost(t *testing.T, extra ...string) (node, script string, hp *hostProc) {
	t.Helper()
	node, modules := npmServer(t, "the MCP Apps example server", "@modelcontextprotocol/server-basic-vanillajs", "@modelcontextprotocol/ext-apps", "@modelcontextprotocol/server")
	// The script runs from a folder whose node_modules are the suite's.
	app := t.TempDir()
	src, err := os.ReadFile(filepath.Join(testkit.RepoRoot(t), "testkit", "plugins", "mcpapps", "server.mjs"))
	if err != nil {
		t.Fatal(err)
	}
	script = filepath.Join(app, "server.mjs")
	if err := os.WriteFile(script, src, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(modules, filepath.Join(app, "node_modules")); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	b, _ := json.Marshal(map[string]any{"mcpServers": map[string]any{"apps": map[string]any{"command": node, "args": []string{script}}}})
	if err := os.WriteFile(filepath.Join(dir, "apps.mcp.json"), b, 0o644); err != nil {
		t.Fatal(err)
	}
	return node, script, startHostProc(t, dir, append([]string{"--watch=false"}, extra...)...)
}

// TestMCPAppsClientsOwnView (issue 32): a client session's tools/call is
// checked against the tools its own upstream session was listed, not the
// shared session's the host routes by. A client that does not declare
// MCP Apps, which is not listed get-time, calling it by name gets the
// error of an unknown tool (not the server's "disabled", which says it
// exists), by name or through call_tool (--tool-search); format-time's
// arguments are checked against the input schema each client was shown
// ("unix" is a format only for the text client).
func TestMCPAppsClientsOwnView(t *testing.T) {
	t.Parallel() // waits on Node servers and clients most of its time: beside the other Node tests
	_, _, hp := appsHost(t, "--tool-search")
	text := rawConnect(t, "text-client", &mcp.StreamableClientTransport{Endpoint: hp.url + "/mcp"}, nil)
	ui := rawConnect(t, "ui-client", &mcp.StreamableClientTransport{Endpoint: hp.url + "/mcp"}, uiCaps())
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	call := func(c *rawClient, name string, args map[string]any) (*mcp.CallToolResult, error) {
		return c.cs.CallTool(ctx, &mcp.CallToolParams{Name: name, Arguments: args})
	}
	text.list(t, "tools/list", "tools", "name") // its own upstream session, as a client lists first

	_, unknown := call(text, "no-such-tool", nil)
	_, hidden := call(text, "get-time", nil)
	want := strings.ReplaceAll(fmt.Sprint(unknown), "no-such-tool", "get-time")
	if unknown == nil || fmt.Sprint(hidden) != want {
		t.Errorf("the text client calling get-time, which it was not shown: %v; want the error of an unknown tool, %s", hidden, want)
	}
	if res, err := call(ui, "get-time", nil); err != nil || res.IsError {
		t.Errorf("the UI client calling get-time: %v %+v", err, res)
	}
	_, unknownVia := call(text, "call_tool", map[string]any{"name": "no-such-tool"})
	_, hiddenVia := call(text, "call_tool", map[string]any{"name": "get-time"})
	want = strings.ReplaceAll(fmt.Sprint(unknownVia), "no-such-tool", "get-time")
	if unknownVia == nil || fmt.Sprint(hiddenVia) != want {
		t.Errorf("the text client calling get-time through call_tool: %v; want the error of an unknown tool, %s", hiddenVia, want)
	}
	if res, err := call(ui, "call_tool", map[string]any{"name": "get-time"}); err != nil || res.IsError {
		t.Errorf("the UI client calling get-time through call_tool: %v %+v", err, res)
	}

	// What the host names besides a call is held to the same view:
	// search_tools finds get-time only for the UI client, and call_tool's
	// unknown name near it is answered with get-time ("did you mean")
	// only to the UI client (a tools/call of an unknown name is the SDK's
	// unknown tool, without suggestions).
	for _, c := range []struct {
		who   *rawClient
		name  string
		shown bool
	}{{text, "text", false}, {ui, "UI", true}} {
		res, err := call(c.who, "search_tools", map[string]any{"query": "get time", "limit": 50})
		if err != nil || res.IsError {
			t.Fatalf("the %s client: search_tools: %v %+v", c.name, err, res)
		}
		b, _ := json.Marshal(res.StructuredContent)
		names := found(t, b)
		if slices.Contains(names, "get-time") != c.shown || !slices.Contains(names, "get-time-text") {
			t.Errorf("the %s client: search_tools for get time found %v; want get-time-text, and get-time %v", c.name, names, c.shown)
		}
		_, near := call(c.who, "call_tool", map[string]any{"name": "get-tim"})
		if near == nil || strings.Contains(near.Error(), `"get-time"`) != c.shown {
			t.Errorf("the %s client calling get-tim through call_tool: %v; want get-time suggested %v", c.name, near, c.shown)
		}
	}

	for _, c := range []struct {
		who    *rawClient
		name   string
		format string
		ok     bool
	}{
		{text, "text", "unix", true},
		{text, "text", "iso", true},
		{text, "text", "html", false},
		{ui, "UI", "unix", false},
		{ui, "UI", "iso", true},
	} {
		res, err := call(c.who, "format-time", map[string]any{"format": c.format})
		if err != nil {
			t.Errorf("the %s client: format-time %s: %v", c.name, c.format, err)
			continue
		}
		text := ""
		if len(res.Content) > 0 {
			if tc, ok := res.Content[0].(*mcp.TextContent); ok {
				text = tc.Text
			}
		}
		switch {
		case c.ok && res.IsError:
			t.Errorf("the %s client: format-time %s, a format its input schema allows: %s", c.name, c.format, text)
		case !c.ok && (!res.IsError || !strings.HasPrefix(text, "invalid params: ")):
			t.Errorf("the %s client: format-time %s, a format its input schema does not allow: isError %v %q, want the host's invalid params", c.name, c.format, res.IsError, text)
		}
	}
}

// TestMCPAppsOwnView2026 (issue 32): a client of 2026-07-28 has no
// session: its clientInfo and capabilities come in each request's _meta.
// Its tools/list and tools/call are held to the view of a client with
// that identity, as a client session's are to its own, with sessions and
// with --mcp-stateless: one that does not declare MCP Apps is not listed
// get-time and calling it, by name or through call_tool, gets the error
// of an unknown tool; one that declares the UI extension is listed it
// and calls it.
func TestMCPAppsOwnView2026(t *testing.T) {
	t.Parallel() // waits on Node servers and clients most of its time: beside the other Node tests
	for _, mode := range []struct {
		name  string
		flags []string
	}{{"sessions", nil}, {"stateless", []string{"--mcp-stateless"}}} {
		t.Run(mode.name, func(t *testing.T) {
			_, _, hp := appsHost(t, append([]string{"--tool-search"}, mode.flags...)...)
			ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
			defer cancel()
			for _, c := range []struct {
				name  string
				caps  *mcp.ClientCapabilities
				shown bool
			}{{"text-client", nil, false}, {"ui-client", uiCaps(), true}} {
				cl := rawConnectIn(t, "2026-07-28", c.name, &mcp.StreamableClientTransport{Endpoint: hp.url + "/mcp"}, c.caps)
				tools := cl.list(t, "tools/list", "tools", "name")
				if _, listed := tools["get-time"]; listed != c.shown || tools["get-time-text"] == "" {
					t.Errorf("%s: tools/list %v; want get-time-text, and get-time %v", c.name, slices.Sorted(maps.Keys(tools)), c.shown)
				}
				call := func(name string, args map[string]any) (*mcp.CallToolResult, error) {
					return cl.cs.CallTool(ctx, &mcp.CallToolParams{Name: name, Arguments: args})
				}
				for _, via := range []struct {
					what            string
					unknown, hidden func() (*mcp.CallToolResult, error)
				}{
					{"by name", func() (*mcp.CallToolResult, error) { return call("no-such-tool", nil) }, func() (*mcp.CallToolResult, error) { return call("get-time", nil) }},
					{"through call_tool", func() (*mcp.CallToolResult, error) { return call("call_tool", map[string]any{"name": "no-such-tool"}) }, func() (*mcp.CallToolResult, error) { return call("call_tool", map[string]any{"name": "get-time"}) }},
				} {
					_, unknown := via.unknown()
					res, err := via.hidden()
					if c.shown {
						if err != nil || res.IsError {
							t.Errorf("%s calling get-time %s: %v %+v", c.name, via.what, err, res)
						}
						continue
					}
					want := strings.ReplaceAll(fmt.Sprint(unknown), "no-such-tool", "get-time")
					if unknown == nil || fmt.Sprint(err) != want {
						t.Errorf("%s calling get-time %s, which it was not shown: %v %+v; want the error of an unknown tool, %s", c.name, via.what, err, res, want)
					}
				}
			}
		})
	}
}

// TestMCPAppsSearchToolsOwnView (issue 32): search_tools' hit of a tool
// a client's own list defines otherwise gives that client's definition,
// not the shared session's. The MCP Apps server writes format-time's
// description and inputSchema per client ("iso or unix" to a text
// client, "iso" to a UI one, as the host's shared session is listed it);
// each client, a client session and a 2026-07-28 caller (no session)
// alike, finds format-time through /mcp (--tool-search) with the
// description and inputSchema of its own tools/list, and its call
// through call_tool is checked against that schema ("unix" is allowed
// exactly when the hit lists it).
func TestMCPAppsSearchToolsOwnView(t *testing.T) {
	t.Parallel() // waits on Node servers and clients most of its time: beside the other Node tests
	_, _, hp := appsHost(t, "--tool-search")
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	type definition struct {
		Name        string `json:"name"`
		Description string `json:"description"`
		InputSchema any    `json:"inputSchema"`
	}
	for _, c := range []struct {
		name, version string
		caps          *mcp.ClientCapabilities
		unix          bool // the server's format-time takes "unix" for this client
	}{
		{"text-client", "2025-11-25", nil, true},
		{"ui-client", "2025-11-25", uiCaps(), false},
		{"text-client", "2026-07-28", nil, true},
		{"ui-client", "2026-07-28", uiCaps(), false},
	} {
		who := c.name + " " + c.version
		cl := rawConnectIn(t, c.version, c.name, &mcp.StreamableClientTransport{Endpoint: hp.url + "/mcp"}, c.caps)
		var listed definition
		if err := json.Unmarshal([]byte(cl.list(t, "tools/list", "tools", "name")["format-time"]), &listed); err != nil {
			t.Fatalf("%s: format-time in tools/list: %v", who, err)
		}
		if strings.Contains(listed.Description, "unix") != c.unix || strings.Contains(testkit.CanonicalJSON(t, listed.InputSchema), `"unix"`) != c.unix {
			t.Fatalf("%s: format-time listed as %+v; want unix %v in its description and input schema (the server's own for this client)", who, listed, c.unix)
		}

		res, err := cl.cs.CallTool(ctx, &mcp.CallToolParams{Name: "search_tools", Arguments: map[string]any{"query": "format time", "limit": 50}})
		if err != nil || res.IsError {
			t.Fatalf("%s: search_tools: %v %+v", who, err, res)
		}
		b, _ := json.Marshal(res.StructuredContent)
		var out struct {
			Tools []definition `json:"tools"`
		}
		if err := json.Unmarshal(b, &out); err != nil {
			t.Fatalf("%s: search_tools: %s: %v", who, b, err)
		}
		i := slices.IndexFunc(out.Tools, func(d definition) bool { return d.Name == "format-time" })
		if i < 0 {
			t.Fatalf("%s: search_tools for format time: %s, without format-time", who, b)
		}
		hit := out.Tools[i]
		if hit.Description != listed.Description {
			t.Errorf("%s: search_tools' format-time description %q; want its own tools/list's, %q", who, hit.Description, listed.Description)
		}
		if got, want := testkit.CanonicalJSON(t, hit.InputSchema), testkit.CanonicalJSON(t, listed.InputSchema); got != want {
			t.Errorf("%s: search_tools' format-time inputSchema\n%s\nwant its own tools/list's\n%s", who, got, want)
		}

		// The host checks the call against the schema the hit gave: its
		// "invalid params" exactly when that schema does not allow unix.
		// (What the server answers past the host's check is its own: a
		// 2026-07-28 caller's call goes to a session the server lists
		// format-time to otherwise when it does not speak 2026-07-28,
		// as this one does not.)
		res, err = cl.cs.CallTool(ctx, &mcp.CallToolParams{Name: "call_tool", Arguments: map[string]any{"name": "format-time", "arguments": map[string]any{"format": "unix"}}})
		if err != nil {
			t.Fatalf("%s: call_tool format-time unix: %v", who, err)
		}
		text := ""
		if len(res.Content) > 0 && res.IsError {
			if tc, ok := res.Content[0].(*mcp.TextContent); ok {
				text = tc.Text
			}
		}
		if refused := strings.HasPrefix(text, "invalid params: "); refused == strings.Contains(testkit.CanonicalJSON(t, hit.InputSchema), `"unix"`) {
			t.Errorf("%s: call_tool format-time unix: %+v %q; want the host's invalid params exactly when the hit's input schema does not allow unix", who, res, text)
		}
	}
}

// TestEverythingListsVerbatim (issue 32): npm
// @modelcontextprotocol/server-everything behind the host: its
// tools/list, resources/list, resources/templates/list and prompts/list
// items, and resources/read and prompts/get results, through /mcp are
// the server's own to a client with the same capabilities, member for
// member (canonical JSON, as the Go SDK client receives them).
func TestEverythingListsVerbatim(t *testing.T) {
	node, modules := npmServer(t, "server-everything", "@modelcontextprotocol/server-everything")
	index := filepath.Join(modules, "@modelcontextprotocol", "server-everything", "dist", "index.js")
	dir := t.TempDir()
	b, _ := json.Marshal(map[string]any{"mcpServers": map[string]any{"everything": map[string]any{"command": node, "args": []string{index, "stdio"}}}})
	if err := os.WriteFile(filepath.Join(dir, "everything.mcp.json"), b, 0o644); err != nil {
		t.Fatal(err)
	}
	hp := startHostProc(t, dir, "--watch=false")
	direct := rawConnect(t, "verbatim", &mcp.CommandTransport{Command: exec.Command(node, index, "stdio")}, nil)
	through := rawConnect(t, "verbatim", &mcp.StreamableClientTransport{Endpoint: hp.url + "/mcp"}, nil)
	sameLists(t, direct, through, [][3]string{
		{"tools/list", "tools", "name"},
		{"resources/list", "resources", "uri"},
		{"resources/templates/list", "resourceTemplates", "uriTemplate"},
		{"prompts/list", "prompts", "name"},
	})

	// Reads and prompts: each resource listed, each prompt without
	// required arguments.
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	reads, gets := 0, 0
	for r, err := range direct.cs.Resources(ctx, nil) {
		if err != nil {
			t.Fatal(err)
		}
		sameCall(t, direct, through, "resources/read", r.URI, func(cs *mcp.ClientSession) error {
			_, err := cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: r.URI})
			return err
		})
		reads++
	}
	for p, err := range direct.cs.Prompts(ctx, nil) {
		if err != nil {
			t.Fatal(err)
		}
		if slices.ContainsFunc(p.Arguments, func(a *mcp.PromptArgument) bool { return a.Required }) {
			continue
		}
		sameCall(t, direct, through, "prompts/get", p.Name, func(cs *mcp.ClientSession) error {
			_, err := cs.GetPrompt(ctx, &mcp.GetPromptParams{Name: p.Name})
			return err
		})
		gets++
	}
	if reads == 0 || gets == 0 {
		t.Errorf("server-everything: %d resources read, %d prompts got; want some of each", reads, gets)
	}
	t.Logf("server-everything: the lists, %d resources read and %d prompts got are the server's own through the host", reads, gets)
}
