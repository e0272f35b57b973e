package jsonrpc

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"unicode/utf16"
	"unicode/utf8"
)

// requestMembers are the raw values of the members of a request object
// that DecodeRequest reads; nil when absent. They alias the body.
type requestMembers struct {
	jsonrpc, method, params, id []byte
	// dup is the name of the first member given twice ("method"), ""
	// when none is.
	dup string
}

// seen notes that member name, already present when present is true, is
// given again.
func (m *requestMembers) seen(present bool, name string) {
	if present && m.dup == "" {
		m.dup = name
	}
}

// scanMembers finds the members "jsonrpc", "method", "params" and "id" of
// obj, a JSON object that json.Valid accepted, the way encoding/json fills
// a struct with those fields: keys are unescaped and matched
// case-insensitively (bytes.EqualFold, as encoding/json does) and each
// value is the raw bytes of the value. A member whose name matches twice
// (two "method" keys, or "id" and "ID") is noted in dup (the last value
// is kept, as encoding/json would, but DecodeRequest refuses it). It reads
// obj once, skipping nested values and strings without decoding them, so
// a large "params" costs a memchr-speed scan instead of a second full
// decode.
func scanMembers(obj []byte) requestMembers {
	var m requestMembers
	i := skipSpace(obj, 1) // past '{'
	for i < len(obj) && obj[i] == '"' {
		kEnd := stringEnd(obj, i)
		key := obj[i+1 : kEnd-1]
		if bytes.IndexByte(key, '\\') >= 0 {
			var s string
			if json.Unmarshal(obj[i:kEnd], &s) == nil {
				key = []byte(s)
			}
		}
		i = skipSpace(obj, kEnd)
		i = skipSpace(obj, i+1) // past ':'
		vEnd := valueEnd(obj, i)
		v := obj[i:vEnd]
		switch {
		case bytes.EqualFold(key, []byte("jsonrpc")):
			m.seen(m.jsonrpc != nil, "jsonrpc")
			m.jsonrpc = v
		case bytes.EqualFold(key, []byte("method")):
			m.seen(m.method != nil, "method")
			m.method = v
		case bytes.EqualFold(key, []byte("params")):
			m.seen(m.params != nil, "params")
			m.params = v
		case bytes.EqualFold(key, []byte("id")):
			m.seen(m.id != nil, "id")
			m.id = v
		}
		i = skipSpace(obj, vEnd)
		if i < len(obj) && obj[i] == ',' {
			i = skipSpace(obj, i+1)
		}
	}
	return m
}

// duplicateError is the -32600 error of member m.dup given twice in obj:
// `invalid request: duplicate member "method"`, with the keys as written
// when they are not all exactly the name: `... ("method" and "METHOD")`.
func (m *requestMembers) duplicateError(obj []byte) *Error {
	msg := fmt.Sprintf("invalid request: duplicate member %q", m.dup)
	keys := keysFolding(obj, m.dup)
	for _, k := range keys {
		if k != m.dup {
			quoted := make([]string, len(keys))
			for i, k := range keys {
				quoted[i] = strconv.Quote(k)
			}
			msg += " (" + strings.Join(quoted, " and ") + ")"
			break
		}
	}
	return &Error{Code: CodeInvalidRequest, Message: msg}
}

// keysFolding returns the keys of the valid JSON object obj that match
// name as encoding/json matches field names (ignoring case), unescaped,
// in order. It is for error messages only: it decodes obj again.
func keysFolding(obj []byte, name string) []string {
	dec := json.NewDecoder(bytes.NewReader(obj))
	if _, err := dec.Token(); err != nil { // '{'
		return nil
	}
	var keys []string
	for dec.More() {
		tok, err := dec.Token()
		var skip json.RawMessage
		if err != nil || dec.Decode(&skip) != nil {
			return keys
		}
		if k, _ := tok.(string); strings.EqualFold(k, name) {
			keys = append(keys, k)
		}
	}
	return keys
}

// idProblem says why the raw JSON id cannot be echoed in a response, ""
// when it can: it must be absent, null, a number, or a string that is
// valid UTF-8 and has no \u escape of a lone UTF-16 surrogate (either
// would make the echoed response invalid or ambiguous text). id is part of
// a body json.Valid accepted.
func idProblem(id []byte) string {
	if len(id) == 0 {
		return ""
	}
	switch c := id[0]; {
	case c == '"':
		return idStringProblem(id[1 : len(id)-1])
	case c == 'n' || c == '-' || c >= '0' && c <= '9':
		return ""
	}
	return `"id" must be a string, a number or null`
}

// idStringProblem checks the content of a valid JSON string literal.
func idStringProblem(s []byte) string {
	if !utf8.Valid(s) {
		return `"id" must be valid UTF-8`
	}
	for i := bytes.IndexByte(s, '\\'); i >= 0 && i < len(s); {
		if s[i] != '\\' {
			i++
			continue
		}
		if s[i+1] != 'u' {
			i += 2
			continue
		}
		r := hex4(s[i+2 : i+6])
		if !utf16.IsSurrogate(r) {
			i += 6
			continue
		}
		if r < 0xdc00 && i+12 <= len(s) && s[i+6] == '\\' && s[i+7] == 'u' {
			if lo := hex4(s[i+8 : i+12]); lo >= 0xdc00 && lo <= 0xdfff {
				i += 12
				continue
			}
		}
		return fmt.Sprintf(`"id" must not have a lone UTF-16 surrogate escape (%s)`, s[i:i+6])
	}
	return ""
}

// hex4 decodes 4 hexadecimal digits (valid, as json.Valid checked them).
func hex4(h []byte) rune {
	var r rune
	for _, c := range h {
		switch {
		case c >= '0' && c <= '9':
			c -= '0'
		case c >= 'a' && c <= 'f':
			c -= 'a' - 10
		default:
			c -= 'A' - 10
		}
		r = r<<4 | rune(c)
	}
	return r
}

func skipSpace(b []byte, i int) int {
	for i < len(b) && (b[i] == ' ' || b[i] == '\t' || b[i] == '\n' || b[i] == '\r') {
		i++
	}
	return i
}

// stringEnd returns the index just past the closing quote of the valid
// JSON string starting at b[i] == '"'.
func stringEnd(b []byte, i int) int {
	j := i + 1
	for {
		k := bytes.IndexByte(b[j:], '"')
		if k < 0 {
			return len(b) // not reached for valid JSON
		}
		j += k
		// The quote is escaped when an odd number of backslashes precede it.
		n := 0
		for p := j - 1; p > i && b[p] == '\\'; p-- {
			n++
		}
		j++
		if n%2 == 0 {
			return j
		}
	}
}

// valueEnd returns the index just past the valid JSON value starting at
// b[i].
func valueEnd(b []byte, i int) int {
	if i >= len(b) {
		return i
	}
	switch b[i] {
	case '"':
		return stringEnd(b, i)
	case '{', '[':
		depth := 0
		for j := i; j < len(b); {
			switch b[j] {
			case '"':
				j = stringEnd(b, j)
				continue
			case '{', '[':
				depth++
			case '}', ']':
				depth--
				if depth == 0 {
					return j + 1
				}
			}
			j++
		}
		return len(b)
	default: // number, true, false, null
		j := i
		for j < len(b) && b[j] != ',' && b[j] != '}' && b[j] != ']' && b[j] != ' ' && b[j] != '\t' && b[j] != '\n' && b[j] != '\r' {
			j++
		}
		return j
	}
}
