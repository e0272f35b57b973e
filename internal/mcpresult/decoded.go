package mcpresult

import (
	"encoding/json"
	"fmt"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Encode is the JSON of res, an MCP CallToolResult, with content []
// rather than null (MCP requires an array). Errors: json.Marshal's (a
// structuredContent that does not encode).
func Encode(res *mcp.CallToolResult) ([]byte, error) {
	if res.Content == nil {
		r := *res
		r.Content = []mcp.Content{}
		res = &r
	}
	b, err := json.Marshal(res)
	if err != nil {
		return nil, fmt.Errorf("encode MCP result: %w", err)
	}
	return b, nil
}

// ProjectDecoded is Project of res, an MCP CallToolResult already decoded
// (a declared MCP server's, as the MCP SDK's client decoded it): res
// encoded (Encode), then projected. Errors: Encode's, Project's.
func ProjectDecoded(res *mcp.CallToolResult) ([]byte, error) {
	b, err := Encode(res)
	if err != nil {
		return nil, err
	}
	return Project(b)
}

// Size is about how many bytes res takes encoded, counted without
// encoding it: the text, data and URIs of its content blocks, its
// structuredContent (its bytes when it is raw JSON, else its strings,
// keys and a few bytes per value) and a few bytes per block. It bounds a
// decoded result as the host bounds one received as bytes
// (core.Config.MaxResultBytes, result memory); it is at most a little
// under the encoded size (base64 data counts as encoded).
func Size(res *mcp.CallToolResult) int {
	n := 16
	for _, c := range res.Content {
		n += 32
		switch c := c.(type) {
		case *mcp.TextContent:
			n += len(c.Text)
		case *mcp.ImageContent:
			n += base64Len(len(c.Data)) + len(c.MIMEType)
		case *mcp.AudioContent:
			n += base64Len(len(c.Data)) + len(c.MIMEType)
		case *mcp.ResourceLink:
			n += len(c.URI) + len(c.Name) + len(c.Description)
		case *mcp.EmbeddedResource:
			if r := c.Resource; r != nil {
				n += len(r.URI) + len(r.Text) + base64Len(len(r.Blob))
			}
		}
	}
	return n + valueSize(res.StructuredContent)
}

// base64Len is the length of n bytes in standard base64.
func base64Len(n int) int { return (n + 2) / 3 * 4 }

// valueSize is about how many bytes v (a decoded JSON value, or raw
// JSON) takes encoded.
func valueSize(v any) int {
	switch v := v.(type) {
	case nil:
		return 0
	case json.RawMessage:
		return len(v)
	case []byte:
		return len(v)
	case string:
		return len(v) + 2
	case map[string]any:
		n := 2
		for k, e := range v {
			n += len(k) + 4 + valueSize(e)
		}
		return n
	case []any:
		n := 2
		for _, e := range v {
			n += 1 + valueSize(e)
		}
		return n
	}
	return 8 // a number, a boolean
}
