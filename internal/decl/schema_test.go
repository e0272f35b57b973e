package decl

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"
)

// TestPublishedSchemasMatchTheParsers checks docs/schema/*.json against
// the example declarations and a few faults the parsers refuse, so the
// published schemas and the code cannot drift apart unseen.
func TestPublishedSchemasMatchTheParsers(t *testing.T) {
	root := filepath.Join("..", "..")
	for _, tc := range []struct {
		schema, example string
		parse           func([]byte) error
		bad             []string
	}{
		{"mcp.schema.json", "plugins/notes.mcp.json", func(b []byte) error { _, err := ParseMCP(b); return err },
			[]string{`{"mcpServers":{"a":{"command":"x","url":"http://h/"}}}`, `{"mcpServers":{"a":{"command":"x","bogus":1}}}`, `{"mcpServers":{"a b":{"command":"x"}}}`}},
		{"tools.schema.json", "plugins/text.tools.json", func(b []byte) error { _, err := ParseCommands(b); return err },
			[]string{`{"functions":[]}`, `{"functions":[{"name":"f","description":"d","command":["x"],"bogus":1}]}`, `{"functions":[{"name":"f","description":"d","command":["x"],"output":"xml"}]}`}},
		{"policy.schema.json", "plugins/files.policy.json", func(b []byte) error { _, err := ParsePolicy(b); return err },
			[]string{`{"timeout":1}`, `{"env":{"LD_PRELOAD":"x"}}`, `{"secrets":{"T":{"file":"a","env":"B"}}}`, `{"secrets":{"T":{}}}`,
				`{"sandbox":{"network":"maybe"}}`, `{"sandbox":{"connect_tcp":[443]}}`, `{"limits":{"memory_mb":-1}}`, `{"prefix":"a b"}`}},
	} {
		c := jsonschema.NewCompiler()
		sch, err := c.Compile(filepath.Join(root, "docs", "schema", tc.schema))
		if err != nil {
			t.Fatalf("%s: %v", tc.schema, err)
		}
		data, err := os.ReadFile(filepath.Join(root, tc.example))
		if err != nil {
			t.Fatal(err)
		}
		check := func(doc []byte) (schemaOK, parseOK bool) {
			v, err := jsonschema.UnmarshalJSON(bytes.NewReader(doc))
			if err != nil {
				t.Fatal(err)
			}
			return sch.Validate(v) == nil, tc.parse(doc) == nil
		}
		if s, p := check(data); !s || !p {
			t.Errorf("%s: example %s: schema ok %v, parser ok %v", tc.schema, tc.example, s, p)
		}
		for _, b := range tc.bad {
			if s, p := check([]byte(b)); s || p {
				t.Errorf("%s: %s accepted (schema %v, parser %v)", tc.schema, b, s, p)
			}
		}
	}
}
