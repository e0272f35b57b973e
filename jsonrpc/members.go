package jsonrpc

import (
	"bytes"
	"encoding/json"
)

// requestMembers are the raw values of the members of a request object
// that DecodeRequest reads; nil when absent. They alias the body.
type requestMembers struct {
	jsonrpc, method, params, id []byte
}

// scanMembers finds the members "jsonrpc", "method", "params" and "id" of
// obj, a JSON object that json.Valid accepted, the way encoding/json fills
// a struct with those fields: keys are unescaped and matched
// case-insensitively (bytes.EqualFold, as encoding/json does), the last
// matching key wins, and each value is the raw bytes of the value. It
// reads obj once, skipping nested values and strings without decoding
// them, so a large "params" costs a memchr-speed scan instead of a second
// full decode.
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
			m.jsonrpc = v
		case bytes.EqualFold(key, []byte("method")):
			m.method = v
		case bytes.EqualFold(key, []byte("params")):
			m.params = v
		case bytes.EqualFold(key, []byte("id")):
			m.id = v
		}
		i = skipSpace(obj, vEnd)
		if i < len(obj) && obj[i] == ',' {
			i = skipSpace(obj, i+1)
		}
	}
	return m
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
