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

// TestSize: Size counts a result about as its encoding is long (within
// a quarter below and a half above, plus a few bytes), for text, image,
// embedded and structured results, without encoding it.
func TestSize(t *testing.T) {
	for name, res := range map[string]*mcp.CallToolResult{
		"empty":  {},
		"text":   {Content: []mcp.Content{&mcp.TextContent{Text: strings.Repeat("a", 5000)}}},
		"image":  {Content: []mcp.Content{&mcp.ImageContent{Data: make([]byte, 3000), MIMEType: "image/png"}}},
		"embed":  {Content: []mcp.Content{&mcp.EmbeddedResource{Resource: &mcp.ResourceContents{URI: "file:///a", Text: strings.Repeat("b", 2000)}}}},
		"struct": {StructuredContent: map[string]any{"list": []any{"one", 2.0, true, map[string]any{"k": strings.Repeat("c", 1000)}}}},
		"raw":    {StructuredContent: json.RawMessage(`{"n":` + strings.Repeat("1", 900) + `}`)},
	} {
		enc, err := Encode(res)
		if err != nil {
			t.Fatal(err)
		}
		if n := Size(res); n < len(enc)*3/4 || n > len(enc)*3/2+64 {
			t.Errorf("%s: Size %d, encoded %d bytes", name, n, len(enc))
		}
	}
}
