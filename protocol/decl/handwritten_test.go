package decl

import (
	"errors"
	"testing"
)

// TestHandWrittenFiles: every hand-written file kind takes comments and
// trailing commas, and a fault in it, syntax or not, says its line and
// column.
func TestHandWrittenFiles(t *testing.T) {
	parsers := map[string]func([]byte) error{
		"tools":   func(b []byte) error { _, err := ParseCommands(b); return err },
		"policy":  func(b []byte) error { _, err := ParsePolicy(b); return err },
		"mcp":     func(b []byte) error { _, err := ParseMCP(b); return err },
		"secrets": func(b []byte) error { _, err := ParseSecretsFile(b); return err },
	}
	cases := []struct {
		kind, good, bad string
		line, col       int
	}{
		{"tools", "{\n  // the tools\n  \"functions\": [\n    {\"name\": \"f\", \"description\": \"d\", \"command\": [\"sh\",],}, /* one */\n  ],\n}",
			"{\n  \"functions\": [\n    {\"name\": \"f\", \"description\": \"d\", \"command\": [\"sh\"], \"timeout\": 5}\n  ]\n}", 3, 58},
		{"policy", "{\n  \"timeout_ms\": 5000, // five seconds\n}", "{\n  \"timeout_ms\": 5000\n  \"prefix\": \"p\"\n}", 3, 3},
		{"mcp", "{\"mcpServers\": {\n  \"a\": {\"command\": \"x\", \"args\": [\"1\",],},\n}}", "{\"mcpServers\": {\n  \"a\": {\"command\": \"x\", \"args\": [1]}\n}}", 2, 34},
		{"secrets", "{\"secrets\": {\n  \"T\": {\"env\": \"TOKEN\"}, // a token\n}}", "{\"secrets\": {\n  \"T\": {\"env\": \"TOKEN\", \"file\": \"/f\"}\n}}", 2, 3},
	}
	for _, tc := range cases {
		parse := parsers[tc.kind]
		if err := parse([]byte(tc.good)); err != nil {
			t.Errorf("%s with comments and trailing commas: %v", tc.kind, err)
		}
		err := parse([]byte(tc.bad))
		var f *Fault
		if !errors.As(err, &f) || f.Line != tc.line || f.Column != tc.col || f.Excerpt == "" {
			t.Errorf("%s: fault %v, want one at %d:%d with its line", tc.kind, err, tc.line, tc.col)
		}
	}
}
