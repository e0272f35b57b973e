package host

import (
	"encoding/json"
	"testing"

	"github.com/opentool-host/opentool-host/host/toolsearch"
)

// TestFoundAsOwnDefinition: search_tools' hit of a function its caller's
// view defines otherwise (Shown.Definition, from a possibly hostile MCP
// server) gives that definition's description and inputSchema as
// written; a description that is not a JSON string (or none) is "", an
// inputSchema that is not a JSON object (or none) the shared one, a
// definition that is not a JSON object the shared ones; without one, the
// shared ones.
func TestFoundAsOwnDefinition(t *testing.T) {
	shared := toolsearch.Tool{Name: "fmt", Description: "shared <text>", InputSchema: json.RawMessage(`{"type":"object"}`)}
	for _, c := range []struct {
		name, def, desc, schema string
	}{
		{"none", ``, `"shared \u003ctext\u003e"`, `{"type":"object"}`},
		{"own, as written", `{"name":"fmt","description":"own caf\u00e9", "inputSchema":{ "type":"object","properties":{"f":{"enum":["a","b"]}} }}`,
			`"own caf\u00e9"`, `{ "type":"object","properties":{"f":{"enum":["a","b"]}} }`},
		{"no description", `{"name":"fmt","inputSchema":{"type":"object","required":["x"]}}`, `""`, `{"type":"object","required":["x"]}`},
		{"hostile members", `{"name":"fmt","description":5,"inputSchema":"any"}`, `""`, `{"type":"object"}`},
		{"null members", `{"name":"fmt","description":null,"inputSchema":null}`, `""`, `{"type":"object"}`},
		{"not an object", `["fmt"]`, `"shared \u003ctext\u003e"`, `{"type":"object"}`},
	} {
		var def json.RawMessage
		if c.def != "" {
			def = json.RawMessage(c.def)
		}
		f := foundAs(shared, def)
		if f.Name != "fmt" || string(f.Description) != c.desc || string(f.InputSchema) != c.schema {
			t.Errorf("%s: %s %s %s; want %s %s", c.name, f.Name, f.Description, f.InputSchema, c.desc, c.schema)
		}
		if _, err := json.Marshal(f); err != nil {
			t.Errorf("%s: the hit does not encode: %v", c.name, err)
		}
	}
}
