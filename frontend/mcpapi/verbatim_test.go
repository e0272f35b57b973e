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
	"github.com/opentool-host/opentool-host/host"
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
	list := filepath.Join(t.TempDir(), "tools.json")
	writeFile(t, list, verbatimTools)
	r := newRig(t, func(c *host.Config) {
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
				} else if canonical(t, g) != canonical(t, w) {
					t.Errorf("tool %s listed as\n%s\nwant the server's own\n%s", name, canonical(t, g), canonical(t, w))
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
				if err := json.Unmarshal([]byte(canonical(t, w)), &direct); err != nil {
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

// canonical is v as canonical JSON: objects' members sorted, no
// insignificant space.
func canonical(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	var a any
	if err := json.Unmarshal(b, &a); err != nil {
		t.Fatal(err)
	}
	return mustJSON(t, a)
}

// rawToolsList lists r's tools in mode m with raw JSON-RPC POSTs (a
// session's initialize first where the mode has sessions), following
// nextCursor, and returns each tool as decoded from the wire, by name.
func rawToolsList(t *testing.T, r *rig, m mode) map[string]map[string]any {
	t.Helper()
	protocol := m.protocol
	if protocol == "" {
		protocol = "2025-11-25"
	}
	url := r.url + m.endpoint
	headers := []string{"Mcp-Protocol-Version: " + protocol}
	if strings.HasPrefix(m.endpoint, "/sessions") {
		resp, err := http.DefaultClient.Do(mcpPost(t, url, apiKey, `{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"`+protocol+`","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}`, headers...))
		if err != nil {
			t.Fatal(err)
		}
		_ = resp.Body.Close()
		headers = append(headers, "Mcp-Session-Id: "+resp.Header.Get("Mcp-Session-Id"))
		mcpRaw(t, url, apiKey, `{"jsonrpc":"2.0","method":"notifications/initialized"}`, headers...)
	}
	got := map[string]map[string]any{}
	cursor := ""
	for page := 1; ; page++ {
		params := `{}`
		if cursor != "" {
			params = `{"cursor":` + mustJSON(t, cursor) + `}`
		}
		code, out, raw := mcpRaw(t, url, apiKey, `{"jsonrpc":"2.0","id":`+mustJSON(t, page)+`,"method":"tools/list","params":`+params+`}`, headers...)
		var res struct {
			Tools      []map[string]any `json:"tools"`
			NextCursor string           `json:"nextCursor"`
		}
		if err := json.Unmarshal(out.Result, &res); err != nil || code != http.StatusOK || res.Tools == nil {
			t.Fatalf("tools/list: %d %s (%v)", code, raw, err)
		}
		for _, tool := range res.Tools {
			got[tool["name"].(string)] = tool
		}
		if cursor = res.NextCursor; cursor == "" {
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
