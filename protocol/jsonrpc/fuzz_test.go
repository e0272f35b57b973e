package jsonrpc

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// decodeSeeds are request bodies that reach every branch of DecodeRequest:
// valid requests of each id kind, every invalid-request reason, parse
// errors, and the whitespace and escaping corners.
var decodeSeeds = []string{
	`{"jsonrpc":"2.0","method":"add","params":{"a":1,"b":2},"id":1}`,
	`{"jsonrpc":"2.0","method":"add","params":{"a":1,"b":2},"id":"abc"}`,
	`{"jsonrpc":"2.0.0","method":"add","id":null}`,
	`{"jsonrpc":"2.0","method":"add","params":null}`,
	`{"jsonrpc":"2.0","method":"add","params":{},"id":-1.5e3}`,
	` 	{"jsonrpc":"2.0","method":"\u0065cho","params":{"s":"\ud83d\ude00"},"id":9007199254740993}` + "\r\n",
	`{"method":"add","jsonrpc":"2.0","method":"sub","id":1}`,
	`[{"jsonrpc":"2.0","method":"add","id":1}]`,
	`[]`,
	`"string"`,
	`42`,
	`null`,
	`{}`,
	`{"jsonrpc":"2.0","id":1}`,
	`{"jsonrpc":"2.0","method":null,"id":1}`,
	`{"jsonrpc":"2.0","method":7,"id":1}`,
	`{"jsonrpc":"2.0","method":"","id":1}`,
	`{"jsonrpc":2,"method":"add","id":1}`,
	`{"jsonrpc":null,"method":"add","id":1}`,
	`{"method":"add","id":1}`,
	`{"jsonrpc":"2.0","method":"add","params":[1,2],"id":1}`,
	`{"jsonrpc":"2.0","method":"add","params":"x","id":1}`,
	`{"jsonrpc":"2.0","method":"add","id":{"a":1}}`,
	`{"jsonrpc":"2.0","method":"add","id":[1]}`,
	`{"jsonrpc":"2.0","method":"add","id":true}`,
	`{"jsonrpc":"2.0","method":"add","id":1`,
	`{"jsonrpc":"2.0","method":"add",}`,
	`{"jsonrpc":"2.0","method":"add","id":01}`,
	``,
	`   `,
	"\u00a0{\"jsonrpc\":\"2.0\",\"method\":\"add\",\"id\":1}",
	"{\"jsonrpc\":\"2.0\",\"method\":\"add\",\"id\":1}\u0085",
	"{\"jsonrpc\":\"2.0\",\"method\":\"a\xffb\",\"id\":1}",
	`{"jsonrpc":"2.0","method":"add","params":{"a":[[[[[[[[[[[[[[[[[[[[1]]]]]]]]]]]]]]]]]]]},"id":1}`,
	// Members given twice, also as encoding/json folds them.
	`{"jsonrpc":"2.0","method":"add","params":{"a":1},"params":{"a":2},"id":1}`,
	`{"jsonrpc":"2.0","method":"add","id":1,"id":2}`,
	`{"jsonrpc":"2.0","jsonrpc":"2.0","method":"add","id":1}`,
	`{"jsonrpc":"2.0","method":"add","Method":"rm","id":1}`,
	`{"jsonrpc":"2.0","method":"add","\u006dethod":"rm","id":1}`,
	"{\"jsonrpc\":\"2.0\",\"method\":\"add\",\"params\":{},\"param\u017f\":{\"x\":1},\"id\":1}",
	`{"jsonrpc":"2.0","method":"add","params":{"a":1,"a":2,"A":3},"id":1}`,
	// String ids that cannot be echoed, and ones that can.
	"{\"jsonrpc\":\"2.0\",\"method\":\"add\",\"id\":\"a\xffb\"}",
	"{\"jsonrpc\":\"2.0\",\"method\":\"add\",\"id\":\"\xed\xa0\x80\"}",
	`{"jsonrpc":"2.0","method":"add","id":"\ud800"}`,
	`{"jsonrpc":"2.0","method":"add","id":"\udc00\ud800"}`,
	`{"jsonrpc":"2.0","method":"add","id":"x\uD83D\u0041"}`,
	`{"jsonrpc":"2.0","method":"add","id":"\ud83d\ude00"}`,
	`{"jsonrpc":"2.0","method":"add","id":"\\ud800"}`,
	`{"jsonrpc":"2.0","method":"add","id":"\ufffd\uFFFD�"}`,
	`{"jsonrpc":"2.0","method":"add","id":"\ud800","id":2}`,
}

// FuzzDecodeRequest checks DecodeRequest against encoding/json on any
// body: it never panics; a body that is not JSON is a parse error
// (-32700); an object that gives a member twice (as encoding/json
// matches member names, ignoring case) is an invalid request (-32600); so
// is one whose string id encoding/json would alter (invalid UTF-8, lone
// surrogate escapes: it decodes to more U+FFFD than are written); an
// accepted request has a non-empty method, params that are absent or a
// JSON object, and an id that is absent or a JSON string, number or null,
// all as encoding/json reads the body; a rejected one has code -32700 or
// -32600; and the responses built from what it returns (AppendResult,
// AppendError) are valid JSON that echo the id.
func FuzzDecodeRequest(f *testing.F) {
	for _, s := range decodeSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		req, rerr := DecodeRequest(body)
		valid := json.Valid(body)
		if m, dups, err := members(body); valid && err == nil {
			checkRefusals(t, body, m, dups, req, rerr)
		}
		if rerr != nil {
			if rerr.Code != CodeParseError && rerr.Code != CodeInvalidRequest {
				t.Fatalf("error code %d for %q", rerr.Code, body)
			}
			if rerr.Message == "" {
				t.Fatalf("empty error message for %q", body)
			}
			if !valid && rerr.Code != CodeParseError {
				t.Fatalf("body %q is not JSON but got code %d (%s)", body, rerr.Code, rerr.Message)
			}
			if valid && rerr.Code == CodeParseError {
				t.Fatalf("body %q is JSON but got a parse error (%s)", body, rerr.Message)
			}
			var id []byte
			if req != nil {
				id = req.ID
				checkID(t, body, id)
			}
			checkResponse(t, AppendError(nil, rerr, id), id)
			return
		}
		if req == nil {
			t.Fatalf("nil request and nil error for %q", body)
		}
		if !valid {
			t.Fatalf("body %q is not JSON but was accepted as %+v", body, req)
		}
		m, _, err := members(body)
		if err != nil {
			t.Fatalf("accepted %q that is not a JSON object: %v", body, err)
		}
		var method, version string
		if err := json.Unmarshal(m["method"], &method); err != nil || method == "" || method != req.Method {
			t.Fatalf("method %q, encoding/json reads %q (%v) from %q", req.Method, method, err, body)
		}
		if v := m["jsonrpc"]; len(v) == 0 || v[0] != '"' || json.Unmarshal(v, &version) != nil || version != req.JSONRPC {
			t.Fatalf("jsonrpc %q, encoding/json reads %q from %q", req.JSONRPC, v, body)
		}
		if req.Params != nil {
			var obj map[string]any
			if err := json.Unmarshal(req.Params, &obj); err != nil || obj == nil {
				t.Fatalf("params %q is not a JSON object (%v), from %q", req.Params, err, body)
			}
			if !bytes.Equal(req.Params, m["params"]) {
				t.Fatalf("params %q, encoding/json reads %q", req.Params, m["params"])
			}
		} else if p := m["params"]; p != nil && string(p) != "null" {
			t.Fatalf("params %q dropped from %q", p, body)
		}
		checkID(t, body, req.ID)
		if !bytes.Equal(req.ID, m["id"]) {
			t.Fatalf("id %q, encoding/json reads %q", req.ID, m["id"])
		}
		checkResponse(t, AppendResult(nil, req.Params, req.ID), req.ID)
	})
}

// members reads the members of the JSON object body the way
// encoding/json fills a struct: keys match the names jsonrpc, method,
// params and id case-insensitively (Unicode folding), and the last
// matching key wins. Other keys are dropped. dups lists the names matched
// more than once.
func members(body []byte) (m map[string]json.RawMessage, dups []string, err error) {
	dec := json.NewDecoder(bytes.NewReader(body))
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		return nil, nil, fmt.Errorf("not an object: %v %v", tok, err)
	}
	m = map[string]json.RawMessage{}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return nil, nil, err
		}
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			return nil, nil, err
		}
		for _, name := range []string{"jsonrpc", "method", "params", "id"} {
			if strings.EqualFold(tok.(string), name) {
				if _, seen := m[name]; seen {
					dups = append(dups, name)
				}
				m[name] = v
			}
		}
	}
	return m, dups, nil
}

// checkRefusals checks the refusals of the JSON object body whose
// members are m (dups: given twice): a duplicate is refused naming a
// member given twice, without echoing an id that was given twice; a
// string id that encoding/json would alter is refused and not echoed.
func checkRefusals(t *testing.T, body []byte, m map[string]json.RawMessage, dups []string, req *Request, rerr *Error) {
	t.Helper()
	if len(dups) > 0 {
		if rerr == nil || rerr.Code != CodeInvalidRequest || !strings.Contains(rerr.Message, "duplicate member") {
			t.Fatalf("%q gives %v twice but got %+v", body, dups, rerr)
		}
		named := false
		for _, d := range dups {
			named = named || strings.Contains(rerr.Message, strconv.Quote(d))
		}
		if !named || slices.Contains(dups, "id") && req != nil && req.ID != nil {
			t.Fatalf("%q gives %v twice: %s, id %q", body, dups, rerr.Message, req.ID)
		}
		return
	}
	if id := m["id"]; len(id) > 0 && id[0] == '"' && !echoable(id) {
		if rerr == nil || rerr.Code != CodeInvalidRequest || req != nil && req.ID != nil {
			t.Fatalf("id %q cannot be echoed but got %+v (id %q)", id, rerr, req.ID)
		}
	}
}

// echoable reports whether encoding/json decodes the JSON string id
// without replacing anything by U+FFFD: it decodes to no more U+FFFD than
// are written in it, as the character or as a \ufffd escape.
func echoable(id []byte) bool {
	var s string
	if json.Unmarshal(id, &s) != nil {
		return false
	}
	written := 0
	body := id[1 : len(id)-1]
	for i := 0; i < len(body); {
		switch {
		case body[i] == '\\' && body[i+1] == 'u':
			if strings.EqualFold(string(body[i+2:i+6]), "fffd") {
				written++
			}
			i += 6
		case body[i] == '\\':
			i += 2
		case bytes.HasPrefix(body[i:], []byte("\uFFFD")):
			written++
			i += len("\uFFFD")
		default:
			i++
		}
	}
	return strings.Count(s, "\uFFFD") == written
}

// checkID fails unless id is absent or one JSON string, number or null.
func checkID(t *testing.T, body, id []byte) {
	t.Helper()
	if id == nil {
		return
	}
	var v any
	if err := json.Unmarshal(id, &v); err != nil {
		t.Fatalf("id %q is not JSON (%v), from %q", id, err, body)
	}
	switch v.(type) {
	case string, float64, nil:
	default:
		t.Fatalf("id %q is a %T, from %q", id, v, body)
	}
}

// checkResponse fails unless resp is a JSON object whose "jsonrpc" is
// "2.0", whose "result" is an object and whose "id" is id (null if nil).
func checkResponse(t *testing.T, resp, id []byte) {
	t.Helper()
	var m map[string]json.RawMessage
	if err := json.Unmarshal(resp, &m); err != nil {
		t.Fatalf("response %q is not a JSON object: %v", resp, err)
	}
	if string(m["jsonrpc"]) != `"2.0"` {
		t.Fatalf("response %q: jsonrpc is not \"2.0\"", resp)
	}
	if r := m["result"]; len(r) == 0 || r[0] != '{' {
		t.Fatalf("response %q: result is not an object", resp)
	}
	want := id
	if len(want) == 0 {
		want = []byte("null")
	}
	if !bytes.Equal(m["id"], want) {
		t.Fatalf("response %q: id %q, want %q", resp, m["id"], want)
	}
}
