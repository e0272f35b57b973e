package mcpresult

import (
	"encoding/json"
	"fmt"
	"reflect"
	"unicode/utf8"

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

// Size is the length of res's encoding (Encode) in bytes, counted
// without keeping it: a decoded result bounded as the host bounds one
// received as bytes (core.Config.MaxResultBytes, result memory). A
// result of text blocks alone (textSize) is counted from its strings,
// without encoding it; any other is counted as it is encoded. A result
// that does not encode counts 0: its encoding fails where it is written.
func Size(res *mcp.CallToolResult) int {
	if n, ok := textSize(res); ok {
		return n
	}
	var n counter
	if json.NewEncoder(&n).Encode(withContent(res)) != nil {
		return 0
	}
	return int(n) - 1 // Encode's newline
}

// resultTypeField is the index of mcp.CallToolResult's unexported
// resultType, which its encoding writes as "resultType" (MCP
// 2026-07-28); -1 when the SDK has no such string field (textSize then
// counts nothing).
var resultTypeField = func() int {
	f, ok := reflect.TypeFor[mcp.CallToolResult]().FieldByName("resultType")
	if !ok || f.Type.Kind() != reflect.String || len(f.Index) != 1 {
		return -1
	}
	return f.Index[0]
}()

// textSize is the length of res's encoding when res is made of text
// blocks alone (no _meta, annotations, structuredContent or input
// requests; isError, requestState and resultType are counted), and
// true; else 0 and false. The encoding it counts is the SDK's
// (CallToolResult's and TextContent's MarshalJSON, through
// encoding/json): {"content":[{"type":"text","text":...},...],
// "isError":true,"requestState":...,"resultType":...}.
func textSize(res *mcp.CallToolResult) (int, bool) {
	if resultTypeField < 0 || len(res.Meta) > 0 || res.StructuredContent != nil || res.InputRequests != nil {
		return 0, false
	}
	n := len(`{"content":[]}`)
	for i, c := range res.Content {
		tc, ok := c.(*mcp.TextContent)
		if !ok || tc == nil || len(tc.Meta) > 0 || tc.Annotations != nil {
			return 0, false
		}
		if i > 0 {
			n++ // ,
		}
		n += len(`{"type":"text","text":}`) + quotedLen(tc.Text)
	}
	if res.IsError {
		n += len(`,"isError":true`)
	}
	if res.RequestState != "" {
		n += len(`,"requestState":`) + quotedLen(res.RequestState)
	}
	if rt := reflect.ValueOf(res).Elem().Field(resultTypeField).String(); rt != "" {
		n += len(`,"resultType":`) + quotedLen(rt)
	}
	return n, true
}

// quotedLen is the length of s as encoding/json writes a string (HTML
// escaping on, as json.Marshal and a new json.Encoder): quoted; '"',
// '\\', '\b', '\f', '\n', '\r' and '\t' as two bytes; every other control
// byte, '<', '>', '&', U+2028, U+2029 and each byte of invalid UTF-8
// (as \ufffd) as six.
func quotedLen(s string) int {
	n := 2
	for i := 0; i < len(s); {
		b := s[i]
		if b < utf8.RuneSelf {
			i++
			switch {
			case b == '"' || b == '\\' || b == '\b' || b == '\f' || b == '\n' || b == '\r' || b == '\t':
				n += 2
			case b < 0x20 || b == '<' || b == '>' || b == '&':
				n += 6
			default:
				n++
			}
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		i += size
		if r == utf8.RuneError && size == 1 || r == '\u2028' || r == '\u2029' {
			n += 6
		} else {
			n += size
		}
	}
	return n
}

// counter is an io.Writer that counts what it is given, in bytes.
type counter int

// Write implements io.Writer.
func (c *counter) Write(p []byte) (int, error) {
	*c += counter(len(p))
	return len(p), nil
}
