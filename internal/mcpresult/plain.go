package mcpresult

import (
	"bytes"
	"unicode/utf8"

	"github.com/opentool-host/opentool-host/internal/strictjson"
)

// Plain reports whether b, a tools/call result's JSON (MCP 2025-11-25
// "Tools", Tool Result) as a server sent it, can be passed on as it is:
// the MCP SDK decodes it and encodes it back to the same JSON value, so
// that a client given b gets what it would get through the SDK. That is
// an object of exactly
//
//	"content"   an array of text blocks, each exactly {"type":"text","text":STRING}
//	"isError"   true or false (optional)
//
// with no member given twice anywhere, valid UTF-8, no \u escape of a
// UTF-16 surrogate (which the SDK's decoding may make U+FFFD), and no
// line break between tokens (b then goes as one line of an event
// stream's data). Anything else — _meta, structuredContent, other
// content, annotations, resultType, input requests, a member of another
// name or spelling (escaped, another case) — is not plain: decode it
// (mcp.CallToolResult) and encode the result. One pass of the syntax
// (strictjson.Members, which reads every member; a name seen twice is
// refused here), allocating nothing.
func Plain(b []byte) bool {
	if len(b) == 0 || b[0] != '{' || bytes.IndexAny(b, "\r\n") >= 0 || !utf8.Valid(b) || surrogateEscape(b) {
		return false
	}
	content, isError := false, false
	return strictjson.Members(b, func(name, v []byte) bool {
		switch string(name) {
		case "content":
			if content {
				return false
			}
			content = v[0] == '[' && textBlocks(v)
			return content
		case "isError":
			if isError {
				return false
			}
			isError = true
			return string(v) == "true" || string(v) == "false"
		}
		return false
	}) && content
}

// textBlocks reports whether v, a JSON array, holds text blocks only,
// each exactly {"type":"text","text":STRING}.
func textBlocks(v []byte) bool {
	return strictjson.Elements(v, func(e []byte) bool {
		typ, text := false, false
		return e[0] == '{' && strictjson.Members(e, func(name, v []byte) bool {
			switch string(name) {
			case "type":
				if typ {
					return false
				}
				typ = string(v) == `"text"`
				return typ
			case "text":
				if text {
					return false
				}
				text = v[0] == '"'
				return text
			}
			return false
		}) && typ && text
	})
}

// surrogateEscape reports whether b holds a \u escape of a UTF-16
// surrogate (\uD800 to \uDFFF, either case), or may: a backslash before
// "u" that is itself escaped ("\\u") is counted too, which only makes
// Plain refuse more.
func surrogateEscape(b []byte) bool {
	for i := bytes.Index(b, []byte(`\u`)); i >= 0 && i+3 < len(b); {
		if c, d := b[i+2]|0x20, b[i+3]|0x20; c == 'd' && d >= '8' && d <= 'f' && (d <= '9' || d >= 'a') {
			return true
		}
		j := bytes.Index(b[i+2:], []byte(`\u`))
		if j < 0 {
			return false
		}
		i += 2 + j
	}
	return false
}
