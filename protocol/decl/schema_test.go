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
		good            []string // accepted by both, beside the example
	}{
		{"mcp.schema.json", "plugins/notes.mcp.json", func(b []byte) error { _, err := ParseMCP(b); return err },
			[]string{`{"mcpServers":{"a":{"command":"x","url":"http://h/"}}}`, `{"mcpServers":{"a":{"command":"x","args":[1]}}}`,
				`{"servers":{"a":{"type":"sse","command":"x"}}}`, `{"other":{}}`, `{"mcpServers":{"a":{"url":"http://h/","serverUrl":"http://h/"}}}`,
				`{"mcpServers":{"a":{"type":"stdio","url":"http://h/"}}}`, `{"mcpServers":{"a":{"command":"x","env":{"A=B":"c"}}}}`},
			[]string{`{"globalShortcut":"","mcpServers":{"my server":{"command":"x","env":{"N":1},"autoApprove":[]},"off":{"disabled":true}}}`,
				`{"inputs":[],"servers":{"gh":{"type":"http","url":"https://h/mcp"},"fs":{"type":"stdio","command":"x","envFile":".env","dev":{}}}}`,
				`{"mcpServers":{"w":{"serverUrl":"https://h/sse"},"s":{"type":"sse","url":"https://h/sse","headers":{"A":"b"}}}}`,
				`{"mcp":{"servers":{"a":{"command":"x"}}},"editor.fontSize":12}`}},
		{"tools.schema.json", "plugins/text.tools.json", func(b []byte) error { _, err := ParseCommands(b); return err },
			[]string{`{"functions":[]}`, `{"functions":[{"name":"f","description":"d","command":["x"],"bogus":1}]}`, `{"functions":[{"name":"f","description":"d","command":["x"],"output":"xml"}]}`}, nil},
		{"policy.schema.json", "plugins/files.policy.json", func(b []byte) error { _, err := ParsePolicy(b); return err },
			[]string{`{"timeout":1}`, `{"env":{"LD_PRELOAD":"x"}}`, `{"secrets":{"T":{"file":"a","env":"B"}}}`, `{"secrets":{"T":{}}}`,
				`{"sandbox":{"network":"maybe"}}`, `{"sandbox":{"connect_tcp":[443]}}`, `{"limits":{"memory_mb":-1}}`, `{"prefix":"a b"}`}, nil},
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
		for _, g := range tc.good {
			if s, p := check([]byte(g)); !s || !p {
				t.Errorf("%s: %s: schema ok %v, parser ok %v", tc.schema, g, s, p)
			}
		}
	}
}
