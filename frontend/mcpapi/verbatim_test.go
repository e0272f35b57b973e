package mcpapi_test

import (
	"context"
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/opentool-host/opentool-host/declared"
	"github.com/opentool-host/opentool-host/frontend/mcpapi"
	"github.com/opentool-host/opentool-host/host/core"
	"github.com/opentool-host/opentool-host/testkit"
)

// verbatimTools is the tools/list result of the verbatimmcp server: a
// title beside the description, annotations with only some hints,
// execution (with taskSupport and a member no revision defines yet),
// _meta, icons, an outputSchema, members of revisions to come, a tool
// with nothing but a name and an input schema, and a name OpenTool does
// not allow (served renamed).
const verbatimTools = `{"tools":[
 {"name":"echo","title":"Echo Tool","description":"Echoes back the input string",
  "inputSchema":{"type":"object","properties":{"message":{"type":"string","description":"What to echo","minLength":1}},"required":["message"],"additionalProperties":false},
  "outputSchema":{"type":"object","properties":{"echo":{"type":"string"}}},
  "annotations":{"title":"Echo","readOnlyHint":true},
  "execution":{"taskSupport":"forbidden","x-future":{"a":1}},
  "_meta":{"example.com/tier":"free"},
  "icons":[{"src":"data:image/png;base64,iVBORw0KGgo=","mimeType":"image/png","sizes":["48x48"],"theme":"dark"}],
  "futureMember":{"nested":[1,2.5,"x",null,true]}},
 {"name":"add","description":"Adds two numbers.","inputSchema":{"type":"object","properties":{"a":{"type":"number"},"b":{"type":"number"}},"required":["a","b"]},
  "annotations":{"destructiveHint":false,"openWorldHint":false}},
 {"name":"bare","inputSchema":{"type":"object"}},
 {"name":"list.items","description":"Lists items.","inputSchema":{"type":"object","properties":{}},"annotations":{"idempotentHint":true}}
]}`

// verbatimServed maps each MCP tool name of verbatimTools to the name
// the host serves it as, before any policy prefix.
var verbatimServed = map[string]string{"echo": "echo", "add": "add", "bare": "bare", "list.items": "list_items"}

// TestToolDefinitionsVerbatim (issue 32 item 3): through the host's /mcp
// an MCP server's tool definitions are the server's own, member for
// member (canonical JSON), but for the name the tool is served as (here
// with and without a policy prefix) and execution.taskSupport (the host
// runs a server's tasks itself and serves the tool as a plain one):
// listed with a raw JSON-RPC POST, which sees every member, and with
// the MCP Go SDK's client, which decodes them into its types as a
// client of the server alone would. Arguments are still checked against
// the server's own inputSchema by the host.
func TestToolDefinitionsVerbatim(t *testing.T) {
	bin := testkit.Build(t, "./testkit/plugins/verbatimmcp")
	list := filepath.Join(t.TempDir(), "results.json")
	writeFile(t, list, `{"tools/list":`+verbatimTools+`}`)
	r := newRig(t, func(c *core.Config) {
		c.Declared = declared.Serve
		for _, name := range []string{"vt", "pv"} {
			d, _ := json.Marshal(map[string]any{"mcpServers": map[string]any{name: map[string]any{"command": bin, "args": []string{list}}}})
			writeFile(t, filepath.Join(c.Dir, name+".mcp.json"), string(d))
		}
		writeFile(t, filepath.Join(c.Dir, "pv.policy.json"), `{"prefix":"pv_"}`)
	}, mcpapi.Config{})
	var own struct{ Tools []map[string]any }
	if err := json.Unmarshal([]byte(verbatimTools), &own); err != nil {
		t.Fatal(err)
	}
	want := map[string]map[string]any{} // served name → definition
	for _, prefix := range []string{"", "pv_"} {
		for _, def := range own.Tools {
			name := prefix + verbatimServed[def["name"].(string)]
			want[name] = servedAs(def, name)
		}
	}

	for _, m := range modes {
		t.Run("raw/"+m.name, func(t *testing.T) {
			got := rawToolsList(t, r, m)
			for name, w := range want {
				if g, ok := got[name]; !ok {
					t.Errorf("tool %s not listed", name)
				} else if testkit.CanonicalJSON(t, g) != testkit.CanonicalJSON(t, w) {
					t.Errorf("tool %s listed as\n%s\nwant the server's own\n%s", name, testkit.CanonicalJSON(t, g), testkit.CanonicalJSON(t, w))
				}
			}
		})
		t.Run("sdk/"+m.name, func(t *testing.T) {
			cs := r.connect(t, m, nil)
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			got := map[string]*mcp.Tool{}
			for tool, err := range cs.Tools(ctx, nil) {
				if err != nil {
					t.Fatal(err)
				}
				got[tool.Name] = tool
			}
			for name, w := range want {
				var direct mcp.Tool // what the SDK's client makes of the server's own
				if err := json.Unmarshal([]byte(testkit.CanonicalJSON(t, w)), &direct); err != nil {
					t.Fatal(err)
				}
				if g, ok := got[name]; !ok {
					t.Errorf("tool %s not listed", name)
				} else if mustJSON(t, g) != mustJSON(t, &direct) {
					t.Errorf("tool %s listed as\n%s\nwant, as from the server alone,\n%s", name, mustJSON(t, g), mustJSON(t, &direct))
				}
			}
			// Checked against the server's own inputSchema, by the host.
			res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "pv_echo", Arguments: map[string]any{"message": ""}})
			if err != nil {
				t.Fatal(err)
			}
			if txt, meta := failed(t, res); meta["kind"] != "invalid_params" || !strings.Contains(txt, "message") {
				t.Errorf("pv_echo with an empty message: %s %v, want invalid params naming message", txt, meta)
			}
		})
	}
}

// verbatimCatalog is the verbatimmcp server's catalog results: every
// member MCP 2025-11-25 defines for resources, resource templates,
// prompts and their contents, zero values an SDK type omits (size 0,
// priority 0), MCP Apps' ui:// resource with its _meta.ui and mimeType
// text/html;profile=mcp-app, and members of revisions to come.
const verbatimCatalog = `{
 "resources/list":{"resources":[
  {"uri":"ui://clock/app.html","name":"clock-app","title":"Clock","description":"The clock's view.","mimeType":"text/html;profile=mcp-app",
   "_meta":{"ui":{"csp":{"connectDomains":["https://api.example.com"],"resourceDomains":[]},"prefersBorder":true,"domain":"clock.example.com"}}},
  {"uri":"file:///empty.txt","name":"empty","title":"Empty file","description":"Nothing in it.","mimeType":"text/plain","size":0,
   "annotations":{"audience":["user","assistant"],"priority":0,"lastModified":"2025-01-12T15:00:58Z"},
   "icons":[{"src":"https://example.com/icon.svg","mimeType":"image/svg+xml","sizes":["any"],"theme":"light"}],
   "_meta":{"example.com/etag":"x1"},"futureMember":{"nested":[1,2.5,"x",null,true]}},
  {"uri":"file:///bare","name":"bare"}]},
 "resources/templates/list":{"resourceTemplates":[
  {"uriTemplate":"file:///logs/{day}","name":"logs","title":"Logs","description":"A day's log.","mimeType":"text/plain",
   "annotations":{"audience":["assistant"],"priority":0.25},"icons":[{"src":"data:image/png;base64,iVBORw0KGgo="}],
   "_meta":{"k":[]},"futureMember":0}]},
 "prompts/list":{"prompts":[
  {"name":"greet","title":"Greeting","description":"Greets someone.",
   "arguments":[{"name":"who","title":"Who","description":"Whom to greet.","required":true,"futureArg":{}},{"name":"tone","required":false}],
   "icons":[{"src":"https://example.com/p.png","mimeType":"image/png","sizes":["48x48","96x96"],"theme":"dark"}],
   "_meta":{"example.com/tier":"free"},"futureMember":"x"},
  {"name":"bare"}]},
 "resources/read":{"contents":[
  {"uri":"ui://clock/app.html","mimeType":"text/html;profile=mcp-app","text":"<!doctype html><p>clock</p>",
   "_meta":{"ui":{"csp":{"connectDomains":[]},"prefersBorder":false}},"futureMember":1},
  {"uri":"file:///empty.bin","mimeType":"application/octet-stream","blob":""}],
  "_meta":{"example.com/read":true},"futureTop":{"a":null}},
 "prompts/get":{"description":"A greeting.","messages":[
  {"role":"user","content":{"type":"text","text":"Hello","annotations":{"priority":0},"_meta":{"m":1}},"futureMessage":true},
  {"role":"assistant","content":{"type":"resource_link","uri":"file:///empty.txt","name":"empty","size":0,"icons":[{"src":"https://example.com/i.png"}]}}],
  "_meta":{"example.com/get":1},"futureTop":[0]},
 "completion/complete":{"completion":{"values":["you","yours"],"total":2,"hasMore":false,"futureMember":{}},"_meta":{"c":1}}
}`

// TestCatalogVerbatim (issue 32): through the host's /mcp an MCP
// server's resources/list, resources/templates/list and prompts/list
// items and its resources/read, prompts/get and completion/complete
// results are the server's own, member for member (canonical JSON):
// read with raw JSON-RPC POSTs, which see every member; the result
// members the host writes itself when the server did not
// (testkit.HostResultMembers) aside.
func TestCatalogVerbatim(t *testing.T) {
	bin := testkit.Build(t, "./testkit/plugins/verbatimmcp")
	file := filepath.Join(t.TempDir(), "results.json")
	writeFile(t, file, verbatimCatalog)
	r := newRig(t, func(c *core.Config) {
		c.Declared = declared.Serve
		d, _ := json.Marshal(map[string]any{"mcpServers": map[string]any{"vc": map[string]any{"command": bin, "args": []string{file}}}})
		writeFile(t, filepath.Join(c.Dir, "vc.mcp.json"), string(d))
	}, mcpapi.Config{})
	var own map[string]map[string]any
	if err := json.Unmarshal([]byte(verbatimCatalog), &own); err != nil {
		t.Fatal(err)
	}
	lists := []struct{ method, member, key string }{
		{"resources/list", "resources", "uri"},
		{"resources/templates/list", "resourceTemplates", "uriTemplate"},
		{"prompts/list", "prompts", "name"},
	}
	for _, m := range modes {
		t.Run(m.name, func(t *testing.T) {
			url, headers := rawSession(t, r, m)
			for _, l := range lists {
				got := map[string]map[string]any{}
				for _, it := range rawList(t, url, headers, l.method, l.member) {
					got[it[l.key].(string)] = it
				}
				for _, w := range own[l.method][l.member].([]any) {
					k := w.(map[string]any)[l.key].(string)
					if testkit.CanonicalJSON(t, got[k]) != testkit.CanonicalJSON(t, w) {
						t.Errorf("%s: %s listed as\n%s\nwant the server's own\n%s", l.method, k, testkit.CanonicalJSON(t, got[k]), testkit.CanonicalJSON(t, w))
					}
				}
			}
			for i, c := range []struct{ method, params string }{
				{"resources/read", `{"uri":"ui://clock/app.html"}`},
				{"prompts/get", `{"name":"greet","arguments":{"who":"you"}}`},
				{"completion/complete", `{"ref":{"type":"ref/prompt","name":"greet"},"argument":{"name":"who","value":"y"}}`},
			} {
				var got map[string]any
				if err := json.Unmarshal(rawCall(t, url, headers, 100+i, c.method, c.params), &got); err != nil {
					t.Fatal(err)
				}
				if !testkit.SameMCPResult(t, got, own[c.method]) {
					t.Errorf("%s answered\n%s\nwant the server's own\n%s", c.method, testkit.CanonicalJSON(t, got), testkit.CanonicalJSON(t, own[c.method]))
				}
			}
		})
	}
}

// servedAs is def, a tool of verbatimTools, as /mcp serves it: named
// name, without execution.taskSupport.
func servedAs(def map[string]any, name string) map[string]any {
	b, _ := json.Marshal(def)
	var c map[string]any
	_ = json.Unmarshal(b, &c) // a deep copy
	c["name"] = name
	if ex, ok := c["execution"].(map[string]any); ok {
		delete(ex, "taskSupport")
		if len(ex) == 0 {
			delete(c, "execution")
		}
	}
	return c
}

// rawToolsList lists r's tools in mode m with raw JSON-RPC POSTs
// (rawList) and returns each tool as decoded from the wire, by name.
func rawToolsList(t *testing.T, r *rig, m mode) map[string]map[string]any {
	t.Helper()
	url, headers := rawSession(t, r, m)
	got := map[string]map[string]any{}
	for _, tool := range rawList(t, url, headers, "tools/list", "tools") {
		got[tool["name"].(string)] = tool
	}
	return got
}

// rawSession returns the URL and headers of raw JSON-RPC POSTs to r in
// mode m: its protocol version (2025-11-25 for the SDK's latest), and a
// session's id, initialized first, where the mode has sessions.
func rawSession(t *testing.T, r *rig, m mode) (string, []string) {
	t.Helper()
	return rawSessionWith(t, r, m, `{}`)
}

// rawSessionWith is rawSession whose client declares caps (JSON).
func rawSessionWith(t *testing.T, r *rig, m mode, caps string) (string, []string) {
	t.Helper()
	protocol := m.protocol
	if protocol == "" {
		protocol = "2025-11-25"
	}
	url := r.url + m.endpoint
	headers := []string{"Mcp-Protocol-Version: " + protocol}
	if strings.HasPrefix(m.endpoint, "/sessions") {
		resp, err := http.DefaultClient.Do(mcpPost(t, url, apiKey, `{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"`+protocol+`","capabilities":`+caps+`,"clientInfo":{"name":"raw","version":"1"}}}`, headers...))
		if err != nil {
			t.Fatal(err)
		}
		_ = resp.Body.Close()
		headers = append(headers, "Mcp-Session-Id: "+resp.Header.Get("Mcp-Session-Id"))
		mcpRaw(t, url, apiKey, `{"jsonrpc":"2.0","method":"notifications/initialized"}`, headers...)
	}
	return url, headers
}

// rawCall POSTs request method with params (JSON) to url with headers
// and returns its result. Fails t on an error or no result.
func rawCall(t *testing.T, url string, headers []string, id int, method, params string) json.RawMessage {
	t.Helper()
	code, out, raw := mcpRaw(t, url, apiKey, `{"jsonrpc":"2.0","id":`+mustJSON(t, id)+`,"method":"`+method+`","params":`+params+`}`, headers...)
	if code != http.StatusOK || len(out.Result) == 0 {
		t.Fatalf("%s: %d %s", method, code, raw)
	}
	return out.Result
}

// rawList lists method's items (member of each page), following
// nextCursor, with rawCall, each as decoded from the wire, in order.
func rawList(t *testing.T, url string, headers []string, method, member string) []map[string]any {
	t.Helper()
	var got []map[string]any
	cursor := ""
	for page := 1; ; page++ {
		params := `{}`
		if cursor != "" {
			params = `{"cursor":` + mustJSON(t, cursor) + `}`
		}
		var res map[string]json.RawMessage
		var items []map[string]any
		raw := rawCall(t, url, headers, page, method, params)
		if err := json.Unmarshal(raw, &res); err != nil || json.Unmarshal(res[member], &items) != nil || items == nil {
			t.Fatalf("%s: %s has no %s (%v)", method, raw, member, err)
		}
		got = append(got, items...)
		cursor = ""
		if c, ok := res["nextCursor"]; ok {
			_ = json.Unmarshal(c, &cursor)
		}
		if cursor == "" {
			return got
		}
	}
}

// writeFile writes content to path.
func writeFile(t *testing.T, path, content string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}
