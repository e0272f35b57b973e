package mcpresult

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

func TestProject(t *testing.T) {
	for _, tc := range []struct{ name, in, want string }{
		{"structured object as sent", `{"content":[{"type":"text","text":"{}"}],"structuredContent":{"z":1,"a":12345678901234567891}}`, `{"z":1,"a":12345678901234567891}`},
		{"structured array", `{"content":[],"structuredContent":[1,2]}`, `{"result":[1,2]}`},
		{"structured null is none", `{"content":[{"type":"text","text":"x"}],"structuredContent":null}`, `{"content":[{"type":"text","text":"x"}],"text":"x"}`},
		{"blocks", `{"content":[{"type":"text","text":"a"},{"type":"image","data":"AA==","mimeType":"image/png"},{"type":"text","text":"b"}]}`,
			`{"content":[{"type":"text","text":"a"},{"type":"image","data":"AA==","mimeType":"image/png"},{"type":"text","text":"b"}],"text":"a\nb"}`},
		{"no content", `{}`, `{"content":[],"text":""}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := Project([]byte(tc.in))
			if err != nil || string(got) != tc.want {
				t.Fatalf("Project = %s, %v; want %s", got, err, tc.want)
			}
		})
	}
}

func TestProjectErrors(t *testing.T) {
	var te *ToolError
	if _, err := Project([]byte(`{"content":[{"type":"text","text":"no"},{"type":"text","text":"way"}],"isError":true}`)); !errors.As(err, &te) || te.Message != "no\nway" {
		t.Fatalf("isError: %v", err)
	}
	if _, err := Project([]byte(`{"isError":true}`)); !errors.As(err, &te) || te.Message != "the MCP tool reported an error without text" {
		t.Fatalf("isError without text: %v", err)
	}
	for _, bad := range []string{`[]`, `"x"`, `{"content":{}}`, `{"content":[1]}`, `{`} {
		if _, err := Project([]byte(bad)); !errors.Is(err, ErrNotResult) {
			t.Errorf("Project(%s) = %v, want ErrNotResult", bad, err)
		}
	}
}

// TestSize: Size is the length of the result's encoding, for text (with
// characters JSON escapes), image, embedded, annotated and structured
// results, so that a limit on it holds to the byte.
func TestSize(t *testing.T) {
	for name, res := range map[string]*mcp.CallToolResult{
		"empty":   {},
		"text":    {Content: []mcp.Content{&mcp.TextContent{Text: strings.Repeat("a\n\"<", 5000)}}},
		"image":   {Content: []mcp.Content{&mcp.ImageContent{Data: make([]byte, 3000), MIMEType: "image/png"}}},
		"embed":   {Content: []mcp.Content{&mcp.EmbeddedResource{Resource: &mcp.ResourceContents{URI: "file:///a", Text: strings.Repeat("b", 2000)}}}},
		"meta":    {Meta: mcp.Meta{"k": strings.Repeat("m", 3000)}, IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: "x", Annotations: &mcp.Annotations{Audience: []mcp.Role{"user"}}}}},
		"struct":  {StructuredContent: map[string]any{"list": []any{"one", 2.0, true, map[string]any{"k": strings.Repeat("c", 1000)}}}},
		"raw":     {StructuredContent: json.RawMessage(`{"n":` + strings.Repeat("1", 900) + `}`)},
		"invalid": {StructuredContent: func() {}},
	} {
		enc, err := Encode(res)
		if n := Size(res); err != nil && n != 0 || err == nil && n != len(enc) {
			t.Errorf("%s: Size %d, encoded %d bytes (%v)", name, n, len(enc), err)
		}
	}
}
