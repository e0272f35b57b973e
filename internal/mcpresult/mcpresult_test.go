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
// textResults are results of text blocks alone, as the SDK's client
// decodes them and as built in Go, whose sizes textSize counts.
func textResults(t testing.TB, texts ...string) map[string]*mcp.CallToolResult {
	blocks := make([]mcp.Content, len(texts))
	for i, s := range texts {
		blocks[i] = &mcp.TextContent{Text: s}
	}
	out := map[string]*mcp.CallToolResult{
		"blocks":        {Content: blocks},
		"isError":       {Content: blocks, IsError: true},
		"requestState":  {Content: blocks, RequestState: texts[0]},
		"no content":    {},
		"empty content": {Content: []mcp.Content{}},
	}
	wire, err := json.Marshal(map[string]any{"content": blocks, "resultType": "complete", "isError": true})
	if err != nil {
		t.Fatal(err)
	}
	var decoded mcp.CallToolResult
	if err := json.Unmarshal(wire, &decoded); err != nil {
		t.Fatal(err)
	}
	out["decoded with resultType"] = &decoded
	return out
}

// TestSizeOfText: a result of text blocks is counted exactly, escaping
// included (quotes, backslashes, control bytes, HTML characters, U+2028,
// invalid UTF-8), without encoding it: no allocation (the encoder's
// count took several).
func TestSizeOfText(t *testing.T) {
	texts := []string{"plain", "", "a\n\"<>&\\", "\x00\x01\x1f\b\f\r\t\x7f", "é漢字🙂", "\u2028\u2029", "bad \xff\xfe utf8 \xe2\x82", strings.Repeat("x<", 300)}
	for name, res := range textResults(t, texts...) {
		enc, err := Encode(res)
		if err != nil {
			t.Fatal(err)
		}
		n, ok := textSize(res)
		if !ok || n != len(enc) || Size(res) != len(enc) {
			t.Errorf("%s: textSize %d (%v), Size %d, encoded %d bytes: %s", name, n, ok, Size(res), len(enc), enc)
		}
	}
	res := textResults(t, "hello <world>")["decoded with resultType"]
	if a := testing.AllocsPerRun(100, func() { Size(res) }); a != 0 {
		t.Errorf("Size of a text result allocates %v times, want 0", a)
	}
	for name, res := range map[string]*mcp.CallToolResult{
		"_meta":             {Meta: mcp.Meta{"k": "v"}},
		"annotations":       {Content: []mcp.Content{&mcp.TextContent{Text: "x", Annotations: &mcp.Annotations{Priority: 1}}}},
		"block _meta":       {Content: []mcp.Content{&mcp.TextContent{Text: "x", Meta: mcp.Meta{"k": "v"}}}},
		"structuredContent": {StructuredContent: map[string]any{}},
		"image":             {Content: []mcp.Content{&mcp.ImageContent{Data: []byte{1}}}},
		"input requests":    {InputRequests: mcp.InputRequestMap{}},
	} {
		if _, ok := textSize(res); ok {
			t.Errorf("%s: textSize counted a result it does not know", name)
		}
	}
}

// FuzzSize: Size is the length of Encode's output for any text.
func FuzzSize(f *testing.F) {
	for _, s := range []string{"", "a", "\"\\/", "<&>", "\u2028", "\xff", "\x00\x1f", "漢"} {
		f.Add(s, s)
	}
	f.Fuzz(func(t *testing.T, a, b string) {
		for name, res := range textResults(t, a, b) {
			enc, err := Encode(res)
			if err != nil {
				t.Fatal(err)
			}
			if n := Size(res); n != len(enc) {
				t.Fatalf("%s: Size %d, encoded %d bytes: %s", name, n, len(enc), enc)
			}
		}
	})
}

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
