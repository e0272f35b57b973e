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
	b, err := json.Marshal(withContent(res))
	if err != nil {
		return nil, fmt.Errorf("encode MCP result: %w", err)
	}
	return b, nil
}

// withContent is res with content [] in place of null.
func withContent(res *mcp.CallToolResult) *mcp.CallToolResult {
	if res.Content != nil {
		return res
	}
	r := *res
	r.Content = []mcp.Content{}
	return &r
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

// Size is the length of res's encoding (Encode) in bytes, counted as
// it is encoded, without keeping it: a decoded result bounded as the host
// bounds one received as bytes (core.Config.MaxResultBytes, result
// memory). A result that does not encode counts 0: its encoding fails
// where it is written.
func Size(res *mcp.CallToolResult) int {
	var n counter
	if json.NewEncoder(&n).Encode(withContent(res)) != nil {
		return 0
	}
	return int(n) - 1 // Encode's newline
}

// counter is an io.Writer that counts what it is given, in bytes.
type counter int

// Write implements io.Writer.
func (c *counter) Write(p []byte) (int, error) {
	*c += counter(len(p))
	return len(p), nil
}
